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
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// What the create benchmarks share. The suite's manager reaches the API server
// through a fault-injection proxy (faults.Proxy), a hop that a manager in a cluster
// does not take and the baselines do not either: the create benchmark's server
// reaches it straight, as the baselines do.

// directCluster is the manager's way to the cluster, but with the clients that act
// as accounts going straight to the API server.
func directCluster() mcpserver.Cluster {
	c := managerCluster
	cfg := rest.CopyConfig(mgrConfig)
	cfg.Host = apiConfig.Host
	c.Connection.Config = cfg
	return c
}

// serveDirect starts an MCP server with the suite's defaults on directCluster.
func serveDirect(b *testing.B) string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	u, err := startServerWith(ctx, store, mcpserver.Options{}, directCluster())
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// benchSpaceBoot is the object every create benchmark makes, named name.
func benchSpaceBoot(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "Bench", "price": 1.5, "tentacleCount": int64(4)}}}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// benchClientCreate creates SpaceBoots with c, once before the timed loop (the API
// server's first write to a new CRD is slow, and a client discovers the resource).
func benchClientCreate(b *testing.B, c client.Client, prefix string) {
	create := func() {
		if err := c.Create(context.Background(), benchSpaceBoot(fmt.Sprintf("%s-%d", prefix, benchSeq.Add(1)))); err != nil {
			b.Fatal(err)
		}
	}
	create()
	m := startMeter(b)
	for b.Loop() {
		create()
	}
	m.report(b)
}

// mcpCreate makes benchSpaceBoot(name) through sandbar_entity_create in cs.
func mcpCreate(cs *mcp.ClientSession, name string) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_entity_create", Arguments: map[string]any{
		"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Bench", "price": 1.5, "tentacleCount": 4},
		"metadata": map[string]any{"name": name},
	}})
	if err == nil && res.IsError {
		err = fmt.Errorf("%v", res.Content)
	}
	return err
}

// BenchmarkEntityCreateInTurns is BenchmarkEntityCreate against its baselines free of
// the drift between benchmarks run one after another (the API server's and etcd's
// writes move by half a millisecond from one minute to the next): each iteration
// creates the same object four times, in turns which goes first: through
// sandbar_entity_create (ours), with the tests' administrator's client (bare:
// BenchmarkEntityCreateBaseline's), with the client the manager acts as the account
// with (imp: BenchmarkEntityCreateBaselineImpersonated's), and through a bare go-sdk
// server whose tool of the same name makes the create with the administrator's client
// (floor: the least a create through any go-sdk server costs, see floorCreateServer).
// It reports each one's mean and median, ours against bare (ratio), against imp
// (ratio-imp) and against floor (ratio-floor), and floor against bare (floor-ratio:
// what the go-sdk's round trip alone adds to a create); ns/op is the four. The client
// is the go-sdk's as it comes, which speaks the stateless revision (2026-07-28) to
// both servers.
func BenchmarkEntityCreateInTurns(b *testing.B) {
	entityCreateInTurns(b, false)
}

// BenchmarkEntityCreateInTurnsSession is BenchmarkEntityCreateInTurns with clients of
// revision 2025-11-25, in a session with each server.
func BenchmarkEntityCreateInTurnsSession(b *testing.B) {
	entityCreateInTurns(b, true)
}

func entityCreateInTurns(b *testing.B, session bool) {
	connect := func(url, tok string) *mcp.ClientSession { return benchSession(b, url, tok) }
	if session {
		connect = func(url, tok string) *mcp.ClientSession { return loadClients(b, url, tok, 1)[0] }
	}
	cs := connect(serveDirect(b), token)
	account := accountClient(b)
	floor := connect(serveBareWith(b, floorCreateServer(k8s), &mcp.StreamableHTTPOptions{Stateless: !session}), "")
	create := [4]func(name string) error{
		func(name string) error { return mcpCreate(cs, name) },
		func(name string) error { return k8s.Create(context.Background(), benchSpaceBoot(name)) },
		func(name string) error { return account.Create(context.Background(), benchSpaceBoot(name)) },
		func(name string) error { return mcpCreate(floor, name) },
	}
	var lat [4][]time.Duration
	run := func(k int) {
		name := fmt.Sprintf("bench-turns-%d", benchSeq.Add(1))
		start := time.Now()
		if err := create[k](name); err != nil {
			b.Fatal(err)
		}
		lat[k] = append(lat[k], time.Since(start))
	}
	for k := range lat { // the API server's first write to a new CRD is slow, once
		run(k)
	}
	lat = [4][]time.Duration{}
	i := 0
	for b.Loop() {
		for k := range lat {
			run((i + k) % len(lat))
		}
		i++
	}
	if len(lat[0]) == 0 {
		return
	}
	ours, bare, imp, least := reportArm(b, "ours", lat[0]), reportArm(b, "bare", lat[1]), reportArm(b, "imp", lat[2]), reportArm(b, "floor", lat[3])
	b.ReportMetric(ours/bare, "ratio")
	b.ReportMetric(ours/imp, "ratio-imp")
	b.ReportMetric(ours/least, "ratio-floor")
	b.ReportMetric(least/bare, "floor-ratio")
}

