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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// Each benchmark has a baseline measured in the same run; make bench prints the ratios.

// syntheticCatalog is the real catalog (for the accounts) plus 1,000 ready classes of
// 8 slots each, which need no CRDs because tools/list does not touch them.
func syntheticCatalog() *catalog.Store {
	real := store.Load()
	snap := &catalog.Snapshot{
		Classes:    map[string]*catalog.Class{},
		Properties: real.Properties,
		Workflows:  real.Workflows,
		Accounts:   real.Accounts,
	}
	ranges := []metav1alpha1.PropertyRange{"string", "integer", "number", "boolean", "date-time", "keyword", "uuid", "uri"}
	for i := 0; i < 1000; i++ {
		c := &catalog.Class{
			Name: fmt.Sprintf("bench.c%04d", i), Prefix: "bench", Kind: fmt.Sprintf("C%04d", i),
			Description: "A generated class for the benchmark.", Ready: true,
			InstanceAPI: &catalog.InstanceAPI{Group: "bench.sandbar.dev", Version: "v1", Kind: fmt.Sprintf("C%04d", i), Plural: fmt.Sprintf("c%04ds", i), Established: true},
		}
		for j, r := range ranges {
			c.Slots = append(c.Slots, &catalog.Slot{Definition: &catalog.Definition{Field: fmt.Sprintf("slot%d", j), Range: r, Cardinality: "one", Description: "A slot."}, Required: j == 0})
		}
		c.Required = []string{"slot0"}
		snap.Classes[c.Name] = c
	}
	s := catalog.NewStore()
	s.Publish(snap)
	return s
}

func benchSession(b *testing.B, url, tok string) *mcp.ClientSession {
	b.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if tok != "" {
		hc.Transport = testenv.Bearer{Token: tok}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

func listAll(b *testing.B, cs *mcp.ClientSession) int {
	n := 0
	for _, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// bareServer serves tools with a plain go-sdk server: no auth, no permissions, no catalog.
func bareServer(b *testing.B, tools []*mcp.Tool) string {
	b.Helper()
	return serveBare(b, bareSDKServer(tools))
}

// bareSDKServer is a plain go-sdk server with tools that answer nothing.
func bareSDKServer(tools []*mcp.Tool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	for _, t := range tools {
		srv.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	return srv
}

// serveBare serves srv over Streamable HTTP on a loopback port until the benchmark ends.
func serveBare(b *testing.B, srv *mcp.Server) string {
	return serveBareWith(b, srv, nil)
}

// serveBareWith is serveBare with the handler's options.
func serveBareWith(b *testing.B, srv *mcp.Server, opts *mcp.StreamableHTTPOptions) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// renderedServer is bareServer with every page of tools/list rendered once and then
// answered as that JSON.
func renderedServer(b *testing.B, tools []*mcp.Tool) string {
	b.Helper()
	srv := bareSDKServer(tools)
	var pages sync.Map // cursor -> *renderedResult
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r, ok := req.(*mcp.ListToolsRequest)
			if !ok {
				return next(ctx, method, req)
			}
			cursor := ""
			if r.Params != nil {
				cursor = r.Params.Cursor
			}
			if page, ok := pages.Load(cursor); ok {
				return page.(*renderedResult), nil
			}
			res, err := next(ctx, method, req)
			if err != nil {
				return nil, err
			}
			body, err := json.Marshal(res)
			if err != nil {
				return nil, err
			}
			page := &renderedResult{body: body}
			pages.Store(cursor, page)
			return page, nil
		}
	})
	return serveBare(b, srv)
}

// renderedResult is a result sent as JSON rendered before.
type renderedResult struct {
	mcp.ResultBase
	body []byte
}

func (r *renderedResult) MarshalJSON() ([]byte, error) { return r.body, nil }

func toolsOf(b *testing.B, url string) []*mcp.Tool {
	cs := benchSession(b, url, token)
	var out []*mcp.Tool
	for t, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, t)
	}
	return out
}

// BenchmarkToolsList1000Classes lists the tools of a catalog of 1,000 classes,
// per-class surface, as a lean client does: it reads every page whole and follows
// its nextCursor, and decodes nothing else. What it measures is the server's work
// and the bytes on the wire.
func BenchmarkToolsList1000Classes(b *testing.B) {
	url := syntheticServer(b)
	l := newRawLister(b, url, token)
	l.run(b)
}

