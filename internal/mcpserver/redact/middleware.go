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

package redact

import (
	"context"
	"reflect"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Middleware scrubs the answer to every request, its result or its error; install it
// as the outermost receiving middleware, so that it sees what the others return too.
// A result vouched for (Vouch) is sent as it is.
func Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		v := &vouched{}
		res, err := next(context.WithValue(ctx, vouchedKey{}, v), method, req)
		if err != nil {
			return res, Error(err)
		}
		if res == nil {
			return res, nil
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r == v.res.Load() {
			return res, nil
		}
		out, _ := Value(res).(mcp.Result)
		return out, nil
	}
}

// vouched is the result a request's handler vouched for (atomic: nothing stops a
// handler from vouching on a goroutine of its own).
type vouched struct {
	res atomic.Pointer[mcp.CallToolResult]
}

type vouchedKey struct{}

// Vouch tells Middleware that res, the result it is about to get for the request of
// ctx, holds nothing String would change: every string in it was checked where the
// result was made (tool.Render checks its text and its JSON once, and a verb may send
// what it rendered many times). Middleware then sends res without walking it again.
// A result changed after Vouch must not have been vouched for; a result other than
// res is walked as any.
func Vouch(ctx context.Context, res *mcp.CallToolResult) {
	if v, ok := ctx.Value(vouchedKey{}).(*vouched); ok {
		v.res.Store(res)
	}
}

// Sending scrubs the params of every notification and request the server sends a
// client: progress, logging messages, list changes, resource updates, and any other.
func Sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		return next(ctx, method, request(req))
	}
}

// request is req with its Params redacted (mcp.ServerRequest[P] and the like).
func request(req mcp.Request) mcp.Request {
	v := reflect.ValueOf(req)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return req
	}
	params := v.Elem().FieldByName("Params")
	if !params.IsValid() {
		return req
	}
	red, changed := walk(params, 0)
	if !changed {
		return req
	}
	out := reflect.New(v.Elem().Type())
	out.Elem().Set(v.Elem())
	out.Elem().FieldByName("Params").Set(red)
	if r, ok := out.Interface().(mcp.Request); ok {
		return r
	}
	return req
}

// Error is err with a redacted message. A JSON-RPC error keeps its code and has its
// message and data redacted; any other error keeps what it wraps (errors.Is and
// errors.As see through it) and says its message redacted.
func Error(err error) error {
	if w, ok := err.(*jsonrpc.Error); ok {
		out, _ := Value(w).(*jsonrpc.Error)
		return out
	}
	msg := err.Error()
	red := String(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
