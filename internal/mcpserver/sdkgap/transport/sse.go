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

// Package transport serves MCP the ways go-sdk v1.8.0's HTTP handlers do not: the
// legacy HTTP+SSE transport of revision 2024-11-05 with the caller's token on every
// message (SSE), plain JSON answers to clients that do not accept a stream
// (PlainJSON), the routing of the stateless revision to a handler of its own
// (ByRevision), an event store bounded in streams as well as bytes (EventStore), a
// quick answer sent in one write (Coalesce); and the reading of a POSTed message
// ahead of the SDK (Peek), for what the SDK does not hand its middleware. The
// register of the room (package sdkgap) says which SDK behaviour each stands in
// for, and which test fails once the SDK catches up.
package transport

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release whose
// SSEHandler hands each POST its token and headers and binds a session to its user
// would remove this file (no go-sdk issue yet).

// KeepAlive is how often an idle legacy stream carries an SSE comment, so that
// proxies that close quiet connections keep it open.
const KeepAlive = 25 * time.Second

// SSE serves the HTTP+SSE transport of revision 2024-11-05 on one path: a GET opens
// a session's stream, whose first event names the message endpoint (the same path
// with ?sessionid=), and the client POSTs its messages there; the answers come on
// the stream.
//
// Unlike the SDK's SSEHandler, every message carries the token info and headers of
// the POST that brought it (as on Streamable HTTP), so the server's middleware sees
// the caller of each request; a session answers only the user that opened it
// (TokenInfo.UserID): another's token gets 403; and an idle session ends, as the
// Streamable HTTP handler's do.
type SSE struct {
	server  *mcp.Server
	maxBody int64
	idle    time.Duration

	mu       sync.Mutex
	sessions map[string]*sseSession
}

// NewSSE serves server over HTTP+SSE. A message longer than maxBody bytes gets 413
// (0: the SDK's default). A session that gets no message for idle, and has no request
// of its client unanswered meanwhile, ends with its stream (0: never), as
// StreamableHTTPOptions.SessionTimeout ends a Streamable HTTP session: the stream's
// keep-alive comments and what the server sends on its own do not keep it.
func NewSSE(server *mcp.Server, maxBody int64, idle time.Duration) *SSE {
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	return &SSE{server: server, maxBody: maxBody, idle: idle, sessions: map[string]*sseSession{}}
}

func (h *SSE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DNS rebinding, as the SDK's handlers refuse it: on a loopback listener only
	// loopback host names.
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil && loopback(local.String()) && !loopback(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.stream(w, r)
	case http.MethodPost:
		h.message(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// loopback reports whether a host (with or without a port) is a loopback name.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// userOf is the user a request authenticated as ("" without token info).
func userOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// stream opens a session and serves its stream until the client goes or the
// session closes.
func (h *SSE) stream(w http.ResponseWriter, r *http.Request) {
	if _, ok := w.(http.Flusher); !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	id := rand.Text()
	endpoint := (&url.URL{Path: r.URL.Path, RawQuery: url.Values{"sessionid": {id}}.Encode()}).RequestURI()
	s := &sseSession{user: userOf(r), w: w, endpoint: endpoint,
		incoming: make(chan jsonrpc.Message, 100), done: make(chan struct{}), active: make(chan struct{}, 1)}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Connection", "keep-alive")
	// Proxies that buffer answers (nginx) would hold the stream back.
	w.Header().Set("X-Accel-Buffering", "no")

	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
	}()
	ss, err := h.server.Connect(r.Context(), s, nil)
	if err != nil {
		http.Error(w, "connection failed", http.StatusInternalServerError)
		return
	}
	defer func() { _ = ss.Close() }()
	// Before the handler returns: nothing writes to w after.
	defer func() { _ = s.Close() }()
	tick := time.NewTicker(KeepAlive)
	defer tick.Stop()
	var idle <-chan time.Time
	var timer *time.Timer
	if h.idle > 0 {
		timer = time.NewTimer(h.idle)
		defer timer.Stop()
		idle = timer.C
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick.C:
			if s.write([]byte(": keep-alive\n\n")) != nil {
				return
			}
		case <-s.active:
			if timer != nil {
				timer.Reset(h.idle)
			}
		case <-idle:
			if s.pending.Load() <= 0 {
				return
			}
			timer.Reset(h.idle)
		}
	}
}

// message hands a POSTed message to its session, with the POST's token info and
// headers.
func (h *SSE) message(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	id := r.URL.Query().Get("sessionid")
	if id == "" {
		http.Error(w, "sessionid must be provided: open the stream with a GET first; its endpoint event names the URL to post to", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found: open a new stream with a GET", http.StatusNotFound)
		return
	}
	if userOf(r) != s.user {
		http.Error(w, "session user mismatch: this session belongs to another account", http.StatusForbidden)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		http.Error(w, "failed to parse body: not a JSON-RPC message", http.StatusBadRequest)
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if ok {
		req.Extra = &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	}
	// A request is pending from before the session can answer it.
	var pending int64
	if ok && req.IsCall() {
		pending = 1
	}
	s.pending.Add(pending)
	select {
	case s.incoming <- msg:
		s.touch()
		w.WriteHeader(http.StatusAccepted)
	case <-s.done:
		s.pending.Add(-pending)
		http.Error(w, "session closed", http.StatusNotFound)
	case <-r.Context().Done():
		s.pending.Add(-pending)
	}
}

// sseSession is one stream: the transport and the connection the SDK server
// reads and writes.
type sseSession struct {
	user     string
	endpoint string
	incoming chan jsonrpc.Message
	// active tells the stream of a message either way, which keeps the session from
	// its idle end; pending counts the client's requests not answered yet.
	active  chan struct{}
	pending atomic.Int64

	mu     sync.Mutex // guards w and closed
	w      http.ResponseWriter
	closed bool
	done   chan struct{}
}

// Connect starts the stream with the endpoint event.
func (s *sseSession) Connect(context.Context) (mcp.Connection, error) {
	if err := s.write([]byte("event: endpoint\ndata: " + s.endpoint + "\n\n")); err != nil {
		return nil, err
	}
	return s, nil
}

// SupportsProtocolVersion: the stream serves the session-based revisions.
func (s *sseSession) SupportsProtocolVersion(version string) bool { return version < Stateless }

func (s *sseSession) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg := <-s.incoming:
		return msg, nil
	case <-s.done:
		return nil, io.EOF
	}
}

func (s *sseSession) Write(ctx context.Context, msg jsonrpc.Message) error {
	if _, ok := msg.(*jsonrpc.Response); ok {
		s.pending.Add(-1)
		s.touch()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return s.write(append(append([]byte("event: message\ndata: "), data...), "\n\n"...))
}

// touch tells the stream of activity.
func (s *sseSession) touch() {
	select {
	case s.active <- struct{}{}:
	default:
	}
}

func (s *sseSession) write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return io.EOF
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return http.NewResponseController(s.w).Flush()
}

func (s *sseSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	return nil
}

// SessionID is empty: the session id of this transport is a query parameter, not
// the Streamable HTTP header.
func (s *sseSession) SessionID() string { return "" }
