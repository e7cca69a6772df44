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
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release with one
// handler that serves the stateless revision and the session-based ones would remove
// this file (no go-sdk issue yet).

// Stateless is the first protocol revision without sessions (2026-07-28): no
// initialize, the revision and the client's capabilities in every request's _meta,
// server/discover, subscriptions/listen for what the server sends on its own.
const Stateless = "2026-07-28"

// ByRevision sends the requests of the stateless revisions (and later) to stateless,
// and every other request to sessions: a request of revision 2026-07-28 or later by
// its MCP-Protocol-Version header, and a server/discover (its Mcp-Method header),
// which a client sends before it knows the revision. Requests of the session-based
// revisions (2024-11-05 to 2025-11-25) carry an older header, or none before the
// session is initialized.
//
// Revision dates compare as strings. A revision this server does not speak goes to
// stateless too, which answers it with the revisions it does.
func ByRevision(sessions, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsStateless(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// IsStateless says whether r speaks a stateless revision (see ByRevision).
func IsStateless(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= Stateless || r.Header.Get("Mcp-Method") == "server/discover"
}

// StatelessRequest says whether req speaks a stateless revision: by its _meta (every
// request of those revisions carries its revision there), else by its session's.
func StatelessRequest(req mcp.Request) bool {
	if r, ok := req.(interface{ ProtocolVersion() string }); ok {
		return r.ProtocolVersion() >= Stateless
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		return StatelessSession(ss)
	}
	return false
}

// StatelessSession says whether ss is the session of a request of a stateless
// revision: a session of its own, which ends with the request. (Its id does not
// say: a legacy SSE session has none either.)
func StatelessSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= Stateless
}
