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

package ahead

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release whose
// decoder allocates no buffer per message would remove the ping and tasks/get here, and
// the SDK's tools/list kept (below) the rest (no go-sdk issue yet).

// requestHeader carries, from Direct to Middleware, the digest of a tools/list of the
// stateless revision (requestDigest). Direct sets it on the request it hands on and
// drops any the client sent.
const requestHeader = "Sandbar-Tools-List-Request"

// DirectOptions are what Direct needs of the server.
type DirectOptions struct {
	// Around is what must still see every request (telemetry: its span, metrics,
	// request log and audit); it must not change a tools/list answer.
	Around mcp.Middleware
	// Limit is the body limit of the handler behind Direct.
	Limit int64
	// Session finds a live session of the session-based revisions by its id, and the
	// account it acts for now (nil when it is locked out or not known yet).
	Session func(id string) (*mcp.ServerSession, *catalog.Account)
	// SessionTimeout is the time after which the handler behind closes a session
	// that has had no request (0: never).
	SessionTimeout time.Duration
	// Methods are the other methods of a session that Direct answers under the same
	// conditions as its tools/list (ping, tasks/get), by name.
	Methods map[string]Method
	// Receiving is the server's receiving middleware, the first the outermost, as
	// it was added to the SDK's server: what a request of Methods goes through.
	Receiving []mcp.Middleware
}

// Method is a method that Direct answers without the SDK's transport.
type Method struct {
	// Request is the request the SDK would hand its receiving middleware for the
	// params (nil or the "params" of the message): nil when it does not make one,
	// and the SDK is left to answer.
	Request func(ss *mcp.ServerSession, params json.RawMessage, extra *mcp.RequestExtra) mcp.Request
	// Serve is the server's own handler of the method, which the SDK calls behind
	// the receiving middleware.
	Serve mcp.MethodHandler
}

