/*
Copyright 2026 The Sandbar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package card_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/card"
)

// The constraints of the extension's schema (schema.ts) that the card meets (the
// registry's server.json schema has the same name pattern).
var (
	namePattern    = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
	cardURLPattern = regexp.MustCompile(`^(https?://[^\s]+|\{[a-zA-Z_][a-zA-Z0-9_]*\}[^\s]*)$`)
)

func newDocs(t *testing.T, cfg card.Config) *card.Documents {
	t.Helper()
	if cfg.Endpoint == "" {
		cfg.Endpoint, cfg.LegacySSE = "/mcp", "/mcp/sse"
		cfg.Versions, cfg.Stateless = []string{"2026-07-28", "2025-11-25", "2025-06-18"}, "2026-07-28"
	}
	d, err := card.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// get asks a handler for a document with a Host header, as a client would, that
// came in at 127.0.0.1:8080.
func get(h http.Handler, method, host string) *httptest.ResponseRecorder {
	return getAt(h, method, host, "127.0.0.1:8080")
}

// getAt is get at a local address of the server's ("" for none known).
func getAt(h http.Handler, method, host, local string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/mcp/server-card", nil)
	r.Host = host
	if local != "" {
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(local))))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestTheCardMeetsTheExtensionsSchema(t *testing.T) {
	g := NewWithT(t)
	d := newDocs(t, card.Config{Version: "1.2.3", Bearer: true, Extensions: []string{"io.modelcontextprotocol/tasks"}, PublicURL: "https://sandbar.example.com",
		OAuth: &card.OAuth{URL: "https://sandbar.example.com/oauth/mcp", MetadataURL: "https://sandbar.example.com/.well-known/oauth-protected-resource/oauth/mcp"}})
	w := get(d.CardHandler(), http.MethodGet, "sandbar.example.com")
	g.Expect(w.Code).To(Equal(http.StatusOK))
	var doc map[string]any
	g.Expect(json.Unmarshal(w.Body.Bytes(), &doc)).To(Succeed())
	g.Expect(doc).To(HaveKeyWithValue("$schema", card.SchemaURL))
	g.Expect(doc["name"]).To(MatchRegexp(namePattern.String()))
	g.Expect(len(card.Description)).To(BeNumerically("<=", 100), "the schema's limit")
	g.Expect(len(card.Title)).To(BeNumerically("<=", 100))
	for _, key := range []string{"tools", "resources", "prompts", "capabilities"} {
		g.Expect(doc).NotTo(HaveKey(key), "a card lists no primitives")
	}
	remotes := doc["remotes"].([]any)
	g.Expect(remotes).To(HaveLen(4))
	for _, r := range remotes {
		r := r.(map[string]any)
		g.Expect(r["type"]).To(BeElementOf("streamable-http", "sse"))
		g.Expect(r["url"]).To(MatchRegexp(cardURLPattern.String()))
		g.Expect(r["url"]).To(HavePrefix("https://sandbar.example.com/"))
	}
	g.Expect(remotes[1]).To(HaveKeyWithValue("supportedProtocolVersions", []any{"2025-11-25", "2025-06-18"}),
		"legacy SSE has sessions: the stateless revision is not served there")
	meta := doc["_meta"].(map[string]any)[card.MetaKey].(map[string]any)
	g.Expect(meta["experimental"]).To(ContainSubstring("experimental"))
	g.Expect(meta["extensions"]).To(Equal(map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}))
}

// The documents never name the Host a request sends (anyone sends one, and a
// shared cache keeps a public document): they name the public URL, and without
// one they are served only at a loopback address, which they name.
func TestTheDocumentsNeverNameTheHostARequestSends(t *testing.T) {
	d := newDocs(t, card.Config{Bearer: true})
	for _, row := range []struct{ host, local, want string }{
		{"evil.example.com", "127.0.0.1:8080", "http://127.0.0.1:8080/mcp"},
		{"localhost:9999", "127.0.0.1:8080", "http://127.0.0.1:8080/mcp"},
		{"evil.example.com", "[::1]:8080", "http://[::1]:8080/mcp"},
		{"sandbar.example.com", "10.0.0.7:8080", ""}, // a pod's address: no public URL to name
		{"sandbar.example.com", "", ""},
	} {
		t.Run(row.host+" at "+row.local, func(t *testing.T) {
			g := NewWithT(t)
			for _, h := range []http.Handler{d.CardHandler(), d.AICatalogHandler(), d.MCPCatalogHandler()} {
				w := getAt(h, http.MethodGet, row.host, row.local)
				g.Expect(w.Body.String()).NotTo(ContainSubstring(strings.Split(row.host, ":")[0]))
				if row.want == "" {
					g.Expect(w.Code).To(Equal(http.StatusNotFound), w.Body.String())
					g.Expect(w.Body.String()).To(ContainSubstring("--mcp-public-url"))
					continue
				}
				g.Expect(w.Code).To(Equal(http.StatusOK))
				g.Expect(w.Body.String()).To(ContainSubstring(row.want))
			}
		})
	}
	// A public URL wins over any Host and any address.
	pub := newDocs(t, card.Config{PublicURL: "https://Sandbar.example.com/"})
	w := getAt(pub.CardHandler(), http.MethodGet, "evil.example.com", "10.0.0.7:8080")
	NewWithT(t).Expect(w.Body.String()).To(And(ContainSubstring(`"https://sandbar.example.com/mcp"`), Not(ContainSubstring("10.0.0.7")), Not(ContainSubstring("evil"))))
}

func TestParsePublicURL(t *testing.T) {
	for _, row := range []struct{ in, want string }{
		{"https://sandbar.example.com", "https://sandbar.example.com"},
		{"https://sandbar.example.com/", "https://sandbar.example.com"},
		{"https://sandbar.example.com:8443", "https://sandbar.example.com:8443"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://sandbar.example.com", "http://sandbar.example.com"},
		{"https://sandbar.example.com/mcp", ""},
		{"https://sandbar.example.com?x=1", ""},
		{"https://sandbar.example.com#x", ""},
		{"https://u:p@sandbar.example.com", ""},
		{"sandbar.example.com", ""},
		{"ftp://sandbar.example.com", ""},
	} {
		got, err := card.ParsePublicURL(row.in)
		if row.want == "" {
			NewWithT(t).Expect(err).To(HaveOccurred(), row.in)
			continue
		}
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), row.in)
		NewWithT(t).Expect(got).To(Equal(row.want))
	}
}

// On the OAuth host /mcp is the OAuth route: the card there names no bearer-token
// endpoint on it. In the no-auth mode the endpoints need no header.
func TestTheCardNamesEachEndpointWithItsAuthentication(t *testing.T) {
	g := NewWithT(t)
	oauthHost := &card.OAuth{URL: "https://mcp-oauth.example.com/mcp", MetadataURL: "https://mcp-oauth.example.com/.well-known/oauth-protected-resource/mcp"}
	d := newDocs(t, card.Config{Bearer: true, OAuth: oauthHost, PublicURL: "https://sandbar.example.com"})
	read := func(d *card.Documents, host string) card.ServerCard {
		var c card.ServerCard
		g.Expect(json.Unmarshal(get(d.CardHandler(), http.MethodGet, host).Body.Bytes(), &c)).To(Succeed())
		return c
	}
	var urls []string
	for _, r := range read(d, "mcp-oauth.example.com").Remotes {
		g.Expect(r.Headers).To(BeEmpty(), "the OAuth route takes no API key")
		urls = append(urls, r.URL)
	}
	g.Expect(urls).To(Equal([]string{"https://mcp-oauth.example.com/mcp", "https://mcp-oauth.example.com/mcp/sse"}))
	g.Expect(read(d, "sandbar.example.com").Remotes).To(HaveLen(4))

	noAuth := read(newDocs(t, card.Config{}), "127.0.0.1:8080")
	g.Expect(noAuth.Remotes).To(HaveLen(2))
	g.Expect(noAuth.Remotes[0].Headers).To(BeEmpty())
	g.Expect(noAuth.Meta[card.MetaKey]).To(HaveKeyWithValue("authentication",
		HaveKeyWithValue("none", []any{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp/sse"})))
}