// floorCreateServer is a bare go-sdk server (no authentication, no catalog, no
// middleware) with one tool, sandbar_entity_create, that takes mcpCreate's arguments,
// creates the SpaceBoot they describe with c and answers the created object as JSON
// text: the least a server built on the go-sdk can do for the same call.
func floorCreateServer(c client.Client) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "sandbar_entity_create", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Attributes map[string]any `json:"attributes"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			u := benchSpaceBoot(args.Metadata.Name)
			u.Object["spec"] = args.Attributes
			if err := c.Create(ctx, u); err != nil {
				return nil, err
			}
			out, err := json.Marshal(u.Object)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	return srv
}

// BenchmarkEntityCreateBaselineImpersonated creates the same object as
// BenchmarkEntityCreate with the client the manager acts as the account with
// (identity.Identities: the account's Kubernetes ServiceAccount impersonated), on the
// same connection as the benchmark's server, without MCP. Against
// BenchmarkEntityCreateBaseline it is what impersonation costs the API server (an
// authorization of the impersonation and RBAC for the ServiceAccount, where the
// baseline's administrator passes as system:masters); against BenchmarkEntityCreate it
// is what the MCP call adds.
func BenchmarkEntityCreateBaselineImpersonated(b *testing.B) {
	benchClientCreate(b, accountClient(b), "bench-imp")
}

// accountClient is the client the manager acts as the sample account with, on the
// connection of the create benchmarks' server.
func accountClient(b *testing.B) client.Client {
	b.Helper()
	acct := store.Load().Accounts["claude"]
	if acct == nil {
		b.Fatal("no account claude")
	}
	c, err := identity.New(directCluster().Connection, nil).Client(acct)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkEntityCreateImpersonation measures what impersonation costs a create,
// free of the drift between benchmarks run one after another (the API server's and
// etcd's times move by half a millisecond from one minute to the next on a shared
// machine): each iteration makes the same create twice, as the administrator
// (BenchmarkEntityCreateBaseline's client) and as the account
// (BenchmarkEntityCreateBaselineImpersonated's), in turns which goes first. It reports
// each one's mean and median as the client sees it, and the API server's time in its
// handler for each (apiserver_flowcontrol_request_execution_seconds: the
// administrator's requests are of the exempt flow schema, the account's of
// service-accounts), which takes in the authorization of the request (the
// administrator's figure also holds the few requests the suite's manager, which
// authenticates as the administrator too, makes meanwhile: leases mostly); ns/op is
// the pair.
func BenchmarkEntityCreateImpersonation(b *testing.B) {
	clients := [2]client.Client{k8s, accountClient(b)}
	var lat [2][]time.Duration
	create := func(k int) {
		start := time.Now()
		if err := clients[k].Create(context.Background(), benchSpaceBoot(fmt.Sprintf("bench-pair-%d", benchSeq.Add(1)))); err != nil {
			b.Fatal(err)
		}
		lat[k] = append(lat[k], time.Since(start))
	}
	create(0)
	create(1)
	lat = [2][]time.Duration{}
	// A scrape of /metrics is itself an exempt request, counted once it is answered:
	// the second of two scrapes holds the first one's, which stands for its own (and
	// is taken off the administrator's figures below).
	first := handlerTimes(b)
	before := handlerTimes(b)
	scrape := before[0].seconds - first[0].seconds
	i := 0
	for b.Loop() {
		create(i % 2)
		create(1 - i%2)
		i++
	}
	after := handlerTimes(b)
	if b.N == 0 {
		return
	}
	for k, who := range []string{"admin", "impersonated"} {
		reportArm(b, who, lat[k])
		seconds, n := after[k].seconds-before[k].seconds, after[k].count-before[k].count
		if k == 0 {
			seconds, n = seconds-scrape, n-1
		}
		// With a handful of creates (-benchtime 1x) the scrape taken off can be more
		// than what is left: no figure then, rather than a negative one.
		if n > 0 && seconds > 0 {
			b.ReportMetric(seconds*1e6/n, who+"-api-handler-us")
		}
	}
}

// handlerTimes are the API server's handler time and request count of the exempt
// flow schema (the administrator) and of service-accounts (the account), by its own
// apiserver_flowcontrol_request_execution_seconds.
func handlerTimes(b *testing.B) [2]struct{ seconds, count float64 } {
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var t [2]struct{ seconds, count float64 }
	for _, line := range strings.Split(string(raw), "\n") {
		k := -1
		switch {
		case strings.Contains(line, `flow_schema="exempt"`):
			k = 0
		case strings.Contains(line, `flow_schema="service-accounts"`):
			k = 1
		}
		if k < 0 || !strings.Contains(line, `type="regular"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_flowcontrol_request_execution_seconds_sum{"):
			t[k].seconds += v
		case strings.HasPrefix(line, "apiserver_flowcontrol_request_execution_seconds_count{"):
			t[k].count += v
		}
	}
	return t
}

