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
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
)

const transportPath = "internal/mcpserver/sdkgap/transport"

// Legacy HTTP+SSE (2024-11-05): the SDK's SSEHandler hands a message no token info
// of the POST that brought it (its middleware cannot tell who asks), lets another
// user's token post to a session, never ends an idle session, and refuses a custom
// method (tasks/get) on it.
func TestCanarySDKsSSEHandlerHandsNoTokenPerMessage(t *testing.T) {
	s := newServer(nil)
	type params struct{ mcp.ParamsBase }
	type result struct{ mcp.ResultBase }
	if err := mcp.AddReceivingCustomMethod(s, "canary/get", func(context.Context, *mcp.ServerSession, *params) (*result, error) {
		return &result{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var pingExtra *mcp.RequestExtra
	pinged := make(chan struct{}, 1)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "ping" {
				mu.Lock()
				pingExtra = req.GetExtra()
				mu.Unlock()
				pinged <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	get.Header.Set("Authorization", "Bearer alice")
	get.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Body.Close() }()
	events := bufio.NewReader(stream.Body)
	var endpoint string
	for endpoint == "" {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("no endpoint event: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = data
		}
	}
	send := func(user, body string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+user)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// The stream is read on, so that the server's writes to it never wait.
	go func() {
		for {
			if _, err := events.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	if code := send("alice", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"canary","version":"0"}}}`); code != http.StatusAccepted {
		t.Fatalf("initialize: %d", code)
	}
	send("alice", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)

	code := send("bob", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}`)
	if code != http.StatusAccepted {
		caughtUp(t, fmt.Sprintf("refuses another user's token on an SSE session (%d)", code), "transport.SSE", transportPath+"/sse.go")
	} else {
		select {
		case <-pinged:
		case <-ctx.Done():
			t.Fatal("the ping never reached the server's middleware")
		}
		mu.Lock()
		if pingExtra != nil && pingExtra.TokenInfo != nil {
			caughtUp(t, "hands each SSE message its POST's token info", "transport.SSE", transportPath+"/sse.go")
		}
		mu.Unlock()
	}
	for f := range reflect.TypeFor[mcp.SSEOptions]().Fields() {
		if strings.Contains(f.Name, "Timeout") || strings.Contains(f.Name, "Idle") {
			caughtUp(t, "ends an idle SSE session (SSEOptions."+f.Name+")", "transport.SSE", transportPath+"/sse.go")
		}
	}
	if code := send("alice", `{"jsonrpc":"2.0","id":3,"method":"canary/get","params":{}}`); code != http.StatusBadRequest {
		caughtUp(t, fmt.Sprintf("takes a custom method on an SSE session (%d)", code), "transport.SSE", transportPath+"/sse.go")
	}
}

// Plain JSON answers: the SDK's session handler refuses a POST whose Accept names
// no stream (or that has none), and answers curl's */* with an event stream; its
// JSONResponse option is for every client of a handler, not per request.
func TestCanarySDKRefusesAPostThatTakesNoStream(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(nil) }, nil)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + sessionRevision + `","capabilities":{},"clientInfo":{"name":"canary","version":"0"}}}`
	for _, accept := range []string{"application/json", ""} {
		if rec := post(h, initialize, map[string]string{"Accept": accept}); rec.Code != http.StatusBadRequest {
			caughtUp(t, fmt.Sprintf("answers a POST with Accept %q (%d %s)", accept, rec.Code, rec.Header().Get("Content-Type")),
				"transport.PlainJSON", transportPath+"/json.go")
		}
	}
	rec := post(h, initialize, map[string]string{"Accept": "*/*"})
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		caughtUp(t, "answers a POST with Accept */* in "+ct, "transport.PlainJSON", transportPath+"/json.go")
	}
}

