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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// flushCounter counts the flushes of the POSTs of a handler.
type flushCounter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (f flushCounter) Flush() {
	f.n.Add(1)
	_ = http.NewResponseController(f.ResponseWriter).Flush()
}

func (f flushCounter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// primeServer serves a go-sdk server with the event store behind Coalesce, with a
// hold of its own: the tool "quick" answers at once, "slow" once release is closed,
// and "progress" sends a progress notification first.
func primeServer(t *testing.T, hold time.Duration, release chan struct{}) (url string, flushes *atomic.Int64) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "prime", Version: "1"}, nil)
	answer := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "quick", InputSchema: map[string]any{"type": "object"}}, answer)
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-release
			return answer(ctx, req)
		})
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "halfway"}); err != nil {
				return nil, err
			}
			<-release
			return answer(ctx, req)
		})
	h := Coalesce(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: NewEventStore(0, 0)}), hold)
	flushes = &atomic.Int64{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(flushCounter{w, flushes}, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, flushes
}

// rawSession is a client of revision 2025-11-25 that reads the event streams itself.
type rawSession struct {
	url, sid string
}

func openSession(t *testing.T, url string) *rawSession {
	t.Helper()
	s := &rawSession{url: url}
	resp := s.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	s.sid = resp.Header.Get("Mcp-Session-Id")
	resp = s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_ = resp.Body.Close()
	if s.sid == "" {
		t.Fatal("no session id")
	}
	return s
}

func (s *rawSession) post(t *testing.T, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func call(name string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, name)
}

// event reads one server-sent event: its fields, by name.
func event(t *testing.T, r *bufio.Reader) map[string]string {
	t.Helper()
	ev, err := readEvent(r)
	if err != nil {
		t.Fatalf("the stream ended within an event: %v", err)
	}
	return ev
}

func readEvent(r *bufio.Reader) (map[string]string, error) {
	ev := map[string]string{}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			return ev, nil
		}
		k, v, _ := strings.Cut(line, ":")
		ev[k] = strings.TrimSpace(v)
	}
}

// A call answered at once is sent with its stream's priming event as the handler
// returns, in the HTTP server's last write of the response (the SDK flushes each
// event), and the client gets both: the priming event's id (to resume the stream
// with) and then the answer.
func TestAQuickAnswerIsSentWithItsPrimingEventInOneWrite(t *testing.T) {
	// A hold no call of this test takes, so that however slow the machine, the
	// answer comes within it.
	url, flushes := primeServer(t, time.Hour, nil)
	s := openSession(t, url)
	before := flushes.Load()
	resp := s.post(t, call("quick"))
	defer func() { _ = resp.Body.Close() }()
	r := bufio.NewReader(resp.Body)
	prime, msg := event(t, r), event(t, r)
	if prime["event"] != "prime" || prime["id"] == "" {
		t.Errorf("first event = %v, want the priming event with an id", prime)
	}
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(msg["data"]), &answer); err != nil || answer.ID != 1 ||
		len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != "done" {
		t.Errorf("second event = %v (%v), want the answer", msg, err)
	}
	_, _ = io.Copy(io.Discard, r)
	if got := flushes.Load() - before; got != 0 {
		t.Errorf("the call's stream was flushed %d times before its end, want 0", got)
	}
}

// A call that takes longer than the hold still has its stream primed while it runs:
// a client that loses the connection then has the event id to resume it with.
func TestALongCallsStreamIsPrimedWhileItRuns(t *testing.T) {
	release := make(chan struct{})
	url, _ := primeServer(t, PrimeHold, release)
	s := openSession(t, url)
	resp := s.post(t, call("slow"))
	defer func() { _ = resp.Body.Close() }()
	r := bufio.NewReader(resp.Body)
	primed := make(chan map[string]string, 1)
	go func() {
		ev, _ := readEvent(r)
		primed <- ev
	}()
	select {
	case prime := <-primed:
		if prime["event"] != "prime" || prime["id"] == "" {
			t.Fatalf("first event = %v, want the priming event with an id", prime)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("no priming event while the call ran")
	}
	close(release)
	if msg := event(t, r); !bytes.Contains([]byte(msg["data"]), []byte(`"done"`)) {
		t.Errorf("second event = %v, want the answer", msg)
	}
}

// A message sent before the answer (progress) reaches the client while the call
// still runs: only the answer's flush is left to the end of the response.
func TestProgressBeforeTheAnswerIsSentAsItComes(t *testing.T) {
	release := make(chan struct{})
	url, _ := primeServer(t, time.Hour, release)
	s := openSession(t, url)
	resp := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"p1"}}}`)
	defer func() { _ = resp.Body.Close() }()
	r := bufio.NewReader(resp.Body)
	got := make(chan []map[string]string, 1)
	go func() {
		var evs []map[string]string
		for range 2 { // the priming event, then the progress
			ev, err := readEvent(r)
			if err != nil {
				break
			}
			evs = append(evs, ev)
		}
		got <- evs
	}()
	select {
	case evs := <-got:
		if len(evs) != 2 || evs[0]["event"] != "prime" || !strings.Contains(evs[1]["data"], `"notifications/progress"`) {
			close(release)
			t.Fatalf("events = %v, want the priming event and the progress", evs)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("no progress while the call ran")
	}
	close(release)
	if msg := event(t, r); !strings.Contains(msg["data"], `"done"`) {
		t.Errorf("last event = %v, want the answer", msg)
	}
}

// Only an event whose data is a JSON-RPC response, as the SDK writes one, is an
// answer; a request to the client, a notification and the priming event are not,
// whatever their strings hold.
func TestIsAnswer(t *testing.T) {
	for ev, want := range map[string]bool{
		"event: message\nid: s_1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n":                             true,
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":\"no\"}}\n\n":                     true,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\\\",\\\"result\\\":\",\"result\":{}}\n\n":              true,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\\\",\\\"result\\\":\",\"method\":\"roots/list\"}\n\n":  false,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\"}\n\n":              false,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"id\":1}}\n\n": false,
		"event: prime\nid: s_0\ndata: \n\n":                                false,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"unterminated": false,
		"": false,
		// A long write without a data line where an event's head is: not searched.
		strings.Repeat("x", 4096) + "\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n": false,
	} {
		if got := isAnswer([]byte(ev)); got != want {
			t.Errorf("isAnswer(%q) = %v, want %v", ev, got, want)
		}
	}
}