// BenchmarkToolsList1000ClassesBaseline lists the same 1,000 tools from a bare go-sdk
// server, with the same client.
func BenchmarkToolsList1000ClassesBaseline(b *testing.B) {
	url := syntheticServer(b)
	l := newRawLister(b, bareServer(b, toolsOf(b, url)), "")
	l.run(b)
}

// BenchmarkToolsList1000ClassesBaselineWithoutViews lists the same 1,000 classes'
// tools from the same server without its MCP Apps views (--mcp-views=false): no tool
// carries _meta.ui. Against it, BenchmarkToolsList1000Classes says what the views'
// fields cost a list.
func BenchmarkToolsList1000ClassesBaselineWithoutViews(b *testing.B) {
	url := syntheticServerWith(b, mcpserver.Options{NoViews: true})
	l := newRawLister(b, url, token)
	l.run(b)
}

// BenchmarkToolsList1000ClassesFloor lists the same 1,000 tools from a bare go-sdk
// server that answers each page of tools/list with JSON it rendered once: what the
// SDK's transport alone costs to send the list (reading the request, encoding the
// response message around the rendered result, writing the stream). No server on
// go-sdk answers tools/list in less; BenchmarkToolsList1000Classes against this floor
// says how much of the rest is Sandbar's.
func BenchmarkToolsList1000ClassesFloor(b *testing.B) {
	url := syntheticServer(b)
	l := newRawLister(b, renderedServer(b, toolsOf(b, url)), "")
	l.run(b)
}

// BenchmarkToolsList1000ClassesStateless is BenchmarkToolsList1000Classes for a
// client of the stateless revision (2026-07-28): each list is a request of its own.
func BenchmarkToolsList1000ClassesStateless(b *testing.B) {
	url := syntheticServer(b)
	l := newStatelessLister(url, token)
	l.run(b)
}

// BenchmarkToolsList1000ClassesStatelessBaseline lists the same 1,000 tools from a
// bare go-sdk server of the stateless revision (its handler's Stateless option), with
// the same client.
func BenchmarkToolsList1000ClassesStatelessBaseline(b *testing.B) {
	url := syntheticServer(b)
	bare := serveBareWith(b, bareSDKServer(toolsOf(b, url)), &mcp.StreamableHTTPOptions{Stateless: true})
	l := newStatelessLister(bare, "")
	l.run(b)
}

// BenchmarkToolsList1000ClassesSDKClient lists the 1,000 classes' tools with the go-sdk
// client, which decodes every tool and schema: the same work on both sides of the
// ratio, and most of the time.
func BenchmarkToolsList1000ClassesSDKClient(b *testing.B) {
	url := serveSynthetic(b)
	cs := benchSession(b, url, token)
	waitTools(b, cs, 1000)
	for b.Loop() {
		listAll(b, cs)
	}
}

// BenchmarkToolsList1000ClassesSDKClientBaseline lists the same 1,000 tools from a bare
// go-sdk server with the go-sdk client.
func BenchmarkToolsList1000ClassesSDKClientBaseline(b *testing.B) {
	url := syntheticServer(b)
	cs := benchSession(b, bareServer(b, toolsOf(b, url)), "")
	for b.Loop() {
		listAll(b, cs)
	}
}

// rawLister speaks 2025-11-25 over plain HTTP: one session, tools/list page by page;
// or, made by newStatelessLister, 2026-07-28: no session, every request whole.
type rawLister struct {
	url, token, sid string
	stateless       bool
	id              int
	buf             bytes.Buffer
	// bytes is the size of the last whole list.
	bytes int
}

func newRawLister(b *testing.B, url, tok string) *rawLister {
	b.Helper()
	l := &rawLister{url: url, token: tok}
	l.post(b, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}})
	l.post(b, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if l.sid == "" {
		b.Fatal("no session id")
	}
	return l
}

// newStatelessLister is a rawLister of the stateless revision.
func newStatelessLister(url, tok string) *rawLister {
	return &rawLister{url: url, token: tok, stateless: true}
}