// A browser's GET: the SDK's handler refuses (400) a GET whose Accept names no event
// stream, and one that names */* but no session; it serves no page.
func TestCanarySDKRefusesABrowsersGET(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(nil) }, nil)
	for _, accept := range []string{"text/html", "text/html,application/xhtml+xml,*/*;q=0.8"} {
		req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			caughtUp(t, fmt.Sprintf("answers a GET with Accept %q (%d %s)", accept, rec.Code, rec.Header().Get("Content-Type")),
				"transport.Page", transportPath+"/page.go")
		}
	}
}

// Routing by revision: the SDK's session handler refuses a request of the stateless
// revision (400, UnsupportedProtocolVersion), and its stateless handler serves the
// session-based revisions without a session, so one handler cannot serve both.
func TestCanarySDKServesEachEraInAHandlerOfItsOwn(t *testing.T) {
	get := func(*http.Request) *mcp.Server { return newServer(nil) }
	sessions := mcp.NewStreamableHTTPHandler(get, nil)
	rec := post(sessions, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+statelessParams()+`}`, statelessHeader("tools/list"))
	_, rpcErr := answerOf(t, rec.Body.Bytes())
	if rec.Code != http.StatusBadRequest || rpcErr == nil || rpcErr.Code != mcp.CodeUnsupportedProtocolVersion {
		caughtUp(t, fmt.Sprintf("serves the stateless revision on a session handler (%d %s)", rec.Code, describe(rpcErr)),
			"transport.ByRevision", transportPath+"/revision.go")
	}

	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	rec = post(stateless, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+sessionRevision+`","capabilities":{},"clientInfo":{"name":"canary","version":"0"}}}`, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("initialize on the stateless handler: %d %s", rec.Code, rec.Body)
	}
	if id := rec.Header().Get("Mcp-Session-Id"); id != "" {
		caughtUp(t, "keeps a session for "+sessionRevision+" on a stateless handler", "transport.ByRevision", transportPath+"/revision.go")
	}
	if rec := httptestGet(stateless); rec.Code != http.StatusMethodNotAllowed {
		caughtUp(t, fmt.Sprintf("serves a GET stream on a stateless handler (%d)", rec.Code), "transport.ByRevision", transportPath+"/revision.go")
	}
}

