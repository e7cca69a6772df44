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

package mcpserver_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/card"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// doc is a response as a client sees it.
type doc struct {
	StatusCode int
	Header     http.Header
}

// fetchDoc asks for a URL as a client would, with headers ("Host" sets the host
// the request names), and answers the response and its body.
func fetchDoc(t *testing.T, method, url string, headers map[string]string) (doc, []byte) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(initializeBody)
	}
	req, err := http.NewRequest(method, url, body)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return doc{StatusCode: resp.StatusCode, Header: resp.Header}, b
}

// readCard fetches a server card without a token and reads it, with what its _meta
// says.
func readCard(t *testing.T, url string) (card.ServerCard, card.Meta, string) {
	t.Helper()
	g := NewWithT(t)
	resp, body := fetchDoc(t, http.MethodGet, url, map[string]string{"Accept": card.MediaType})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal(card.MediaType))
	var c card.ServerCard
	g.Expect(json.Unmarshal(body, &c)).To(Succeed())
	b, err := json.Marshal(c.Meta[card.MetaKey])
	g.Expect(err).NotTo(HaveOccurred())
	var meta card.Meta
	g.Expect(json.Unmarshal(b, &meta)).To(Succeed())
	return c, meta, string(body)
}

// A client that knows only the endpoint reads its card without a token and connects
// where it says, on each revision it names; the card says what server/discover says,
// and lists no tools.
func TestServerCardTellsAClientWhereAndHowToConnect(t *testing.T) {
	g := NewWithT(t)
	c, meta, body := readCard(t, mcpURL+"/server-card")
	g.Expect(c.Schema).To(Equal(card.SchemaURL))
	g.Expect([]string{c.Name, c.Title, c.Version}).To(Equal([]string{"io.github.sandbar-dev/sandbar", "Sandbar", "test"}))
	var raw map[string]any
	g.Expect(json.Unmarshal([]byte(body), &raw)).To(Succeed())
	g.Expect(slices.Sorted(maps.Keys(raw))).To(Equal([]string{"$schema", "_meta", "description", "name", "remotes", "repository", "title", "version"}),
		"no tools, resources, prompts or capabilities")
	g.Expect(body).NotTo(ContainSubstring("sandbar_"), "no tool is named")
	g.Expect(meta.Experimental).To(ContainSubstring("experimental extension"))

	g.Expect(c.Remotes).To(HaveLen(2))
	g.Expect([]string{c.Remotes[0].Type, c.Remotes[0].URL, c.Remotes[1].Type, c.Remotes[1].URL}).
		To(Equal([]string{"streamable-http", mcpURL, "sse", mcpURL + "/sse"}))
	for _, r := range c.Remotes {
		g.Expect(r.Headers).To(HaveLen(1))
		g.Expect(r.Headers[0].Name).To(Equal("Authorization"))
		g.Expect([]bool{r.Headers[0].IsRequired, r.Headers[0].IsSecret}).To(Equal([]bool{true, true}))
	}
	g.Expect(meta.Authentication.Bearer).NotTo(BeNil())
	g.Expect(meta.Authentication.Bearer.Remotes).To(Equal([]string{mcpURL, mcpURL + "/sse"}))
	g.Expect(meta.Authentication.OAuth).To(BeNil(), "no OAuth route without an issuer")

	// What the card says, server/discover says once connected.
	disc := newStatelessRaw(t, mcpURL, token, true).result("server/discover", "", nil)
	var versions []string
	for _, v := range disc["supportedVersions"].([]any) {
		versions = append(versions, v.(string))
	}
	g.Expect(c.Remotes[0].SupportedProtocolVersions).To(Equal(versions))
	g.Expect(versions).To(ContainElements(revision2026, sessionRevision))
	g.Expect(c.Remotes[1].SupportedProtocolVersions).NotTo(ContainElement(revision2026), "legacy SSE has sessions")
	extensions := disc["capabilities"].(map[string]any)["extensions"].(map[string]any)
	g.Expect(slices.Sorted(maps.Keys(meta.Extensions))).To(Equal(slices.Sorted(maps.Keys(extensions))))
	g.Expect(meta.Extensions).To(HaveKey("io.modelcontextprotocol/tasks"))

	// A client that follows the card connects, with a key, on every revision it names.
	stateless, _ := connectAt(t, c.Remotes[0].URL, token, revision2026, nil)
	g.Expect(listTools(t, stateless)).NotTo(BeEmpty())
	g.Expect(listTools(t, connect(t, c.Remotes[0].URL, token, nil))).NotTo(BeEmpty())
	g.Expect(strings.TrimSuffix(c.Remotes[1].URL, "/sse")).To(Equal(mcpURL))
	g.Expect(listTools(t, connectSSE(t, mcpURL, token))).NotTo(BeEmpty())
}