// Direct answers a tools/list without the SDK when the answer it would send is kept
// already, and its checks of the request are known to pass:
//
//   - a request of the stateless revision (2026-07-28) that the SDK answered before:
//     the same params, revision, host and Mcp-* headers, from an account of the same
//     permissions (accountKey), while the served tools are the same. The answer is
//     the result the SDK sent then. The SDK would have made a session for the
//     request, run every middleware and encoded the megabyte or two of a large list
//     twice, to send the same.
//   - a request of a live, initialized session of the session-based revisions, from
//     the account the session acts for (a key's, not an OAuth user's), whose answer
//     the cache holds for that account's permissions, revision and page. So that
//     the session's idle timer (which only requests the SDK serves reset) never
//     ends a session in use, only a session the SDK served a request of within half
//     the timeout is answered so; the next list goes to the SDK.
//   - a request of o.Methods from such a session, as the same conditions allow: it
//     goes through o.Receiving, the server's whole receiving middleware, to the
//     server's own handler, as the SDK would have it go. What is left out is the SDK's transport:
//     its decoding the message again and again (each time with a buffer of 32 KiB),
//     the goroutine it serves a request on, the stream it answers on.
//
// The answer is the JSON-RPC response, with the request's id, as one JSON body. The
// middleware in o.Around see each list answered so. Every other request goes to
// next as it came.
//
// Install it in front of the Streamable HTTP handlers (of every revision: it drops
// the header by which it tells Middleware what to keep, wherever a client sent it),
// and Strip in front of every other transport.
func (c *ListCache) Direct(next http.Handler, o DirectOptions) http.Handler {
	serve := o.Around(func(_ context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		return req.(*directRequest).answer, nil
	})
	calls := make(map[string]call, len(o.Methods))
	for method, c := range o.Methods {
		h := c.Serve
		for _, m := range slices.Backward(o.Receiving) {
			h = m(h)
		}
		calls[method] = call{request: c.Request, serve: h}
	}
	window := o.SessionTimeout / 2
	if window <= 0 {
		window = 15 * time.Minute
	}
	served := &servedSessions{window: window, last: map[string]time.Time{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestHeader)
		if transport.IsStateless(r) {
			c.stateless(w, r, next, serve, o.Limit)
			return
		}
		id := r.Header.Get(sessionHeader)
		if id == "" || o.Session == nil {
			next.ServeHTTP(w, r)
			return
		}
		switch r.Method {
		case http.MethodPost:
			if c.session(w, r, id, served, serve, calls, o) {
				return
			}
			rec := &transport.Recorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if rec.Code == http.StatusOK || rec.Code == http.StatusAccepted {
				served.touch(id)
			}
		case http.MethodDelete:
			served.forget(id)
			next.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

const sessionHeader = "Mcp-Session-Id"

// stateless answers a request of the stateless revision, or hands it to next and
// has the cache keep what the SDK sends for it.
func (c *ListCache) stateless(w http.ResponseWriter, r *http.Request, next http.Handler, serve mcp.MethodHandler, limit int64) {
	r, msg := transport.Peek(r, limit)
	if msg == nil || msg.JSONRPC != "2.0" || msg.Method != "tools/list" || !plainID(msg.ID) || !wellFormed(r) {
		next.ServeHTTP(w, r)
		return
	}
	params := msg.RawParams
	info := auth.TokenInfoFromContext(r.Context())
	digest := requestDigest(r, params, caller.Of(&mcp.RequestExtra{TokenInfo: info}))
	body := c.lookup(&key{request: digest})
	if body == nil {
		r.Header.Set(requestHeader, hex.EncodeToString(digest[:]))
		next.ServeHTTP(w, r)
		return
	}
	p := &mcp.ListToolsParams{}
	if len(params) > 0 {
		// The SDK decoded the same bytes before and served them.
		_ = transport.Unmarshal(params, p)
	}
	if !answer(w, r, msg.ID, body, p, nil, info, serve) {
		next.ServeHTTP(w, r)
	}
}

// session answers a tools/list or a request of calls of a session of the
// session-based revisions, if it may (see Direct): true when it did.
func (c *ListCache) session(w http.ResponseWriter, r *http.Request, id string, served *servedSessions, serve mcp.MethodHandler,
	calls map[string]call, o DirectOptions) bool {
	r, msg := transport.Peek(r, o.Limit)
	if msg == nil || msg.JSONRPC != "2.0" || !plainID(msg.ID) {
		return false
	}
	cl, isCall := calls[msg.Method]
	if (!isCall && msg.Method != "tools/list") || !wellFormed(r) || !served.recent(id) {
		return false
	}
	info := auth.TokenInfoFromContext(r.Context())
	who := caller.Of(&mcp.RequestExtra{TokenInfo: info})
	if who == nil || who.User != "" {
		return false
	}
	ss, acct := o.Session(id)
	if ss == nil || acct == nil || acct.Namespace != who.Namespace || acct.Name != who.Name {
		return false
	}
	init := ss.InitializeParams()
	if init == nil || init.ProtocolVersion >= transport.Stateless {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v != init.ProtocolVersion {
		return false
	}
	if isCall {
		return cl.answer(w, r, msg, ss, info)
	}
	p := &mcp.ListToolsParams{}
	if params := msg.RawParams; len(params) > 0 {
		if transport.Unmarshal(params, p) != nil {
			return false
		}
	}
	if _, ok := p.Meta[mcp.MetaKeyProtocolVersion]; ok {
		return false // a request of the stateless revision's form: the SDK's to refuse
	}
	body := c.lookup(&key{account: accountKey(who), revision: init.ProtocolVersion, cursor: p.Cursor, client: c.clientKey(init.ClientInfo)})
	return body != nil && answer(w, r, msg.ID, body, p, ss, info, serve)
}

// lookup is the answer kept under k (whose generation it sets to the cache's), nil
// without one.
func (c *ListCache) lookup(k *key) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	k.generation = c.generation
	el, ok := c.entries[*k]
	if !ok || k.generation%2 != 0 {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry).body
}

// answer has the middleware see the request, and writes the response with body as
// its result: false, having written nothing, if the middleware failed it.
func answer(w http.ResponseWriter, r *http.Request, id json.RawMessage, body []byte, p *mcp.ListToolsParams,
	ss *mcp.ServerSession, info *auth.TokenInfo, serve mcp.MethodHandler) bool {
	req := &directRequest{answer: &ListAnswer{body: body}}
	req.Session, req.Params = ss, p
	req.Extra = &mcp.RequestExtra{TokenInfo: info, Header: r.Header}
	if _, err := serve(r.Context(), "tools/list", req); err != nil {
		return false
	}
	respond(w, id, `,"result":`, body)
	return true
}

// respond writes the JSON-RPC response of id, its member (`,"result":` or
// `,"error":`) body, as one JSON body. The body is not copied: it is written from
// where it is kept.
func respond(w http.ResponseWriter, id json.RawMessage, member string, body []byte) {
	head := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), member...)
	const tail = "}\n"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(body)+len(tail)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head); err == nil {
		if _, err := w.Write(body); err == nil {
			_, _ = w.Write([]byte(tail))
		}
	}
}

// call is a Method with its handler behind the receiving middleware.
type call struct {
	request func(ss *mcp.ServerSession, params json.RawMessage, extra *mcp.RequestExtra) mcp.Request
	serve   mcp.MethodHandler
}