// meter measures, over a benchmark's loop, the CPU time of this process (the
// client, and for BenchmarkEntityCreate the MCP server and the manager too), which
// a shared machine moves far less than the wall time, and, by the API server's own
// metrics, the requests it served (its apiserver_request_total, every resource and
// verb), the time it spent on the creates (apiserver_request_duration_seconds of the
// POSTs of SpaceBoots), the part of that its filters took before the handler
// (apiserver_request_filter_duration_seconds: authentication, impersonation,
// authorization, priority and fairness, audit), and the CPU time of its process.
type meter struct {
	cpu    time.Duration
	api    apiFigures
	apiCPU time.Duration
}

func startMeter(b *testing.B) *meter {
	return &meter{cpu: cpuTime(), api: scrapeAPI(b), apiCPU: apiServerCPU()}
}

// report adds cpu-us/op, api-requests/op, api-us/op (the API server's time for the
// create), api-filters-us/op (of which its filters) and api-cpu-us/op (its process).
func (m *meter) report(b *testing.B) {
	api, apiCPU := scrapeAPI(b), apiServerCPU()
	if b.N == 0 {
		return
	}
	n := float64(b.N)
	reportCPU(b, m.cpu)
	b.ReportMetric((api.requests-m.api.requests)/n, "api-requests/op")
	b.ReportMetric((api.createSeconds-m.api.createSeconds)*1e6/n, "api-us/op")
	b.ReportMetric((api.filterSeconds-m.api.filterSeconds)*1e6/n, "api-filters-us/op")
	if apiCPU > 0 && m.apiCPU > 0 {
		b.ReportMetric(float64((apiCPU-m.apiCPU).Microseconds())/n, "api-cpu-us/op")
	}
}

// apiFigures are counters of the API server's /metrics.
type apiFigures struct {
	requests, createSeconds, filterSeconds float64
}

// scrapeAPI reads the API server's counters, by its own count.
func scrapeAPI(b *testing.B) apiFigures {
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var f apiFigures
	for _, line := range strings.Split(string(raw), "\n") {
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			f.requests += v
		case strings.HasPrefix(line, "apiserver_request_duration_seconds_sum{") &&
			strings.Contains(line, `resource="spaceboots"`) && strings.Contains(line, `verb="POST"`):
			f.createSeconds += v
		case strings.HasPrefix(line, "apiserver_request_filter_duration_seconds_sum{"):
			f.filterSeconds += v
		}
	}
	return f
}

// apiServerCPU is the CPU time of the suite's kube-apiserver process (found by its
// port in /proc), or 0 where that cannot be read.
func apiServerCPU() time.Duration {
	u, err := url.Parse(apiConfig.Host)
	if err != nil {
		return 0
	}
	return testenv.CPU(testenv.Processes(func(args []string) bool {
		return strings.HasSuffix(args[0], "kube-apiserver") && slices.Contains(args, "--secure-port="+u.Port())
	}))
}