// The card and the catalogs are read with GET or HEAD by anyone (any origin, any
// token or none), revalidated with their ETag, and refuse every other method.
func TestServerCardIsPublicReadOnlyAndCacheable(t *testing.T) {
	base := strings.TrimSuffix(mcpURL, "/mcp")
	for _, path := range []string{"/mcp/server-card", card.AICatalogPath, card.MCPCatalogPath} {
		t.Run(path, func(t *testing.T) {
			g := NewWithT(t)
			url := base + path
			resp, body := fetchDoc(t, http.MethodGet, url, map[string]string{"Origin": "https://elsewhere.example.com", "Authorization": "Bearer nope"})
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "a wrong token is not looked at: %s", body)
			g.Expect(resp.Header.Get("Access-Control-Allow-Origin")).To(Equal("*"))
			g.Expect(resp.Header.Get("Cache-Control")).To(Equal("public, max-age=3600"))
			g.Expect(resp.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"))
			etag := resp.Header.Get("ETag")
			g.Expect(etag).To(HavePrefix(`"`))

			resp, body = fetchDoc(t, http.MethodHead, url, nil)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(body).To(BeEmpty())
			g.Expect(resp.Header.Get("ETag")).To(Equal(etag))

			resp, body = fetchDoc(t, http.MethodGet, url, map[string]string{"If-None-Match": etag})
			g.Expect(resp.StatusCode).To(Equal(http.StatusNotModified))
			g.Expect(body).To(BeEmpty())

			resp, _ = fetchDoc(t, http.MethodOptions, url, map[string]string{"Origin": "https://elsewhere.example.com", "Access-Control-Request-Method": "GET"})
			g.Expect(resp.StatusCode).To(Equal(http.StatusNoContent))
			g.Expect(resp.Header.Get("Access-Control-Allow-Methods")).To(ContainSubstring("GET"))

			for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
				resp, body := fetchDoc(t, method, url, map[string]string{"Authorization": "Bearer " + token,
					"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
				g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed), "%s: %s", method, body)
				g.Expect(resp.Header.Get("Allow")).To(Equal("GET, HEAD, OPTIONS"))
				g.Expect(string(body)).NotTo(ContainSubstring("jsonrpc"), "%s reaches no MCP handler", method)
			}
		})
	}
}

// Both catalogs name one entry, this server's card, which a client then fetches.
func TestServerCatalogsPointToTheCard(t *testing.T) {
	base := strings.TrimSuffix(mcpURL, "/mcp")
	for _, row := range []struct{ path, mediaType, specVersion string }{
		{card.AICatalogPath, "application/ai-catalog+json", "1.0"},
		{card.MCPCatalogPath, "application/json", "draft"},
	} {
		t.Run(row.path, func(t *testing.T) {
			g := NewWithT(t)
			resp, body := fetchDoc(t, http.MethodGet, base+row.path, nil)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(resp.Header.Get("Content-Type")).To(Equal(row.mediaType))
			var cat card.Catalog
			g.Expect(json.Unmarshal(body, &cat)).To(Succeed())
			g.Expect(cat.SpecVersion).To(Equal(row.specVersion))
			g.Expect(cat.Entries).To(Equal([]card.Entry{{Identifier: "urn:air:127.0.0.1:mcp:sandbar", Type: card.MediaType, URL: mcpURL + "/server-card"}}))
			c, _, _ := readCard(t, cat.Entries[0].URL)
			g.Expect(c.Remotes[0].URL).To(Equal(mcpURL))
		})
	}
}

// With a public URL the documents name it whatever host a request names, and no
// address of the pod; without one, the loopback address a request came in at,
// never its Host.
func TestServerCardNamesOnlyThePublicURL(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{PublicURL: "https://sandbar.example.com"})
	base := strings.TrimSuffix(url, "/mcp")
	for _, path := range []string{"/mcp/server-card", card.AICatalogPath, card.MCPCatalogPath} {
		for _, host := range []string{"", "sandbar.sandbar-system.svc:8080", "evil.example.com"} {
			resp, body := fetchDoc(t, http.MethodGet, base+path, map[string]string{"Host": host})
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(string(body)).To(ContainSubstring(`"https://sandbar.example.com/mcp`), "%s for %q", path, host)
			g.Expect(string(body)).NotTo(ContainSubstring("127.0.0.1"), "%s for %q", path, host)
			if host != "" {
				g.Expect(string(body)).NotTo(ContainSubstring(strings.Split(host, ":")[0]))
			}
		}
	}

	for _, host := range []string{"evil.example.com", "evil!.example.com"} {
		resp, body := fetchDoc(t, http.MethodGet, mcpURL+"/server-card", map[string]string{"Host": host})
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		g.Expect(string(body)).To(And(ContainSubstring(`"`+mcpURL+`"`), Not(ContainSubstring("evil"))))
	}

	_, err := startServer(store, mcpserver.Options{PublicURL: "https://sandbar.example.com/mcp"})
	g.Expect(err).To(MatchError(ContainSubstring("--mcp-public-url must be an origin")))
}

