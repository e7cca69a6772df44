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
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// get asks a handler for a document with a Host header, as a client would.
func get(h http.Handler, method, host string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/mcp/server-card", nil)
	r.Host = host
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestTheCardMeetsTheExtensionsSchema(t *testing.T) {
	g := NewWithT(t)
	d := newDocs(t, card.Config{Version: "1.2.3", Bearer: true, Extensions: []string{"io.modelcontextprotocol/tasks"},
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

// Without a public URL the documents name the host a request names, and only a
// host: anything else a Host header could carry is refused.
func TestTheDocumentsNameOnlyAHost(t *testing.T) {
	d := newDocs(t, card.Config{Bearer: true})
	for _, row := range []struct{ host, want string }{
		{"sandbar.example.com", "https://sandbar.example.com/mcp"},
		{"Sandbar.Example.com:8443", "https://sandbar.example.com:8443/mcp"},
		{"127.0.0.1:8080", "http://127.0.0.1:8080/mcp"},
		{"localhost:8080", "http://localhost:8080/mcp"},
		{"[::1]:8080", "http://[::1]:8080/mcp"},
		{"evil.example.com/x", ""},
		{"user@evil.example.com", ""},
		{"evil!.example.com", ""},
		{"evil.example.com:80x", ""},
		{"evil.example.com:", ""},
		{"", ""},
		{strings.Repeat("a", 300), ""},
	} {
		t.Run(row.host, func(t *testing.T) {
			g := NewWithT(t)
			w := get(d.CardHandler(), http.MethodGet, row.host)
			if row.want == "" {
				g.Expect(w.Code).To(Equal(http.StatusBadRequest), w.Body.String())
				return
			}
			g.Expect(w.Code).To(Equal(http.StatusOK))
			var c card.ServerCard
			g.Expect(json.Unmarshal(w.Body.Bytes(), &c)).To(Succeed())
			g.Expect(c.Remotes[0].URL).To(Equal(row.want))
		})
	}
	// A public URL wins over any Host.
	pub := newDocs(t, card.Config{PublicURL: "https://Sandbar.example.com/"})
	w := get(pub.CardHandler(), http.MethodGet, "10.0.0.7:8080")
	NewWithT(t).Expect(w.Body.String()).To(And(ContainSubstring(`"https://sandbar.example.com/mcp"`), Not(ContainSubstring("10.0.0.7"))))
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
	d := newDocs(t, card.Config{Bearer: true, OAuth: oauthHost})
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
