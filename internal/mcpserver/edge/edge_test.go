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

package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// short are timeouts a test can wait out.
var short = Timeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Idle: 300 * time.Millisecond}

// serveTest serves h on a loopback port until the test ends.
func serveTest(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = serve(ctx, ln, h, short, func() {}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// A client that sends its headers and then trickles its body, a byte now and
// then, is cut off instead of holding a connection and a handler for as long as
// it likes.
func TestSlowlorisBodyIsCut(t *testing.T) {
	addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "request body too slow", http.StatusRequestTimeout)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const length = 1000
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", length); err != nil {
		t.Fatal(err)
	}
	// The trickle: one byte every 50 ms would take 50 s to finish the body. The
	// test's own deadline only guards against a server that never cuts.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	sent := make(chan int, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		n := 1
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ; n < length; n++ {
			select {
			case <-stop:
				sent <- n
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				break
			}
		}
		sent <- n
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("status %d, want the connection cut or 408", resp.StatusCode)
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server still waits for the trickled body")
	}
	_ = conn.Close()
	if n := <-sent; n >= length {
		t.Errorf("the whole body (%d bytes) went through before the server answered", n)
	}
}

// The read timeout ends with the request: a response that streams for longer (a
// GET stream, a POST whose tool call reports progress) is not cut.
func TestStreamsOutliveTheReadTimeout(t *testing.T) {
	addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: first\n\n"))
		http.NewResponseController(w).Flush()
		select {
		case <-time.After(4 * short.Read):
			_, _ = w.Write([]byte("data: second\n\n"))
		case <-r.Context().Done():
		}
	}))
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			}
			req, err := http.NewRequest(method, "http://"+addr+"/mcp", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(got), "data: second") {
				t.Errorf("the stream was cut: %q", got)
			}
		})
	}
}

// Any client may send any method; the metrics keep one series for the unknown ones.
func TestArbitraryMethodsAreCountedAsOther(t *testing.T) {
	e, err := New(Options{
		Authenticate: func(h http.Handler) http.Handler { return h },
		Ready:        func() bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	addr := serveTest(t, e.Handler())
	for _, m := range []string{"FROBNICATE-1", "FROBNICATE-2", http.MethodGet} {
		req, err := http.NewRequest(m, "http://"+addr+"/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "sandbar_mcp_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			methods[label(m, "method")] += m.GetCounter().GetValue()
		}
	}
	if methods["OTHER"] != 2 || methods["GET"] != 1 {
		t.Errorf("requests by method: %v, want OTHER 2 and GET 1", methods)
	}
	for m := range methods {
		if strings.HasPrefix(m, "FROBNICATE") {
			t.Errorf("the method %q became a label value", m)
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
