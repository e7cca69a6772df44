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

package transport

import (
	"html"
	"net/http"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): go-sdk v1.8.0 answers
// such a GET 400; a go-sdk release that serves a page there removes this.

// Page answers a GET (or HEAD) on an MCP endpoint whose Accept names no event stream
// (a browser, or a connector's check that the URL is there: no MCP client opens a
// stream without it) with a small page that says what the endpoint is and how to
// connect, before any authentication: it names nothing of the server but the path of
// its card (the request's path and cardSuffix). Every other request goes to next, a
// GET that takes an event stream included (a session's stream).
func Page(cardSuffix string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method != http.MethodGet && r.Method != http.MethodHead) || AcceptOf(r.Header).Stream() {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		h.Set("Vary", "Accept")
		if r.Method == http.MethodHead {
			return
		}
		c := html.EscapeString(r.URL.Path + cardSuffix)
		_, _ = w.Write([]byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandbar MCP server</title></head>
<body>
<h1>Sandbar MCP server</h1>
<p>This address is a Model Context Protocol (MCP) endpoint, for AI clients rather than browsers.
To use it, add this address to an MCP client (Claude Code, claude.ai and Claude Desktop connectors,
VS Code, Cursor, Codex, MCP Inspector) as a Streamable HTTP server. The client signs in with a
bearer token (an API key the server's operator issues), or with OAuth where the server offers it.</p>
<p>What the server offers, before a client connects: its server card, at <a href="` + c + `">` + c + `</a>.</p>
</body></html>
`))
	})
}