func (l *rawLister) post(b *testing.B, msg map[string]any) []byte {
	if l.stateless {
		params, _ := msg["params"].(map[string]any)
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, l.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if l.stateless {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", msg["method"].(string))
	}
	if l.token != "" {
		req.Header.Set("Authorization", "Bearer "+l.token)
	}
	if l.sid != "" {
		req.Header.Set("Mcp-Session-Id", l.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		l.sid = sid
	}
	l.buf.Reset()
	if _, err := l.buf.ReadFrom(resp.Body); err != nil || resp.StatusCode >= 300 {
		b.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	return l.buf.Bytes()
}

// syntheticServer serves syntheticCatalog with per-class tools until the benchmark
// ends, once every tool is listed.
func syntheticServer(b *testing.B) string {
	b.Helper()
	return syntheticServerWith(b, mcpserver.Options{})
}

// syntheticServerWith is syntheticServer with options; its tool surface is per-class.
func syntheticServerWith(b *testing.B, opts mcpserver.Options) string {
	b.Helper()
	url := serveSyntheticWith(b, opts)
	waitTools(b, benchSession(b, url, token), 1000)
	return url
}

// serveSynthetic serves syntheticCatalog until the benchmark ends: a server of 1,000
// classes left running would weigh on the benchmarks after it.
func serveSynthetic(b *testing.B) string {
	b.Helper()
	return serveSyntheticWith(b, mcpserver.Options{})
}

func serveSyntheticWith(b *testing.B, opts mcpserver.Options) string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	opts.ToolSurface = mcpserver.SurfacePerClass
	url, err := startServerIn(ctx, syntheticCatalog(), opts)
	if err != nil {
		b.Fatal(err)
	}
	return url
}

// run lists the tools for the benchmark's loop and reports the bytes of a list.
func (l *rawLister) run(b *testing.B) {
	for b.Loop() {
		l.list(b)
	}
	b.ReportMetric(float64(l.bytes), "bytes/list")
}

// list reads every page of tools/list.
func (l *rawLister) list(b *testing.B) {
	cursor, total := "", 0
	for {
		l.id++
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		page := l.post(b, map[string]any{"jsonrpc": "2.0", "id": l.id, "method": "tools/list", "params": params})
		total += len(page)
		if !bytes.Contains(page, []byte(`"tools":[`)) {
			b.Fatalf("not a page of tools: %.300s", page)
		}
		// A key, not a value: inside a JSON string its quotes would be escaped. The
		// SDK's result sends it before the tools, so only what comes before them is
		// read.
		const key = `"nextCursor":"`
		head := page[:bytes.Index(page, []byte(`"tools":[`))]
		i := bytes.Index(head, []byte(key))
		if i < 0 {
			break
		}
		rest := head[i+len(key):]
		cursor = string(rest[:bytes.IndexByte(rest, '"')])
	}
	l.bytes = total
}

func waitTools(b *testing.B, cs *mcp.ClientSession, n int) {
	b.Helper()
	if err := waitFor(func() bool { return listAll(b, cs) >= n }); err != nil {
		b.Fatalf("the server never served %d tools: %v", n, err)
	}
}

var benchSeq atomic.Int64

// BenchmarkEntityCreate creates a SpaceBoot through sandbar_entity_create, as the
// sample account (its ServiceAccount impersonated), on the default revision of the
// go-sdk client (stateless).
func BenchmarkEntityCreate(b *testing.B) {
	cs := benchSession(b, serveDirect(b), token)
	create := func() {
		if err := mcpCreate(cs, fmt.Sprintf("bench-mcp-%d", benchSeq.Add(1))); err != nil {
			b.Fatal(err)
		}
	}
	// The API server's first write to a new CRD is slow (about 2 s here), once.
	create()
	m := startMeter(b)
	for b.Loop() {
		create()
	}
	m.report(b)
}

// BenchmarkEntityCreateBaseline creates the same object with a plain client, as the
// tests' administrator.
func BenchmarkEntityCreateBaseline(b *testing.B) {
	benchClientCreate(b, k8s, "bench-go")
}

// BenchmarkAuthenticatedPing pings through authentication with a warm token cache,
// in a session (revision 2025-11-25: the stateless revision's ping carries no _meta,
// which a server of that revision refuses).
func BenchmarkAuthenticatedPing(b *testing.B) {
	cs := loadClients(b, mcpURL, token, 1)[0]
	cpu := cpuTime()
	for b.Loop() {
		if err := cs.Ping(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkAuthenticatedPingBaseline pings a bare go-sdk server without
// authentication, with the same client: it sends the token, which the bare server
// ignores.
func BenchmarkAuthenticatedPingBaseline(b *testing.B) {
	cs := loadClients(b, bareServer(b, nil), token, 1)[0]
	cpu := cpuTime()
	for b.Loop() {
		if err := cs.Ping(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkAuthenticatedPingInTurns is BenchmarkAuthenticatedPing against its
// baseline free of the drift between benchmarks run one after another (on a shared
// machine a bare ping's time moves by a fifth from one run to the next): each
// iteration pings the server of BenchmarkAuthenticatedPing and the bare server of
// BenchmarkAuthenticatedPingBaseline, in turns which goes first. It reports each
// one's mean and median and their ratio; ns/op is the pair.
func BenchmarkAuthenticatedPingInTurns(b *testing.B) {
	sessions := [2]*mcp.ClientSession{loadClients(b, mcpURL, token, 1)[0], loadClients(b, bareServer(b, nil), token, 1)[0]}
	var lat [2][]time.Duration
	ping := func(k int) {
		start := time.Now()
		if err := sessions[k].Ping(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		lat[k] = append(lat[k], time.Since(start))
	}
	ping(0)
	ping(1)
	lat = [2][]time.Duration{}
	i := 0
	for b.Loop() {
		ping(i % 2)
		ping(1 - i%2)
		i++
	}
	reportInTurns(b, lat)
}

// reportInTurns reports the mean and median of each of two arms measured in turns
// (ours, then the baseline) and the ratio of their means.
func reportInTurns(b *testing.B, lat [2][]time.Duration) {
	if len(lat[0]) == 0 || len(lat[1]) == 0 {
		return
	}
	ours, bare := reportArm(b, "ours", lat[0]), reportArm(b, "bare", lat[1])
	b.ReportMetric(ours/bare, "ratio")
}

// reportArm reports the mean and the median of an arm's latencies (who-us/op,
// who-p50-us) and gives the mean, in microseconds. lat is not empty.
func reportArm(b *testing.B, who string, lat []time.Duration) float64 {
	l := slices.Clone(lat)
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	slices.Sort(l)
	mean := float64(sum.Nanoseconds()) / float64(len(l)) / 1e3
	b.ReportMetric(mean, who+"-us/op")
	b.ReportMetric(float64(l[len(l)/2].Microseconds()), who+"-p50-us")
	return mean
}

// BenchmarkThousandTasks creates 1,000 validation tasks (of a class with no
// instances) through tools/call and waits until all have completed; it reports the
// API writes per task, read from the API server's own request counter.
func BenchmarkThousandTasks(b *testing.B) {
	s := newRawSession(b, mcpURL, token)
	for b.Loop() {
		before := apiWrites(b)
		start := time.Now()
		var ids []string
		for i := 0; i < 1000; i++ {
			res := s.call("tools/call", map[string]any{"name": "sandbar_validation_start",
				"arguments": map[string]any{"class": "zorp/Wearer"}, "task": map[string]any{"ttl": 3600000}})
			var created struct {
				Task map[string]any `json:"task"`
			}
			if res.Error != nil || json.Unmarshal(res.Result, &created) != nil {
				b.Fatalf("%+v", res.Error)
			}
			ids = append(ids, created.Task["taskId"].(string))
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "create-ms")
		deadline := time.Now().Add(5 * time.Minute)
		for !func() bool {
			var list metav1alpha1.WorkflowProcessList
			if err := k8s.List(context.Background(), &list, client.InNamespace("default")); err != nil {
				return false
			}
			done := map[string]bool{}
			for _, p := range list.Items {
				done[p.Name] = p.Status.Phase == metav1alpha1.PhaseSucceeded
			}
			for _, id := range ids {
				if !done[id] {
					return false
				}
			}
			return true
		}() {
			if time.Now().After(deadline) {
				b.Fatal("1,000 tasks did not complete in 5 minutes")
			}
			// Listing 1,000 processes is itself work on a 2-core machine: look seldom.
			<-time.After(time.Second)
		}
		b.ReportMetric(float64(apiWrites(b)-before)/1000, "writes/task")
	}
}

// BenchmarkTasksGet measures tasks/get, served from the informer cache.
func BenchmarkTasksGet(b *testing.B) {
	s := newRawSession(b, mcpURL, token)
	id := oneTask(b, s)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if res := s.call("tasks/get", map[string]any{"taskId": id}); res.Error != nil {
			b.Fatal(res.Error.Message)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

// BenchmarkTasksGetBaseline reads the same process directly from the API server.
func BenchmarkTasksGetBaseline(b *testing.B) {
	s := newRawSession(b, mcpURL, token)
	id := oneTask(b, s)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		var p metav1alpha1.WorkflowProcess
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

// oneTask starts a validation of zorp/Wearer as a task and gives its id.
func oneTask(b testing.TB, s *rawSession) string {
	res := s.call("tools/call", map[string]any{"name": "sandbar_validation_start",
		"arguments": map[string]any{"class": "zorp/Wearer"}, "task": map[string]any{}})
	var created struct {
		Task map[string]any `json:"task"`
	}
	if res.Error != nil || json.Unmarshal(res.Result, &created) != nil {
		b.Fatal("starting a task failed")
	}
	id, ok := created.Task["taskId"].(string)
	if !ok {
		b.Fatalf("a task without a taskId: %s", res.Result)
	}
	return id
}

// cpuTime is the CPU time this process (the servers, their clients, the manager
// of the suite) has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time of the process per op since start (cpuTime): the
// work of the server and its client, which other processes on a shared machine
// disturb less than they do the wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-us/op")
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
}

// apiWrites is the API server's count of writes to WorkflowProcesses so far.
func apiWrites(b *testing.B) float64 {
	n, err := testenv.APIRequests(context.Background(), kube.Discovery().RESTClient(), func(labels string) bool {
		return strings.Contains(labels, `resource="workflowprocesses"`) && testenv.Write(labels)
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkAccountCheck1000Classes is the check a ServiceAccount's status reports
// (mcpserver.ClientCheck.Account, which plans every tool of a snapshot as a server
// does on each snapshot) of snapshots of 1,000 classes that change nothing the tools
// show, as a status or an account change does: the verbs' schemas, with their enums
// of class, property and workflow names, are not built and encoded again.
func BenchmarkAccountCheck1000Classes(b *testing.B) { accountCheck(b, false) }

// BenchmarkAccountCheck1000ClassesBaseline checks snapshots that each have a class
// more than the last: every enum of class names changes, and every schema that has
// one is built and encoded.
func BenchmarkAccountCheck1000ClassesBaseline(b *testing.B) { accountCheck(b, true) }

func accountCheck(b *testing.B, grow bool) {
	check, err := mcpserver.NewClientCheck(mcpserver.Options{ToolSurface: mcpserver.SurfaceBoth, NameStyle: mcpserver.StyleUnderscore})
	if err != nil {
		b.Fatal(err)
	}
	base := syntheticCatalog().Load()
	var acct *catalog.Account
	for _, a := range base.Accounts {
		acct = a
		break
	}
	extra := *base.Classes["bench.c0000"]
	i := 0
	for b.Loop() {
		snap := *base
		snap.Version = uint64(i)
		if grow {
			snap.Classes = maps.Clone(base.Classes)
			c := extra
			c.Name, c.Kind = fmt.Sprintf("bench.extra%d", i), fmt.Sprintf("Extra%d", i)
			snap.Classes[c.Name] = &c
		}
		i++
		if p := check.Account(&snap, acct); p.Reason == "" {
			b.Fatal("no verdict")
		}
	}
}

// BenchmarkReadClassView reads SpaceBoot's view (resources/read of
// ui://sandbar/class/zorp/SpaceBoot), which the server makes once per class change
// and then answers from memory; it reports the view's bytes, which are at most
// 200 KiB. The baseline reads the same class's metamodel object
// (mcp://sandbar/meta/Class/zorp.spaceboot), a JSON document made on each read.
func BenchmarkReadClassView(b *testing.B) {
	benchRead(b, "ui://sandbar/class/zorp/SpaceBoot")
}

func BenchmarkReadClassViewBaseline(b *testing.B) {
	benchRead(b, "mcp://sandbar/meta/Class/zorp.spaceboot")
}

func benchRead(b *testing.B, uri string) {
	cs := benchSession(b, mcpURL, token)
	// The suite's classes are served once their CRDs are established.
	read := func() error {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		return err
	}
	if err := waitFor(func() bool { return read() == nil }); err != nil {
		b.Fatalf("%s was never served: %v (last: %v)", uri, err, read())
	}
	var size int
	for b.Loop() {
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			b.Fatal(err)
		}
		size = len(res.Contents[0].Text)
	}
	b.ReportMetric(float64(size), "bytes/read")
}