// browserAccept is what a browser's navigation sends: no event stream, but */*.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// expectPage checks that a GET on an MCP endpoint is answered with the page that says
// what it is (never the transport's refusal, a 400 or a 406), with its card's path.
func expectPage(t *testing.T, url, cardPath string, headers map[string]string) {
	t.Helper()
	g := NewWithT(t)
	resp, body := fetchDoc(t, http.MethodGet, url, headers)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%v: %s", headers, body)
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("text/html; charset=utf-8"))
	g.Expect(resp.Header.Get("Content-Security-Policy")).To(ContainSubstring("default-src 'none'"))
	g.Expect(string(body)).To(And(ContainSubstring("Model Context Protocol (MCP) endpoint"), ContainSubstring(`href="`+cardPath+`"`)))
}

// A browser's GET on /mcp (an Accept without text/event-stream, with or without a
// token) gets a small page that says what the endpoint is and how to connect, as a
// hosted connector's check of the URL does; a GET that takes an event stream is the
// transport's, as before: 401 without a token, a session's stream with one.
func TestABrowserGETOnTheEndpointGetsAPage(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, unique("browser"), metav1alpha1.Permissions{})
	for _, accept := range []string{browserAccept, "text/html", "application/json", ""} {
		expectPage(t, mcpURL, "/mcp/server-card", map[string]string{"Accept": accept})
		expectPage(t, mcpURL, "/mcp/server-card", map[string]string{"Accept": accept, "Authorization": "Bearer " + tok})
	}
	resp, _ := fetchDoc(t, http.MethodGet, mcpURL, map[string]string{"Accept": "text/event-stream"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	resp, body := fetchDoc(t, http.MethodGet, mcpURL, map[string]string{"Accept": "text/event-stream", "Authorization": "Bearer " + tok})
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
	g.Expect(string(body)).To(ContainSubstring("Mcp-Session-Id"))
	resp, body = fetchDoc(t, http.MethodHead, mcpURL, map[string]string{"Accept": "text/html"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(BeEmpty())
}

// The OAuth route has its card too, which names the route and its Protected
// Resource Metadata beside the bearer-token endpoints.
func TestOAuthRouteCardNamesItsMetadata(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{})
	c, meta, _ := readCard(t, s.oauth+"/server-card")
	expectPage(t, s.oauth, "/oauth/mcp/server-card", map[string]string{"Accept": browserAccept})
	same, _, _ := readCard(t, s.mcp+"/server-card")
	g.Expect(same).To(Equal(c))
	g.Expect(c.Remotes).To(ContainElement(card.Remote{Type: "streamable-http", URL: s.oauth, SupportedProtocolVersions: c.Remotes[0].SupportedProtocolVersions}))
	g.Expect(meta.Authentication.OAuth).NotTo(BeNil())
	g.Expect(meta.Authentication.OAuth.Remotes).To(Equal([]string{s.oauth, s.oauth + "/sse"}))
	g.Expect(meta.Authentication.OAuth.ResourceMetadata).To(Equal(s.base + "/.well-known/oauth-protected-resource/oauth/mcp"))
	status, prm := getJSON(t, meta.Authentication.OAuth.ResourceMetadata)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(prm["resource"]).To(Equal(s.oauth))
}

// On the OAuth host, where /mcp is the OAuth route, the card names that route alone;
// other hosts get the bearer-token endpoints beside it.
func TestOAuthHostCardNamesOnlyTheOAuthRoute(t *testing.T) {
	g := NewWithT(t)
	const host = "mcp-oauth.sandbar.test"
	s := newOAuthServer(t, oauth.Config{Host: host, ResourceURL: "https://" + host + "/mcp"})
	resp, body := fetchDoc(t, http.MethodGet, s.mcp+"/server-card", map[string]string{"Host": host})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var c card.ServerCard
	g.Expect(json.Unmarshal(body, &c)).To(Succeed())
	var urls []string
	for _, r := range c.Remotes {
		g.Expect(r.Headers).To(BeEmpty(), "no API key on the OAuth route")
		urls = append(urls, r.URL)
	}
	g.Expect(urls).To(Equal([]string{"https://" + host + "/mcp", "https://" + host + "/mcp/sse"}))
	other, _, _ := readCard(t, s.mcp+"/server-card")
	g.Expect(other.Remotes).To(HaveLen(4))
	g.Expect(other.Remotes[0].URL).To(Equal(s.mcp))
}
