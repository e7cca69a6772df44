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

package mcpserver_test

import (
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

// idleSessions is how many sessions BenchmarkIdleSessions opens.
const idleSessions = 10000

// BenchmarkIdleSessions measures what an idle session holds in the manager: 10,000
// sessions opened through the real handler (authentication, the session limits, the
// receiving middleware, the SDK), each an initialize and its
// notifications/initialized, then left alone. B/session is the heap in use and the
// goroutine stacks after, less before, over the sessions (a collection before each
// reading); heap-B/session is the heap alone, goroutines/session the goroutines a
// session keeps. The sessions' ids the benchmark keeps to close them are allocated
// before the first reading.
func BenchmarkIdleSessions(b *testing.B) {
	url := serve(b, mcpserver.Options{MaxSessionsPerAccount: idleSessions, MaxSessions: idleSessions})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	post := func(sid, body string) (string, error) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", sessionRevision)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode >= 300 {
			return "", &statusError{resp.StatusCode}
		}
		return resp.Header.Get("Mcp-Session-Id"), nil
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + sessionRevision +
		`","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	// Each id is copied into ids, allocated before the first reading.
	const idLen = 64
	ids := make([]byte, idleSessions*idLen)
	idAt := func(i int) string { return strings.TrimRight(string(ids[i*idLen:(i+1)*idLen]), "\x00") }

	var heap, stacks, goroutines float64
	runs := 0
	for b.Loop() {
		runs++
		clear(ids)
		before, beforeG := settled()
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= idleSessions {
						return
					}
					sid, err := post("", initialize)
					if err == nil {
						copy(ids[i*idLen:(i+1)*idLen], sid)
						_, err = post(sid, initialized)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		hc.CloseIdleConnections()
		after, afterG := settled()
		heap += float64(after.HeapInuse) - float64(before.HeapInuse)
		stacks += float64(after.StackInuse) - float64(before.StackInuse)
		goroutines += float64(afterG - beforeG)

		b.StopTimer()
		var closing sync.WaitGroup
		for w := range 8 {
			closing.Go(func() {
				for i := w; i < idleSessions; i += 8 {
					req, _ := http.NewRequest(http.MethodDelete, url, nil)
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Mcp-Session-Id", idAt(i))
					if resp, err := hc.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			})
		}
		closing.Wait()
		hc.CloseIdleConnections()
		b.StartTimer()
	}
	per := float64(runs) * idleSessions
	b.ReportMetric((heap+stacks)/per, "B/session")
	b.ReportMetric(heap/per, "heap-B/session")
	b.ReportMetric(goroutines/per, "goroutines/session")
}

// settled is the process's memory and goroutines after a collection.
func settled() (runtime.MemStats, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m, runtime.NumGoroutine()
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

// idleStreams is how many streams BenchmarkIdleStreams opens of each kind.
const idleStreams = 1000

// BenchmarkIdleStreams measures what an idle stream holds in the manager: 1,000
// subscriptions/listen streams of the stateless revision (to tools/list_changed),
// or 1,000 legacy SSE streams with their sessions initialized, each on a connection
// of its own through the real handler, then left open. Their clients are bare TCP
// connections (no reader, no goroutine), so what is measured is the server's: the
// connection it serves, the request it holds, the session. B/stream and the rest as
// in BenchmarkIdleSessions.
func BenchmarkIdleStreams(b *testing.B) {
	url := serve(b, mcpserver.Options{MaxStreamsPerAccount: idleStreams, MaxStreams: idleStreams,
		MaxSessionsPerAccount: idleStreams, MaxSessions: idleStreams})
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	listen := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + revision2026 + `","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"idle","version":"1"}}}}`
	kinds := []struct {
		name string
		// open opens one stream on conn and says when it is served.
		open func(conn net.Conn) error
	}{
		{"listen", func(conn net.Conn) error {
			_, err := io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+token+
				"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: "+revision2026+
				"\r\nMcp-Method: subscriptions/listen\r\nContent-Length: "+strconv.Itoa(len(listen))+"\r\n\r\n"+listen)
			if err == nil {
				err = readUntil(conn, "notifications/subscriptions/acknowledged")
			}
			return err
		}},
		{"legacy", func(conn net.Conn) error {
			_, err := io.WriteString(conn, "GET /mcp/sse HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+token+
				"\r\nAccept: text/event-stream\r\n\r\n")
			if err != nil {
				return err
			}
			var endpoint string
			if endpoint, err = readEndpoint(conn); err != nil {
				return err
			}
			for _, msg := range []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
				req, _ := http.NewRequest(http.MethodPost, "http://"+host+endpoint, strings.NewReader(msg))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					return &statusError{resp.StatusCode}
				}
			}
			return readUntil(conn, `"serverInfo"`)
		}},
	}
	// A session of the session-based revisions with its GET stream open, as the
	// go-sdk client keeps one: the session's cost and its stream's together.
	kinds = append(kinds, struct {
		name string
		open func(conn net.Conn) error
	}{"session-get", func(conn net.Conn) error {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + sessionRevision +
			`","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`
		var sid string
		for _, msg := range []string{body, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Mcp-Protocol-Version", sessionRevision)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				return &statusError{resp.StatusCode}
			}
			if sid == "" {
				sid = resp.Header.Get("Mcp-Session-Id")
			}
		}
		_, err := io.WriteString(conn, "GET /mcp HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+token+
			"\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+sid+"\r\nMcp-Protocol-Version: "+sessionRevision+"\r\n\r\n")
		if err == nil {
			err = readUntil(conn, "\r\n\r\n")
		}
		return err
	}})
	for _, kind := range kinds {
		b.Run(kind.name, func(b *testing.B) {
			conns := make([]net.Conn, idleStreams)
			var heap, stacks, goroutines float64
			runs := 0
			for b.Loop() {
				runs++
				before, beforeG := settled()
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, 8)
				for range 8 {
					wg.Go(func() {
						for {
							i := int(next.Add(1)) - 1
							if i >= idleStreams {
								return
							}
							conn, err := net.Dial("tcp", host)
							if err == nil {
								conns[i] = conn
								err = kind.open(conn)
							}
							if err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				http.DefaultClient.CloseIdleConnections()
				after, afterG := settled()
				heap += float64(after.HeapInuse) - float64(before.HeapInuse)
				stacks += float64(after.StackInuse) - float64(before.StackInuse)
				goroutines += float64(afterG - beforeG)

				b.StopTimer()
				for i, c := range conns {
					if c != nil {
						_ = c.Close()
					}
					conns[i] = nil
				}
				b.StartTimer()
			}
			per := float64(runs) * idleStreams
			b.ReportMetric((heap+stacks)/per, "B/stream")
			b.ReportMetric(heap/per, "heap-B/stream")
			b.ReportMetric(goroutines/per, "goroutines/stream")
		})
	}
}

// readUntil reads conn until what it has read holds marker, through a buffer on the
// stack (a client that keeps nothing).
func readUntil(conn net.Conn, marker string) error {
	_, err := readFor(conn, marker)
	return err
}

// readEndpoint reads a legacy stream's endpoint event: the path to post to.
func readEndpoint(conn net.Conn) (string, error) {
	seen, err := readFor(conn, "\nevent: endpoint\ndata: ")
	if err != nil {
		return "", err
	}
	_, rest, _ := strings.Cut(seen, "\nevent: endpoint\ndata: ")
	for !strings.Contains(rest, "\n") {
		var buf [256]byte
		n, err := conn.Read(buf[:])
		if err != nil {
			return "", err
		}
		rest += string(buf[:n])
	}
	endpoint, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(endpoint), nil
}

// readFor reads conn until marker, and returns what it read.
func readFor(conn net.Conn, marker string) (string, error) {
	var buf [4096]byte
	seen := ""
	for !strings.Contains(seen, marker) {
		n, err := conn.Read(buf[:])
		if err != nil {
			return seen, err
		}
		seen += string(buf[:n])
		if len(seen) > 1<<16 {
			return seen, io.ErrShortBuffer
		}
	}
	return seen, nil
}
