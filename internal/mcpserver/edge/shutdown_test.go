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
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// stoppingEdge serves an edge whose /mcp answers a POST once released (or says its
// context ended) and streams to a GET until its context ends. It returns the
// address, the listener, a function that starts the shutdown, and a channel closed
// when Serve returns.
func stoppingEdge(t *testing.T, release <-chan struct{}, started chan<- struct{}, timeouts Timeouts) (string, net.Listener, func(), <-chan struct{}) {
	t.Helper()
	e, err := New(Options{
		Authenticate: func(h http.Handler) http.Handler { return h },
		Ready:        func() bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: open\n\n"))
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return
		}
		if r.URL.Query().Get("quick") != "" {
			_, _ = w.Write([]byte("answered"))
			return
		}
		started <- struct{}{}
		select {
		case <-release:
			_, _ = w.Write([]byte("answered"))
		case <-r.Context().Done():
			http.Error(w, "the call's context ended: "+context.Cause(r.Context()).Error(), http.StatusInternalServerError)
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Serve(ctx, ln, timeouts); close(done) }()
	t.Cleanup(func() { cancel(); _ = ln.Close(); <-done })
	return ln.Addr().String(), ln, cancel, done
}

func get(url string) (int, string, error) {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// Once the manager is told to stop (SIGTERM), /readyz fails at once while the
// server still takes requests, so a load balancer that probes it moves the next
// requests to another replica before this one's port closes.
func TestReadinessFailsWhileAStoppingReplicaStillServes(t *testing.T) {
	g := NewWithT(t)
	// A delay this test never waits out: it ends Serve by closing the listener.
	timeouts := short
	timeouts.ShutdownDelay, timeouts.Drain = time.Hour, time.Minute
	addr, ln, stop, done := stoppingEdge(t, nil, nil, timeouts)
	code, body, err := get("http://" + addr + "/readyz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), body)

	stop()
	g.Eventually(func() string {
		code, body, err := get("http://" + addr + "/readyz")
		if err != nil {
			return err.Error()
		}
		return http.StatusText(code) + ": " + body
	}).WithTimeout(10*time.Second).WithPolling(20*time.Millisecond).Should(Equal("Service Unavailable: shutting down"),
		"/readyz fails once shutdown starts, and the server still answers it")
	resp, err := http.Post("http://"+addr+"/mcp?quick=1", "application/json", strings.NewReader("{}"))
	g.Expect(err).NotTo(HaveOccurred(), "a request sent while the load balancer has not noticed yet is served")
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(string(answer)).To(Equal("answered"))
	g.Expect(resp.Close).To(BeTrue(), "the answer closes its connection: the client's next request comes on a new one")
	_ = ln.Close()
	<-done
}

// A tool call in flight when the port closes answers: its context does not end with
// the manager's, and Serve waits for it (up to the drain). GET streams end, so their
// clients open them again elsewhere.
func TestACallInFlightAnswersThroughShutdown(t *testing.T) {
	g := NewWithT(t)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	timeouts := short
	timeouts.ShutdownDelay, timeouts.Drain = 0, time.Minute
	addr, _, stop, done := stoppingEdge(t, release, started, timeouts)

	stream, err := http.Get("http://" + addr + "/mcp")
	g.Expect(err).NotTo(HaveOccurred())
	defer stream.Body.Close()
	events := bufio.NewReader(stream.Body)
	first, err := events.ReadString('\n')
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(Equal("data: open\n"))

	type answer struct {
		code int
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answered <- answer{code: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}()
	<-started

	stop()
	// The stream ends, and the port closes to new connections...
	_, err = io.ReadAll(events)
	g.Expect(err).NotTo(HaveOccurred(), "the GET stream ends cleanly")
	g.Eventually(func() error {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err
	}).WithTimeout(10*time.Second).WithPolling(20*time.Millisecond).Should(HaveOccurred(), "the port closes")
	select {
	case <-done:
		t.Fatal("Serve returned with a call in flight")
	default:
	}
	// ...and the call in flight still answers.
	close(release)
	g.Expect(<-answered).To(Equal(answer{code: http.StatusOK, body: "answered"}))
	<-done
}
