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

package authserver

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTheConsentPageNamesWhoAndWhatAndCannotBeFramedOrScripted(t *testing.T) {
	w := httptest.NewRecorder()
	ServeConsent(w, Consent{
		Who:         "client.example",
		ClientName:  `<script>alert(1)</script>Evil "Client"`,
		ClientID:    "https://client.example/meta.json",
		RedirectURI: "https://claude.ai/api/mcp/auth_callback",
		Resource:    "https://sandbar.example.com/oauth/mcp",
		User:        "oidc:alice", Groups: []string{"oidc:dev", "oidc:ops"},
		Action: "/oauth/consent", Request: "sealed-request", Token: "form-token",
	})
	body := w.Body.String()
	if strings.Contains(body, "<script>") {
		t.Error("the client's name is not escaped")
	}
	for _, want := range []string{"oidc:alice", "oidc:dev", "https://sandbar.example.com/oauth/mcp", "https://client.example/meta.json",
		`value="sealed-request"`, `value="form-token"`, `value="allow"`, `value="deny"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	h := w.Header()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self' https://claude.ai;", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers = %v", h)
	}
	// The style the page holds is the one its CSP allows by hash: a browser applies it.
	start, end := strings.Index(body, "<style>"), strings.Index(body, "</style>")
	if start < 0 || end < start {
		t.Fatal("no style")
	}
	sum := sha256.Sum256([]byte(body[start+len("<style>") : end]))
	if hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, "style-src "+hash) {
		t.Errorf("the page's style hashes to %s, which its CSP (%s) does not allow", hash, csp)
	}
}

// The page leads with what the server verified of the client, never with the
// name a client gives itself (anyone can publish a document, or register, as
// "Claude"), unless an admin trusts the client; that name comes second, marked
// as the client's own words.
func TestTheConsentPageLeadsWithWhatTheServerVerified(t *testing.T) {
	for _, tc := range []struct {
		name, clientID, redirect string
		trusted                  bool
		headline                 string
	}{
		{"a document anyone publishes", "https://evil.example/claude.json", "https://evil.example/cb", false, "evil.example"},
		{"a document that returns to a loopback address", "https://claude.ai/oauth/claude-code-client-metadata", "http://127.0.0.1:33418/callback", false, "a program on your computer"},
		{"a scheme of the client's own", "https://cursor.com/client.json", "cursor://anysphere.cursor-mcp/oauth/cb", false, "a program on your computer"},
		{"a registration", clientPrefix + "0123456789abcdef0123456789abcdef", "https://Evil.example/cb", false, "the site evil.example"},
		{"a client an admin trusts", "https://claude.ai/oauth/mcp-oauth-client-metadata", "https://claude.ai/api/mcp/auth_callback", true, "Claude (claude.ai)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			ServeConsent(w, Consent{Who: WhoOf(tc.clientID, tc.redirect), ClientName: "Claude", Trusted: tc.trusted,
				ClientID: tc.clientID, RedirectURI: tc.redirect, Action: "/oauth2/consent"})
			body := w.Body.String()
			title := body[strings.Index(body, "<title>")+len("<title>") : strings.Index(body, "</title>")]
			h1 := body[strings.Index(body, "<h1>"):strings.Index(body, "</h1>")]
			if title != "Allow "+tc.headline+" to use Sandbar?" || !strings.Contains(h1, "<strong>"+tc.headline+"</strong>") {
				t.Errorf("title %q, headline %q: want %q", title, h1, tc.headline)
			}
			if !tc.trusted && !strings.Contains(body, "It calls itself <q>Claude</q>: <em>the client's own words</em>") {
				t.Errorf("the client's name is not shown as its own words: %s", body)
			}
		})
	}
}

func TestFormTarget(t *testing.T) {
	for uri, want := range map[string]string{
		"https://claude.ai/api/mcp/auth_callback": "https://claude.ai",
		"http://127.0.0.1:33418/callback":         "http://127.0.0.1:33418",
		"http://[::1]:8080/cb":                    "http://[::1]:8080",
		"cursor://anysphere.cursor-mcp/oauth/cb":  "cursor:",
		"https://evil.example;script-src/cb":      "",
		"::not a uri":                             "",
	} {
		if got := formTarget(uri); got != want {
			t.Errorf("formTarget(%q) = %q, want %q", uri, got, want)
		}
	}
}
