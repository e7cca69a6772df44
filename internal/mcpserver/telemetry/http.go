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

package telemetry

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): go-sdk#1264 (the request id
// for middleware) would remove the internal header that carries the id here.

// What only the HTTP request holds reaches the receiving middleware in headers the
// server sets (a client's own are dropped): the client's address and the JSON-RPC
// id of a POST, which the SDK does not hand to middleware.
const (
	clientHeader  = "Sandbar-Client-Address"
	requestHeader = "Sandbar-Request-Id"
)

// Capture copies the client's address and the JSON-RPC id of a request into headers
// for the receiving middleware. limit is the body limit of the handler behind it.
// With telemetry off it is next itself.
func (t *Telemetry) Capture(next http.Handler, limit int64) http.Handler {
	if !t.on() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestHeader)
		r.Header.Set(clientHeader, r.RemoteAddr)
		r, msg := transport.Peek(r, limit)
		if msg != nil && len(msg.ID) > 0 && string(msg.ID) != "null" {
			id := string(msg.ID)
			if msg.ID[0] == '"' {
				var s string
				if json.Unmarshal(msg.ID, &s) == nil {
					id = s
				}
			}
			if len(id) <= 128 {
				r.Header.Set(requestHeader, id)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Authentication wraps an authentication middleware: a request it refuses (401, 403
// for an OAuth token without a required scope, or 429 once the client's failed
// attempts or the account's rate are spent) is an audit event with the client's
// address. Nothing of the presented token is in it.
func (t *Telemetry) Authentication(authn func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	if t == nil || t.audit == nil {
		return authn
	}
	return func(next http.Handler) http.Handler {
		// The authentication hands the request on with the writer it was given (the
		// recorder), which notes that it passed.
		inner := authn(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rec, ok := w.(*statusRecorder); ok {
				rec.passed = true
				w = rec.ResponseWriter
			}
			next.ServeHTTP(w, r)
		}))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusRecorder{Recorder: transport.Recorder{ResponseWriter: w}}
			inner.ServeHTTP(rec, r)
			if rec.passed {
				return
			}
			var reason string
			switch code := rec.Status(); {
			case code == http.StatusUnauthorized && r.Header.Get("Authorization") == "":
				reason = "no bearer token"
			case code == http.StatusUnauthorized:
				reason = "invalid bearer token"
			case code == http.StatusForbidden:
				reason = "access token lacks a required scope"
			case code == http.StatusTooManyRequests:
				reason = "too many requests"
			default:
				return
			}
			t.audit.write(&Event{Outcome: Denied, Reason: reason, Method: "http " + r.Method, Client: r.RemoteAddr})
		})
	}
}

// Refused audits a request refused at the HTTP layer after its authentication (a
// limit of what an account may hold open, which the SDK never sees): the account and
// the user it acts as (from the request's token info), the client's address, the
// MCP method (or "http GET"), and what the client was told. Nothing without an
// audit stream.
func (t *Telemetry) Refused(r *http.Request, method, reason string) {
	if t == nil || t.audit == nil {
		return
	}
	acct := caller.Of(&mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context())})
	e := &Event{Outcome: Denied, Reason: reason, Method: method, User: identity.User(acct), Client: r.RemoteAddr}
	if acct != nil {
		e.Account = &Ref{Namespace: acct.Namespace, Name: acct.Name}
	}
	t.audit.write(e)
}

// Approval audits what came of a call a policy held for approval (method
// "approval"): allowed when it ran once approved, error when it ran and failed,
// denied when a person denied it or it expired or was withdrawn; with the people
// who decided. Nothing without an audit stream.
func (t *Telemetry) Approval(account Ref, user, toolName string, approval Ref, outcome, reason string, by []string) {
	if t == nil || t.audit == nil {
		return
	}
	t.audit.write(&Event{Outcome: outcome, Reason: redact.String(reason), Method: "approval", Tool: toolName, User: user,
		Account: &account, Approval: &approval, DecidedBy: by})
}

// statusRecorder notes the status of the authentication's answer, and whether it
// let the request through.
type statusRecorder struct {
	transport.Recorder
	// passed is set when the authentication let the request through.
	passed bool
}
