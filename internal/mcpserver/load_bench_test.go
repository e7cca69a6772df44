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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// loadSessions is how many client sessions call at once in the load benchmarks.
const loadSessions = 50

// loadTool and loadArgs are the read call of the load benchmarks.
const loadTool = "sandbar_class_describe"

var loadArgs = map[string]any{"class": "zorp/SpaceBoot"}

var (
	loadOnce sync.Once
	loadURL  string
	loadErr  error
)

// loadServer is a server configured as a manager's defaults have it: every request
// authenticated, each account rate limited (at a rate the load stays under, so that
// the limiter is consulted and never refuses), requests logged, audit events written.
func loadServer(b *testing.B) string {
	b.Helper()
	loadOnce.Do(func() {
		var tel *telemetry.Telemetry
		if tel, loadErr = telemetry.New(context.Background(), telemetry.Config{Version: "bench", Audit: io.Discard}); loadErr != nil {
			return
		}
		loadURL, loadErr = startServer(store, mcpserver.Options{Telemetry: tel, RateLimit: 1e6, RateBurst: 1e6})
	})
	if loadErr != nil {
		b.Fatal(loadErr)
	}
	return loadURL
}

// loadClients opens n sessions at revision 2025-11-25, each over an HTTP client of
// its own (as n separate clients would be), with a bearer token unless tok is "".
func loadClients(b *testing.B, url, tok string, n int) []*mcp.ClientSession {
	b.Helper()
	out := make([]*mcp.ClientSession, n)
	for i := range out {
		var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
		if tok != "" {
			rt = testenv.Bearer{Token: tok, Base: rt}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cs.Close() })
		out[i] = cs
	}
	return out
}

// runLoad makes b.N calls of a tool from all sessions at once, each session calling
// again as soon as it has its answer, and reports calls/s and the latency of a call.
// ns/op is the wall time over the calls: the inverse of the throughput. Each session
// makes one call before the clock starts, so that what is measured is the steady
// state, not a session's first call.
func runLoad(b *testing.B, sessions []*mcp.ClientSession, name string, args map[string]any) {
	b.Helper()
	for _, cs := range sessions {
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args}); err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
	}
	var next atomic.Int64
	lat := make([][]time.Duration, len(sessions))
	errs := make(chan error, len(sessions))
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu := cpuTime()
	start := time.Now()
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
				if err == nil && res.IsError {
					err = fmt.Errorf("%s: %s", name, text(res))
				}
				if err != nil {
					errs <- err
					return
				}
				lat[i] = append(lat[i], time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	reportCPU(b, cpu)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	reportPercentiles(b, all)
}

// loadResult is the result of the load benchmarks' read call, as a client gets it
// from the server, and its size in JSON.
func loadResult(b *testing.B, url string) (*mcp.CallToolResult, int) {
	b.Helper()
	cs := loadClients(b, url, token, 1)[0]
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: loadTool, Arguments: loadArgs})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %v", loadTool, err, res)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	return res, len(raw)
}

// BenchmarkReadCallsUnderLoad: 50 sessions of one account call sandbar_class_describe
// at once, against a server with the defaults of a manager.
func BenchmarkReadCallsUnderLoad(b *testing.B) {
	url := loadServer(b)
	_, size := loadResult(b, url)
	sessions := loadClients(b, url, token, loadSessions)
	runLoad(b, sessions, loadTool, loadArgs)
	b.ReportMetric(float64(size), "result-bytes")
}

// BenchmarkReadCallsUnderLoadBaseline: 50 sessions call the one read tool of a bare
// go-sdk server (no authentication, no permissions, no redaction, no telemetry),
// which answers the very result sandbar_class_describe gives, so that both send
// the same bytes.
func BenchmarkReadCallsUnderLoadBaseline(b *testing.B) {
	res, size := loadResult(b, loadServer(b))
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: loadTool, InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	url := "http://" + ln.Addr().String() + "/mcp"
	if _, bare := loadResult(b, url); bare != size {
		b.Fatalf("the bare server answers %d bytes, ours %d", bare, size)
	}
	sessions := loadClients(b, url, "", loadSessions)
	runLoad(b, sessions, loadTool, loadArgs)
	b.ReportMetric(float64(size), "result-bytes")
}
