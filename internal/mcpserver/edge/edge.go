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

// Package edge is the MCP server's HTTP edge: the mux, the middleware chain every
// MCP transport goes through (metrics, cross-origin protection, authentication),
// built once, the health endpoints, and serving with timeouts and a graceful
// shutdown. A second transport is one more Handle.
package edge

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Options configure the edge.
type Options struct {
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to call; other
	// cross-origin browser requests get 403.
	AllowedOrigins []string
	// Authenticate answers requests without a valid token itself (401) and passes
	// the others on with their account.
	Authenticate func(http.Handler) http.Handler
	// Ready reports whether the server can serve; /readyz fails until it can.
	Ready func() bool
}

// Edge is the mux and its chain.
type Edge struct {
	mux *http.ServeMux
	// chain wraps a transport in metrics, origins and an authentication.
	chain        func(authenticate func(http.Handler) http.Handler, h http.Handler) http.Handler
	authenticate func(http.Handler) http.Handler
}

// New builds the chain and the health endpoints.
func New(opts Options) (*Edge, error) {
	origins := http.NewCrossOriginProtection()
	for _, o := range opts.AllowedOrigins {
		if err := origins.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("--mcp-allowed-origins: %w", err)
		}
	}
	e := &Edge{
		mux: http.NewServeMux(),
		chain: func(authenticate func(http.Handler) http.Handler, h http.Handler) http.Handler {
			return instrument(origins.Handler(authenticate(h)))
		},
		authenticate: opts.Authenticate,
	}
	e.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	e.mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !opts.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return e, nil
}

// Handle serves an MCP transport at a path, through the chain.
func (e *Edge) Handle(pattern string, h http.Handler) {
	e.mux.Handle(pattern, e.chain(e.authenticate, h))
}

// HandleWith serves an MCP transport at a pattern through the chain, with another
// authentication (OAuth's route). A pattern may name a host ("mcp.example.com/mcp"),
// which wins over the same path without one.
func (e *Edge) HandleWith(pattern string, authenticate func(http.Handler) http.Handler, h http.Handler) {
	e.mux.Handle(pattern, e.chain(authenticate, h))
}

// HandlePublic serves a public document (discovery metadata) at a pattern: counted
// in the metrics, open to any origin and without authentication.
func (e *Edge) HandlePublic(pattern string, h http.Handler) { e.mux.Handle(pattern, instrument(h)) }

// Handler is the edge's HTTP handler.
func (e *Edge) Handler() http.Handler { return e.mux }

// Timeouts bound how long a client may take.
type Timeouts struct {
	// ReadHeader is the time to send a request's headers.
	ReadHeader time.Duration
	// Read is the time to send a whole request, body included. It ends once the
	// body is read (net/http lifts the deadline then): a response streamed for
	// longer (a GET stream, a long tool call) is not cut.
	Read time.Duration
	// Idle is how long a kept-alive connection may wait for its next request.
	Idle time.Duration
}

// DefaultTimeouts are the server's: enough for a slow client to send the largest
// body, short enough that connections held open by sending nothing (or a byte now
// and then) are closed.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: time.Minute, Idle: 2 * time.Minute}

// Serve serves a handler on a listener until ctx ends, then lets in-flight requests
// finish for up to 10 s. There is no write timeout: responses may be long streams.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, t Timeouts) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		IdleTimeout:       t.Idle,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	return nil
}

// Loopback reports whether an address listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
