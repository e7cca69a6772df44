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

// Package contain keeps a failure to the request or event that caused it: a panic
// where a request or an event enters the manager's code (an MCP method, an HTTP
// request, an informer's event, a goroutine the manager starts) is recovered,
// logged once with its stack, counted in sandbar_panics_recovered_total, and the
// process goes on serving. Go's net/http recovers a handler's panic on its own, but
// the go-sdk serves MCP requests and client-go delivers informer events on
// goroutines of their own, where nothing does: one panic there ends the process.
// Controllers keep controller-runtime's own recovery (RecoverPanic).
package contain

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Panics counts the panics recovered, by where they entered: "mcp", "http",
// "informer" or a goroutine's name.
var Panics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sandbar_panics_recovered_total",
	Help: "Panics recovered where a request or an event enters the manager's code, by where; the process went on serving.",
}, []string{"where"})

func init() {
	metrics.Registry.MustRegister(Panics)
}

// log is where recovered panics are logged: the manager's logger once it is set.
var log = logf.Log.WithName("contain")

// Panic is a recovered panic as an error: where it entered and what was thrown.
// Its message holds no stack (that goes to the log only).
type Panic struct {
	Where string
	Value any
}

func (p *Panic) Error() string { return fmt.Sprintf("panic in %s: %v", p.Where, p.Value) }

// Record logs a recovered panic with its stack, once, and counts it; the values
// are added to the log line. Call it from the deferred function that recovered v.
func Record(where string, v any, keysAndValues ...any) {
	Panics.WithLabelValues(where).Inc()
	log.Error(errors.New(fmt.Sprint(v)), "recovered a panic; the process goes on serving",
		append([]any{"where", where, "stack", string(debug.Stack())}, keysAndValues...)...)
}

// Recover is deferred where a panic must not go further: it recovers one, records
// it, and sets *err (if err is not nil) to the Panic.
//
//	defer contain.Recover("informer", nil)
func Recover(where string, err *error) {
	if v := recover(); v != nil {
		Record(where, v)
		if err != nil {
			*err = &Panic{Where: where, Value: v}
		}
	}
}

// Go runs fn on a goroutine of its own, recovering its panic.
func Go(where string, fn func()) {
	go func() {
		defer Recover(where, nil)
		fn()
	}()
}

// Loop runs fn until ctx ends: fn is meant to run as long as ctx, and when it
// panics it is recorded and started again, after a pause that doubles from 100 ms
// to 10 s while it keeps failing.
func Loop(ctx context.Context, where string, fn func(ctx context.Context)) {
	go func() {
		pause := 100 * time.Millisecond
		for ctx.Err() == nil {
			var err error
			func() {
				defer Recover(where, &err)
				fn(ctx)
			}()
			if err == nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, 10*time.Second)
		}
	}()
}

// Handler is an informer's event handler whose panics are recovered: one bad event
// (or a bug in what it calls) costs that event, not the process, and the informer
// goes on delivering the next.
func Handler(where string, h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return handler{where: where, h: h}
}

type handler struct {
	where string
	h     toolscache.ResourceEventHandler
}

func (h handler) OnAdd(obj any, initial bool) {
	defer Recover(h.where, nil)
	h.h.OnAdd(obj, initial)
}

func (h handler) OnUpdate(oldObj, newObj any) {
	defer Recover(h.where, nil)
	h.h.OnUpdate(oldObj, newObj)
}

func (h handler) OnDelete(obj any) {
	defer Recover(h.where, nil)
	h.h.OnDelete(obj)
}

// HTTP recovers the panic of an HTTP handler: net/http would log it and drop the
// connection; this records it as every other panic and answers 500 with a JSON-RPC
// internal error when nothing was written yet. http.ErrAbortHandler, which a
// handler throws on purpose to drop a connection, goes on.
func HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &wroteRecorder{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // net/http compares it so
				panic(v)
			}
			Record("http", v, "method", r.Method, "path", r.URL.Path)
			if !rec.wrote {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error: the server failed on this request and logged it; it goes on serving, so try again"}}` + "\n"))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// wroteRecorder notes whether a response was begun.
type wroteRecorder struct {
	http.ResponseWriter
	wrote bool
}

func (r *wroteRecorder) WriteHeader(code int) {
	r.wrote = true
	r.ResponseWriter.WriteHeader(code)
}

func (r *wroteRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Flush keeps streams working through the recorder.
func (r *wroteRecorder) Flush() {
	r.wrote = true
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *wroteRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// InternalError is the answer to an MCP request whose handling panicked: -32603,
// which says the server goes on; id, if not empty, is the server's id of the
// request, which the log line of the panic carries too.
func InternalError(id string) error {
	msg := "internal error: the server failed on this request and logged it; it goes on serving, so try again"
	if id != "" {
		msg += " (request " + id + ")"
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// Middleware is the MCP receiving middleware that recovers the panic of any method
// (of the handlers and middleware it wraps) and answers InternalError: outermost,
// the net under all the rest.
func Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if v := recover(); v != nil {
				Record("mcp", v, "method", method)
				res, err = nil, InternalError("")
			}
		}()
		return next(ctx, method, req)
	}
}
