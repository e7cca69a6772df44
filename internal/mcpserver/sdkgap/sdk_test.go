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

package sdkgap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the canaries share: go-sdk v1.8.0 driven alone, over its own transports, with
// nothing of ours in between.

// caughtUp fails a canary: the SDK no longer has the gap a workaround fills.
func caughtUp(t *testing.T, does, workaround, path string) {
	t.Helper()
	t.Errorf("go-sdk now %s: remove %s (%s) and use the SDK's own", does, workaround, path)
}

// The session-based revision the canaries speak, and the stateless one.
const (
	sessionRevision   = "2025-11-25"
	statelessRevision = "2026-07-28"
)

// newServer is an SDK server with one tool, "long", that answers at once.
func newServer(opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "canary", Version: "0"}, opts)
	mcp.AddTool(s, &mcp.Tool{Name: "long"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	return s
}

// rawSession is an initialized session of a server over the SDK's in-memory
// transport, spoken to in JSON-RPC messages, so that what the server sends is seen
// as sent.
type rawSession struct {
	t    *testing.T
	conn mcp.Connection
	// init is the initialize result as the server sent it.
	init json.RawMessage
	next int
}

func connect(t *testing.T, server *mcp.Server) *rawSession {
	t.Helper()
	ctx := t.Context()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	r := &rawSession{t: t, conn: conn}
	var rpcErr *jsonrpc.Error
	r.init, rpcErr = r.call("initialize", `{"protocolVersion":"`+sessionRevision+`","capabilities":{},"clientInfo":{"name":"canary","version":"0"}}`)
	if rpcErr != nil {
		t.Fatalf("initialize: %v", rpcErr)
	}
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return r
}

// call sends a request (params "" for none) with the next number as its id.
func (r *rawSession) call(method, params string) (json.RawMessage, *jsonrpc.Error) {
	r.t.Helper()
	r.next++
	id, err := jsonrpc.MakeID(float64(r.next))
	if err != nil {
		r.t.Fatal(err)
	}
	return r.callID(id, method, params)
}

// callID sends a request with the given id, and waits for its answer.
func (r *rawSession) callID(id jsonrpc.ID, method, params string) (json.RawMessage, *jsonrpc.Error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	defer cancel()
	req := &jsonrpc.Request{ID: id, Method: method}
	if params != "" {
		req.Params = json.RawMessage(params)
	}
	if err := r.conn.Write(ctx, req); err != nil {
		r.t.Fatal(err)
	}
	for {
		msg, err := r.conn.Read(ctx)
		if err != nil {
			r.t.Fatalf("%s: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			continue
		}
		if resp.Error != nil {
			var wire *jsonrpc.Error
			if !errors.As(resp.Error, &wire) {
				wire = &jsonrpc.Error{Message: resp.Error.Error()}
			}
			return nil, wire
		}
		return resp.Result, nil
	}
}

// post sends one JSON-RPC message to an HTTP handler, with the given headers (Accept
// and Content-Type are set unless given), and returns the recorded answer.
func post(h http.Handler, body string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// statelessHeader is what a request of the stateless revision carries besides its
// body: the revision and its method.
func statelessHeader(method string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": statelessRevision, "Mcp-Method": method}
}

// statelessParams are params of the stateless revision: its _meta, with the client's
// capabilities (extensions: the names of the extensions it declares).
func statelessParams(extensions ...string) string {
	ext := map[string]any{}
	for _, e := range extensions {
		ext[e] = map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    statelessRevision,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "canary", "version": "0"},
		mcp.MetaKeyClientCapabilities: map[string]any{"extensions": ext},
	}})
	return string(b)
}

// answerOf reads the JSON-RPC response in an HTTP answer, plain or the first of an
// event stream: its result, or its error.
func answerOf(t *testing.T, body []byte) (json.RawMessage, *jsonrpc.Error) {
	t.Helper()
	data := bytes.TrimSpace(body)
	if !bytes.HasPrefix(data, []byte("{")) {
		data = nil
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && bytes.Contains(rest, []byte(`"jsonrpc"`)) {
				data = append([]byte(nil), rest...)
				break
			}
		}
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("no JSON-RPC response in %q: %v", body, err)
	}
	return msg.Result, msg.Error
}

// jsonNames are the JSON member names of a struct type's fields, those of embedded
// structs included.
func jsonNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for n := range jsonNames(f.Type) {
				names[n] = true
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// members are the member names of a JSON object.
func members(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %s: %v", raw, err)
	}
	return m
}
