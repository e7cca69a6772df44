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
// MCP transport goes through (metrics, the recovery of a panic, cross-origin
// protection, authentication),
// built once, the health endpoints, and serving with timeouts and a graceful
// shutdown. A second transport is one more Handle.
package edge

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sandbar-dev/sandbar/internal/contain"
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
	mux          *http.ServeMux
	origins      *http.CrossOriginProtection
	authenticate func(http.Handler) http.Handler
	// stopping is set once shutdown starts: /readyz fails from then on.
	stopping atomic.Bool
}

// New builds the chain and the health endpoints.
func New(opts Options) (*Edge, error) {
	origins := http.NewCrossOriginProtection()
	for _, o := range opts.AllowedOrigins {
		if err := origins.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("--mcp-allowed-origins: %w", err)
		}
	}
	e := &Edge{mux: http.NewServeMux(), origins: origins, authenticate: opts.Authenticate}
	e.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	e.mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if e.stopping.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if !opts.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return e, nil
}

// Handle serves an MCP transport at a path, through the chain.
func (e *Edge) Handle(pattern string, h http.Handler) { e.HandleWith(pattern, e.authenticate, h) }

// HandleWith serves an MCP transport at a pattern through the chain (metrics, the
// recovery of a panic, origins), with another authentication (OAuth's route). A
// pattern may name a host ("mcp.example.com/mcp"), which wins over the same path
// without one.
func (e *Edge) HandleWith(pattern string, authenticate func(http.Handler) http.Handler, h http.Handler) {
	e.mux.Handle(pattern, instrument(contain.HTTP(e.origins.Handler(authenticate(h)))))
}

// HandlePublic serves a public document (discovery metadata) at a pattern: counted
// in the metrics, open to any origin and without authentication.
func (e *Edge) HandlePublic(pattern string, h http.Handler) {
	e.mux.Handle(pattern, instrument(contain.HTTP(h)))
}

// Handler is the edge's HTTP handler.
func (e *Edge) Handler() http.Handler { return e.mux }

// Timeouts bound how long a client may take, and how the server stops.
type Timeouts struct {
	// ReadHeader is the time to send a request's headers.
	ReadHeader time.Duration
	// Read is the time to send a whole request, body included. It ends once the
	// body is read (net/http lifts the deadline then): a response streamed for
	// longer (a GET stream, a long tool call) is not cut.
	Read time.Duration
	// Idle is how long a kept-alive connection may wait for its next request.
	Idle time.Duration
	// ShutdownDelay is how long the server goes on taking requests once shutdown
	// starts, with /readyz failing, so that a load balancer notices and sends the
	// next ones elsewhere before the port closes.
	ShutdownDelay time.Duration
	// Drain is how long requests in flight when the port closes may take to finish
	// (a tool call's answer, a task's start); past it they are cut.
	Drain time.Duration
}

// DefaultTimeouts are the server's: enough for a slow client to send the largest
// body, short enough that connections held open by sending nothing (or a byte now
// and then) are closed; a drain that lets a tool call within its default deadline
// (10 s) answer.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: time.Minute, Idle: 2 * time.Minute,
	ShutdownDelay: 3 * time.Second, Drain: 10 * time.Second}

// Serve serves the edge on a listener until ctx ends. Then /readyz fails at once
// while requests are still taken for t.ShutdownDelay, each answer closing its
// connection (a load balancer stops sending them); then the port closes, GET streams end (their clients open them again on
// another replica) and requests in flight (tool calls) finish, unhurried by the
// end of ctx, for up to t.Drain. There is no write timeout: responses may be long
// streams.
func (e *Edge) Serve(ctx context.Context, ln net.Listener, t Timeouts) error {
	return serve(ctx, ln, e.mux, t, func() { e.stopping.Store(true) })
}

// serve is Edge.Serve for any handler; stopping runs once shutdown starts.
func serve(ctx context.Context, ln net.Listener, h http.Handler, t Timeouts, stopping func()) error {
	// Requests live past ctx (keeping its values, the logger): a call in flight when
	// shutdown starts answers. Streams end when the port closes; anything left past
	// the drain is cut.
	base, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	streams, endStreams := context.WithCancel(base)
	defer endStreams()
	// Once shutdown starts, each answer closes its connection: a client that keeps
	// one alive sends its next request on a new one (which a load balancer sends
	// elsewhere) rather than on one the port's closing ends as the request arrives,
	// which a client sees as an EOF and does not send again (a POST).
	var closing atomic.Bool
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if closing.Load() {
				w.Header().Set("Connection", "close")
			}
			if r.Method == http.MethodGet {
				sctx, cancel := context.WithCancel(r.Context())
				defer cancel()
				defer context.AfterFunc(streams, cancel)()
				r = r.WithContext(sctx)
			}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		IdleTimeout:       t.Idle,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	stopping()
	closing.Store(true)
	if t.ShutdownDelay > 0 {
		delay := time.NewTimer(t.ShutdownDelay)
		select {
		case err := <-errs:
			delay.Stop()
			return err
		case <-delay.C:
		}
	}
	endStreams()
	drain, cancel := context.WithTimeout(context.Background(), t.Drain)
	defer cancel()
	if err := srv.Shutdown(drain); err != nil {
		cut()
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
