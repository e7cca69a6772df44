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
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// countingBody counts the reads of a request's body.
type countingBody struct {
	io.Reader
	reads int
}

func (b *countingBody) Read(p []byte) (int, error) { b.reads++; return b.Reader.Read(p) }
func (b *countingBody) Close() error               { return nil }

func post(body string) (*http.Request, *countingBody) {
	cb := &countingBody{Reader: strings.NewReader(body)}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Body, r.ContentLength = cb, int64(len(body))
	return r, cb
}

// The middleware ahead of the SDK that read a POST's message (telemetry's request
// id, the Tasks adapter's params.task) share one read and one parse of its body, and
// the handler behind them reads the very bytes the client sent.
func TestTheBodyIsReadAndParsedOnceForEveryCapture(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"x","task":{"ttl":60000}}}`
	r, cb := post(body)
	r, first := Peek(r, 1<<20)
	reads := cb.reads
	r, second := Peek(r, 1<<20)
	if first == nil || second != first || cb.reads != reads {
		t.Fatalf("the second capture got %p (the first %p) after %d more reads of the body", second, first, cb.reads-reads)
	}
	if string(first.ID) != `"a-7"` || first.Method != "tools/call" || string(first.Params.Task) != `{"ttl":60000}` {
		t.Errorf("message = %s %q %s", first.ID, first.Method, first.Params.Task)
	}
	if got, err := io.ReadAll(r.Body); err != nil || string(got) != body {
		t.Errorf("the handler read %q, %v; want the body", got, err)
	}
}

func TestPeekLeavesTheBodyWholeWhateverItHolds(t *testing.T) {
	long := `{"id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 200) + `"}}`
	for name, tc := range map[string]struct {
		body, id, method string
		limit            int64
		none             bool
	}{
		"a number id":               {body: `{"jsonrpc":"2.0","id":7,"method":"ping"}`, id: "7", method: "ping", limit: 1 << 20},
		"a notification":            {body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, method: "notifications/initialized", limit: 1 << 20},
		"params that are no object": {body: `{"params":"x","id":3,"method":"tools/call"}`, id: "3", method: "tools/call", limit: 1 << 20},
		// The SDK matches member names exactly: for it this is a ping.
		"a member named in other case": {body: `{"id":4,"method":"ping","Method":"tools/list","Params":{"task":{}}}`, id: "4", method: "ping", limit: 1 << 20},
		// Deeper than the SDK reads: the SDK refuses it; parsing it would exhaust the stack.
		"nested too deep":   {body: `{"id":5,"method":"tools/call","params":{"arguments":` + strings.Repeat("[", 4<<20) + `}}`, limit: 8 << 20, none: true},
		"a batch":           {body: `[{"id":1,"method":"ping"}]`, limit: 1 << 20},
		"not JSON":          {body: `{"id":`, limit: 1 << 20, none: true},
		"over the limit":    {body: long, limit: 64, none: true},
		"an unknown length": {body: long, id: "1", method: "ping", limit: 1 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := post(tc.body)
			if name == "an unknown length" {
				r.ContentLength = -1
			}
			r, m := Peek(r, tc.limit)
			switch {
			case tc.none && m != nil:
				t.Errorf("message %+v, want none", m)
			case !tc.none && (m == nil || string(m.ID) != tc.id || m.Method != tc.method || m.Params.Task != nil):
				t.Errorf("message %+v, want id %s, method %q", m, tc.id, tc.method)
			}
			if got, err := io.ReadAll(r.Body); err != nil || string(got) != tc.body {
				t.Errorf("the handler read %q, %v; want the body", got, err)
			}
		})
	}
	get := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	if _, m := Peek(get, 0); m != nil {
		t.Errorf("a GET has a message: %+v", m)
	}
}

// Unmarshal reads what the SDK reads: member names matched exactly, nesting up to
// the SDK's depth and no deeper, brackets in strings not counted.
func TestUnmarshalReadsAsTheSDK(t *testing.T) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := Unmarshal([]byte(`{"Cursor":"a","cursor":"b","CURSOR":"c"}`), &p); err != nil || p.Cursor != "b" {
		t.Errorf("cursor = %q, %v; want b", p.Cursor, err)
	}
	nested := func(depth int) []byte {
		return []byte(`{"s":"` + strings.Repeat("[", 3*maxDepth) + `","v":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
	}
	var v map[string]any
	if err := Unmarshal(nested(maxDepth), &v); err != nil {
		t.Errorf("nested %d deep: %v", maxDepth, err)
	}
	if err := Unmarshal(nested(maxDepth+1), &v); err == nil {
		t.Errorf("nested %d deep: no error", maxDepth+1)
	}
}