// answer answers a request of the call: false, having written nothing, when its
// params are not what the method takes plainly.
func (cl call) answer(w http.ResponseWriter, r *http.Request, msg *transport.Message, ss *mcp.ServerSession, info *auth.TokenInfo) bool {
	params := msg.RawParams
	if len(params) > 0 && params[0] != '{' {
		return false // null, or not an object: the SDK's to answer or refuse
	}
	extra := &mcp.RequestExtra{TokenInfo: info, Header: r.Header}
	req := cl.request(ss, params, extra)
	if req == nil {
		return false
	}
	if len(params) > 0 {
		if _, ok := req.GetParams().GetMeta()[mcp.MetaKeyProtocolVersion]; ok {
			return false // a request of the stateless revision's form: the SDK's to refuse
		}
	}
	res, err := cl.serve(r.Context(), msg.Method, req)
	member, body := `,"result":`, []byte(nil)
	if err == nil {
		body, err = json.Marshal(res)
	}
	if err != nil {
		// As the SDK sends an error (its jsonrpc2.toWireError): the code of the
		// JSON-RPC error it wraps, if any, with the message of the whole.
		wire, ok := err.(*jsonrpc.Error)
		if !ok {
			wire = &jsonrpc.Error{Message: err.Error()}
			if wrapped, ok := errors.AsType[*jsonrpc.Error](err); ok {
				wire.Code = wrapped.Code
			}
		}
		member = `,"error":`
		body, _ = json.Marshal(wire)
	}
	respond(w, msg.ID, member, body)
	return true
}

// servedSessions remembers when the SDK last served a request of each session, for
// as long as that says anything (window).
type servedSessions struct {
	window time.Duration
	mu     sync.Mutex
	last   map[string]time.Time
	// pruneAt is the size at which old entries are dropped next.
	pruneAt int
}

func (s *servedSessions) touch(id string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[id] = now
	if len(s.last) < s.pruneAt {
		return
	}
	for k, t := range s.last {
		if now.Sub(t) >= s.window {
			delete(s.last, k)
		}
	}
	s.pruneAt = max(2*len(s.last), 64)
}

func (s *servedSessions) recent(id string) bool {
	s.mu.Lock()
	t, ok := s.last[id]
	s.mu.Unlock()
	return ok && time.Since(t) < s.window
}

func (s *servedSessions) forget(id string) {
	s.mu.Lock()
	delete(s.last, id)
	s.mu.Unlock()
}

// Strip drops the header by which Direct tells Middleware what to keep: install it
// in front of a transport without Direct.
func Strip(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestHeader)
		next.ServeHTTP(w, r)
	})
}

// directRequest is a tools/list answered by Direct, as the middleware around it see it.
type directRequest struct {
	mcp.ListToolsRequest
	answer *ListAnswer
}

// keepDirect is, for a stateless request that Direct saw, the function that keeps the
// result the SDK sends for it under the request's digest; nil for any other request.
func (c *ListCache) keepDirect(k key, req mcp.Request) func([]byte) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil || !transport.StatelessRequest(req) {
		return nil
	}
	digest, err := hex.DecodeString(extra.Header.Get(requestHeader))
	if err != nil || len(digest) != sha256.Size {
		return nil
	}
	dk := key{generation: k.generation, request: [sha256.Size]byte(digest)}
	return func(result []byte) { c.put(dk, result) }
}

// requestDigest is everything of a stateless tools/list that its answer, or the SDK's
// checks of it, read: its params, the revision, the host, the Mcp-* headers, and the
// account (accountKey).
func requestDigest(r *http.Request, params json.RawMessage, acct *catalog.Account) [sha256.Size]byte {
	h := sha256.New()
	write := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	k := accountKey(acct)
	h.Write(k[:])
	write(r.Host)
	names := make([]string, 0, 4)
	for name := range r.Header {
		if strings.HasPrefix(name, "Mcp-") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		write(name)
		for _, v := range r.Header[name] {
			write(v)
		}
	}
	h.Write(params)
	return [sha256.Size]byte(h.Sum(nil))
}

// plainID is an id whose JSON the SDK sends back as the client sent it: an integer of
// digits, or a string without escapes.
func plainID(id json.RawMessage) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	if id[0] == '"' {
		return len(id) >= 2 && id[len(id)-1] == '"' && !bytes.ContainsAny(id[1:len(id)-1], "\"\\") && !hasControl(id)
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// wellFormed is a POST the SDK's stateless handler takes: JSON in, and an Accept
// header that names both JSON and a stream.
func wellFormed(r *http.Request) bool {
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		return false
	}
	a := transport.AcceptOf(r.Header)
	return a.JSON && a.EventStream
}
