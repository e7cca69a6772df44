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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	warmUp(b, sessions, name, args)
	b.ResetTimer()
	cpu := cpuTime()
	elapsed, lat := loadPhase(b, sessions, b.N, name, args)
	reportCPU(b, cpu)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	reportPercentiles(b, lat)
}

// warmUp makes one call from each session.
func warmUp(b *testing.B, sessions []*mcp.ClientSession, name string, args map[string]any) {
	b.Helper()
	for _, cs := range sessions {
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args}); err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
	}
}

// loadPhase makes n calls of a tool from all sessions at once, each session calling
// again as soon as it has its answer, and gives the wall time over them and the
// latency of each call.
func loadPhase(b *testing.B, sessions []*mcp.ClientSession, n int, name string, args map[string]any) (time.Duration, []time.Duration) {
	b.Helper()
	elapsed, lat, err := testenv.Calls(sessions, n, func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: name, Arguments: args}
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return elapsed, lat
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
// go-sdk server (bareReadServer). Its clients are the same as ours: they send the
// token too, which the bare server ignores.
func BenchmarkReadCallsUnderLoadBaseline(b *testing.B) {
	url, size := bareReadServer(b)
	sessions := loadClients(b, url, token, loadSessions)
	runLoad(b, sessions, loadTool, loadArgs)
	b.ReportMetric(float64(size), "result-bytes")
}

// bareReadServer serves the one read tool of a bare go-sdk server (no
// authentication, no permissions, no redaction, no telemetry), which answers the
// very result sandbar_class_describe gives, so that both send the same bytes, until
// the benchmark ends; and the size of that result.
func bareReadServer(b *testing.B) (string, int) {
	b.Helper()
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
	return url, size
}

// loadTurn is how many calls each arm of BenchmarkReadCallsUnderLoadInTurns makes
// in a turn: small enough that the run of make bench's default benchtime (about
// 2,000 calls an arm) is several turns, each arm going first in half of them.
const loadTurn = 500

// BenchmarkReadCallsUnderLoadInTurns is BenchmarkReadCallsUnderLoad against its
// baseline free of the drift between benchmarks run one after another: the 50
// sessions of each make loadTurn calls, one arm after the other, in turns which goes
// first, until each has made b.N calls. It reports each arm's calls/s over its turns
// and ours against the bare server's (throughput-ratio, the goal's figure); ns/op is
// the pair.
func BenchmarkReadCallsUnderLoadInTurns(b *testing.B) {
	url := loadServer(b)
	bare, _ := bareReadServer(b)
	arms := [2][]*mcp.ClientSession{loadClients(b, url, token, loadSessions), loadClients(b, bare, token, loadSessions)}
	for _, sessions := range arms {
		warmUp(b, sessions, loadTool, loadArgs)
	}
	b.ResetTimer()
	spent := inTurns(b, func(k, n int) time.Duration {
		elapsed, _ := loadPhase(b, arms[k], n, loadTool, loadArgs)
		return elapsed
	})
	b.StopTimer()
	reportTurns(b, spent, "ours", "bare")
}

// reportTurns reports each arm's calls/s over its turns (<first>-calls/s and
// <second>-calls/s, of b.N calls in the time inTurns gave) and the first's against
// the second's (throughput-ratio).
func reportTurns(b *testing.B, spent [2]time.Duration, first, second string) {
	a, c := float64(b.N)/spent[0].Seconds(), float64(b.N)/spent[1].Seconds()
	b.ReportMetric(a, first+"-calls/s")
	b.ReportMetric(c, second+"-calls/s")
	b.ReportMetric(a/c, "throughput-ratio")
}

// inTurns runs two arms until each has made b.N calls, loadTurn calls a turn, in
// turns which goes first, and gives the time each arm took; phase(k, n) makes n
// calls of arm k.
func inTurns(b *testing.B, phase func(k, n int) time.Duration) (spent [2]time.Duration) {
	for done, turn := 0, 0; done < b.N; turn++ {
		n := min(loadTurn, b.N-done)
		for i := range 2 {
			k := (turn + i) % 2
			spent[k] += phase(k, n)
		}
		done += n
	}
	return spent
}

// findBenchInstances is how many SpaceBoots BenchmarkFindAgainstDescribeInTurns
// finds, each find answering them all: five answer about as many bytes as describe
// (3,874 against 3,898), so that the ratio compares the reads, not the answers.
const findBenchInstances = 5

// BenchmarkFindAgainstDescribeInTurns: 50 sessions call sandbar_entity_find of
// findBenchInstances SpaceBoots and, in turns of loadTurn calls which goes first,
// sandbar_class_describe, which reads only the catalog. It reports find's throughput
// against describe's (throughput-ratio) and the lists of SpaceBoots the API server
// counted per find (api-lists/find; 0 when every find was read from the cache).
func BenchmarkFindAgainstDescribeInTurns(b *testing.B) {
	url := loadServer(b)
	for i := range findBenchInstances {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": fmt.Sprintf("Boot %d", i)}}}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("SpaceBoot")
		u.SetNamespace("default")
		u.SetName(fmt.Sprintf("find-bench-%02d", i))
		u.SetLabels(map[string]string{"bench": "find"})
		if err := k8s.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	find := map[string]any{"class": "zorp/SpaceBoot", "labelSelector": "bench=find", "limit": findBenchInstances}
	sessions := loadClients(b, url, token, loadSessions)
	cs := sessions[0]
	for deadline := time.Now().Add(time.Minute); ; { // until the cache has them all
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_entity_find", Arguments: find})
		if err != nil || res.IsError {
			b.Fatalf("find: %v %v", err, text(res))
		}
		if got := res.StructuredContent.(map[string]any)["count"]; got == float64(findBenchInstances) {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("find answers %v instances a minute after %d were made", got, findBenchInstances)
		}
	}
	arms := [2]struct {
		name string
		args map[string]any
	}{{"sandbar_entity_find", find}, {loadTool, loadArgs}}
	for _, a := range arms {
		warmUp(b, sessions, a.name, a.args)
	}
	lists := apiRequests(b, "spaceboots", "LIST")
	b.ResetTimer()
	spent := inTurns(b, func(k, n int) time.Duration {
		elapsed, _ := loadPhase(b, sessions, n, arms[k].name, arms[k].args)
		return elapsed
	})
	b.StopTimer()
	reportTurns(b, spent, "find", "describe")
	b.ReportMetric((apiRequests(b, "spaceboots", "LIST")-lists)/float64(b.N), "api-lists/find")
	for _, a := range arms {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: a.name, Arguments: a.args})
		if err != nil {
			b.Fatal(err)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(raw)), strings.TrimPrefix(a.name, "sandbar_")+"-bytes")
	}
}
