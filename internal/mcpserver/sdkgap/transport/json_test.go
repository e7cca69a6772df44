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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// streamed answers as the SDK's Streamable HTTP handler does: a stream of events,
// written in pieces, that may carry notifications before the response. It refuses a
// request that does not accept a stream, as the SDK does.
func streamed(events ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !AcceptOf(r.Header).Stream() {
			http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "S1")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			// Split each event across writes: the parser must join them.
			half := len(e) / 2
			_, _ = w.Write([]byte(e[:half]))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(e[half:]))
		}
	})
}

func serve(h http.Handler, accept string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	PlainJSON(h).ServeHTTP(w, r)
	return w
}

func TestPlainJSONKeepsTheResponseAndDropsNotifications(t *testing.T) {
	h := streamed(
		"id: 0\ndata: \n\n",
		`event: message`+"\n"+`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`+"\n\n",
		`event: message`+"\n"+`data: {"jsonrpc":"2.0","id":7,"result":{"ok":true}}`+"\n\n",
	)
	for _, accept := range []string{"", "*/*", "application/json"} {
		w := serve(h, accept)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Mcp-Session-Id") != "S1" {
			t.Fatalf("Accept %q: %d %v", accept, w.Code, w.Header())
		}
		if got := strings.TrimSpace(w.Body.String()); got != `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}` {
			t.Fatalf("Accept %q: body %q", accept, got)
		}
	}
	// A client that accepts a stream gets it as it is.
	w := serve(h, "application/json, text/event-stream")
	if w.Header().Get("Content-Type") != "text/event-stream" || !strings.Contains(w.Body.String(), "notifications/progress") {
		t.Fatalf("streaming client: %v %q", w.Header(), w.Body.String())
	}
}

func TestPlainJSONBatchIsAnArray(t *testing.T) {
	w := serve(streamed(
		`data: {"jsonrpc":"2.0","id":1,"result":{}}`+"\n\n",
		`data: {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`+"\n\n",
	), "")
	if got := strings.TrimSpace(w.Body.String()); got != `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}]` {
		t.Fatalf("body %q", got)
	}
}

func TestPlainJSONPassesOtherAnswersThrough(t *testing.T) {
	for _, code := range []int{http.StatusAccepted, http.StatusNotFound, http.StatusBadRequest} {
		w := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if code == http.StatusAccepted {
				w.WriteHeader(code)
				return
			}
			http.Error(w, "refused", code)
		}), "")
		if w.Code != code {
			t.Fatalf("got %d, want %d", w.Code, code)
		}
		if code != http.StatusAccepted && strings.TrimSpace(w.Body.String()) != "refused" {
			t.Fatalf("body %q", w.Body.String())
		}
	}
	// A stream that ends without a response (the session closed) is a server error.
	w := serve(streamed(), "")
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("got %d, want 500", w.Code)
	}
}