func httptestGet(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The event store: the SDK's MemoryEventStore bounds its bytes but keeps every stream
// a session opened (every POST is one) until the session ends.
func TestCanarySDKsEventStoreKeepsEveryStream(t *testing.T) {
	ctx := t.Context()
	s := mcp.NewMemoryEventStore(nil)
	const streams = 10000
	for i := range streams {
		id := fmt.Sprint(i)
		if err := s.Open(ctx, "session", id); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "session", id, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for data, err := range s.After(ctx, "session", "0", -1) {
		if err != nil || string(data) != "x" {
			caughtUp(t, fmt.Sprintf("forgets the oldest of %d streams of a session (%v)", streams, err),
				"transport.EventStore", transportPath+"/events.go")
		}
	}
}

// A quick answer in one write: with an event store, the SDK's session handler writes
// and flushes the priming event alone before it handles the request, then the
// answer, each in a write of the connection of its own.
func TestCanarySDKFlushesThePrimingEventAlone(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(nil) },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	rec := post(h, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+sessionRevision+`","capabilities":{},"clientInfo":{"name":"canary","version":"0"}}}`, nil)
	id := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", rec.Code, id)
	}
	header := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": sessionRevision}
	post(h, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, header)

	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := &flushes{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(w, req)
	if len(w.flushed) == 0 {
		t.Fatalf("the ping's stream was never flushed: %d %q", w.Code, w.Body)
	}
	first := w.flushed[0]
	if !bytes.Contains(first, []byte("event: prime")) || bytes.Contains(first, []byte(`"result"`)) {
		caughtUp(t, fmt.Sprintf("sends the priming event with the answer (first flush %q)", first),
			"transport.Coalesce", transportPath+"/prime.go")
	}
}

// flushes records what was written before each flush.
type flushes struct {
	*httptest.ResponseRecorder
	pending []byte
	flushed [][]byte
}

func (f *flushes) Write(b []byte) (int, error) {
	f.pending = append(f.pending, b...)
	return f.ResponseRecorder.Write(b)
}

func (f *flushes) Flush() {
	if len(f.pending) > 0 {
		f.flushed = append(f.flushed, f.pending)
		f.pending = nil
	}
	f.ResponseRecorder.Flush()
}

// Request ids: the SDK hands the receiving middleware no JSON-RPC id (telemetry
// needs it for the span, the request log and the audit event); transport.Peek reads
// it before the SDK parses, and telemetry.Capture hands it on in a header.
// https://github.com/modelcontextprotocol/go-sdk/issues/1264 asks for it.
func TestCanarySDKHandsNoRequestIDToMiddleware(t *testing.T) {
	const id = "canary-7d1f"
	s := newServer(nil)
	var mu sync.Mutex
	var seen mcp.Request
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				mu.Lock()
				seen = req
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	r := connect(t, s)
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, rpcErr := r.callID(rid, "tools/call", `{"name":"long","arguments":{}}`); rpcErr != nil {
		t.Fatalf("tools/call: %v", rpcErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen == nil {
		t.Fatal("the middleware saw no tools/call")
	}
	const where = "transport.Peek's ID, read by telemetry.Capture"
	for m := range reflect.TypeOf(seen).Methods() {
		if strings.Contains(m.Name, "ID") || strings.HasSuffix(m.Name, "Id") {
			caughtUp(t, "gives a request "+m.Name, where, transportPath+"/capture.go, internal/mcpserver/telemetry/http.go")
		}
	}
	if path, ok := holds(reflect.ValueOf(seen), id, "req", 0); ok {
		caughtUp(t, "hands the middleware the request's id (at "+path+")", where, transportPath+"/capture.go, internal/mcpserver/telemetry/http.go")
	}
}

// holds reports where v holds the string s, walking everything but the session
// (whose connection keeps the requests it is answering).
func holds(v reflect.Value, s, path string, depth int) (string, bool) {
	if depth > 8 || !v.IsValid() {
		return "", false
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false
		}
		return holds(v.Elem(), s, path, depth+1)
	case reflect.String:
		return path, v.String() == s
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Name == "Session" {
				continue
			}
			if p, ok := holds(v.Field(i), s, path+"."+f.Name, depth+1); ok {
				return p, true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if p, ok := holds(it.Value(), s, fmt.Sprintf("%s[%v]", path, it.Key()), depth+1); ok {
				return p, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return path, bytes.Contains(v.Bytes(), []byte(s))
		}
		for i := range v.Len() {
			if p, ok := holds(v.Index(i), s, fmt.Sprintf("%s[%d]", path, i), depth+1); ok {
				return p, true
			}
		}
	}
	return "", false
}

// What the HTTP layer reads of a message ahead of the SDK (transport.Peek,
// transport.Unmarshal) must be what the SDK reads: the same member names matched
// exactly, the same depth refused. Not a gap: a copy of the SDK's behaviour that
// must follow it.
func TestCanarySDKReadsMessagesAsTransportDoes(t *testing.T) {
	nested := func(depth int) string {
		// depth counts the message's own object.
		return `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":` + strings.Repeat("[", depth-2) + strings.Repeat("]", depth-2) + `}}`
	}
	for _, tc := range []struct{ name, msg string }{
		{"exact member names", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","method":"ping"}`},
		{"no member of that exact name", `{"jsonrpc":"2.0","id":1,"METHOD":"ping"}`},
		{"as deep as the SDK reads", nested(1000)},
		{"deeper than the SDK reads", nested(1001)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sdk := ""
			if msg, err := jsonrpc.DecodeMessage([]byte(tc.msg)); err == nil {
				if req, ok := msg.(*jsonrpc.Request); ok {
					sdk = req.Method
				}
			}
			var ours struct {
				Method string `json:"method"`
			}
			_ = transport.Unmarshal([]byte(tc.msg), &ours)
			if sdk != ours.Method {
				t.Errorf("go-sdk now reads method %q where transport.Unmarshal (%s/decode.go) reads %q: make it read as the SDK does",
					sdk, transportPath, ours.Method)
			}
		})
	}
}
