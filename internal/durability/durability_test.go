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

// Package durability_test proves that tasks live in the cluster, not in a process:
// a task survives the manager that started it, and any replica answers for it.
package durability_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

var (
	env   *envtest.Environment
	cfg   *rest.Config
	k8s   client.Client
	token string
)

const timeout = 60 * time.Second

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Keys of the lowest bcrypt cost: the suite issues many (apikey.Cost).
	apikey.Cost = bcrypt.MinCost
	testenv.SetLogger()
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	defer removeManagerBinary()
	cfg = env.Config
	if k8s, err = client.New(cfg, client.Options{Scheme: controllers.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	if err := testenv.ApplySamples(ctx, k8s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if token, err = apikey.Issue(ctx, k8s, "default", "claude"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// replica is one manager: leader-elected reconcilers and an MCP server.
type replica struct {
	url  string
	stop func()
}

func startReplica(t *testing.T, name string) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mgr, store, err := controllers.NewManager(ctx, cfg, ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                true,
		LeaderElectionID:              "sandbar-durability",
		LeaderElectionNamespace:       "default",
		LeaderElectionReleaseOnCancel: true,
		// Each replica registers the same controllers; their names need not be unique here.
		Controller: config.Controller{SkipNameValidation: ptr(true)},
	}, controllers.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{BindAddress: "127.0.0.1:0", ToolSurface: mcpserver.SurfaceBoth,
		NameStyle: mcpserver.StyleUnderscore, Version: name},
		store, mcpserver.ClusterOf(mgr))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ctx, ln) }()
	done := make(chan struct{})
	go func() { _ = mgr.Start(ctx); close(done) }()
	r := &replica{url: "http://" + ln.Addr().String() + "/mcp"}
	var once atomic.Bool
	r.stop = func() {
		if once.CompareAndSwap(false, true) {
			cancel()
			<-done
		}
	}
	t.Cleanup(r.stop)
	NewWithT(t).Eventually(func() bool {
		a := store.Load().Accounts["claude"]
		return a != nil && a.Ready && store.Load().Workflows["sandbar.import"] != nil
	}).WithTimeout(timeout).WithPolling(50 * time.Millisecond).Should(BeTrue())
	return r
}

// rpc sends one JSON-RPC request on a fresh session and returns the result or error.
func rpc(t *testing.T, url, method string, params any) (map[string]any, map[string]any) {
	t.Helper()
	return rpcAs(t, url, token, method, params)
}

// rpcAs is rpc with the given account's token.
func rpcAs(t *testing.T, url, token, method string, params any) (map[string]any, map[string]any) {
	t.Helper()
	sid := ""
	post := func(id int, method string, params any) (map[string]any, map[string]any) {
		msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if id > 0 {
			msg["id"] = id
		}
		body, _ := json.Marshal(msg)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			sid = s
		}
		if id == 0 {
			return nil, nil
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			// An event of the SDK's stream, or one JSON body (ping and tasks/get of a
			// session may be answered so).
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok && strings.HasPrefix(sc.Text(), "{") {
				data, ok = sc.Text(), true
			}
			if !ok {
				continue
			}
			var m struct {
				Result map[string]any `json:"result"`
				Error  map[string]any `json:"error"`
			}
			if json.Unmarshal([]byte(data), &m) == nil && (m.Result != nil || m.Error != nil) {
				return m.Result, m.Error
			}
		}
		t.Fatalf("no answer to %s (HTTP %d)", method, resp.StatusCode)
		return nil, nil
	}
	post(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "durability", "version": "1"}})
	post(0, "notifications/initialized", nil)
	// The session ends with the call, as a client's does: a poll of many calls must
	// not hold the account's sessions (--max-sessions-per-account) open.
	defer func() {
		if sid == "" {
			return
		}
		req, _ := http.NewRequest(http.MethodDelete, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	return post(2, method, params)
}

func taskStatus(t *testing.T, url, id string) string { return taskStatusAs(t, url, token, id) }

func taskStatusAs(t *testing.T, url, token, id string) string {
	res, rpcErr := rpcAs(t, url, token, "tasks/get", map[string]any{"taskId": id})
	if rpcErr != nil {
		return fmt.Sprint(rpcErr)
	}
	return res["status"].(string)
}

func process(t *testing.T, id string) *metav1alpha1.WorkflowProcess {
	var p metav1alpha1.WorkflowProcess
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p)).To(Succeed())
	return &p
}

// A task started through one manager finishes under the next one after the first
// stops in the middle of it, and tasks/get answers for the same id.
func TestTaskSurvivesManagerRestart(t *testing.T) {
	g := NewWithT(t)
	first := startReplica(t, "first")
	var items []any
	for i := 0; i < 3000; i++ {
		items = append(items, map[string]any{"class": "zorp/SpaceBoot", "name": fmt.Sprintf("restart-%04d", i),
			"attributes": map[string]any{"name": "Durable", "tentacleCount": i % 64}})
	}
	res, rpcErr := rpc(t, first.url, "tools/call", map[string]any{"name": "sandbar_project_import",
		"arguments": map[string]any{"bundle": map[string]any{"items": items}}, "task": map[string]any{}})
	g.Expect(rpcErr).To(BeNil())
	id := res["task"].(map[string]any)["taskId"].(string)

	// Stop the first manager once the work has begun.
	g.Eventually(func() int64 {
		if p := process(t, id).Status.Progress; p != nil {
			return p.Done
		}
		return 0
	}).WithTimeout(timeout).WithPolling(20 * time.Millisecond).Should(BeNumerically(">", 0))
	first.stop()
	stopped := process(t, id)
	g.Expect(stopped.Status.Phase).To(Equal(metav1alpha1.PhaseRunning), "the first manager stopped before the task ended")
	g.Expect(stopped.Status.Progress.Done).To(BeNumerically("<", 3000))

	second := startReplica(t, "second")
	// 3,000 creates take a while on two cores under the race detector; the test is
	// about finishing, not speed, and says how far it got when it does not.
	g.Eventually(func() string { return taskStatus(t, second.url, id) }).WithTimeout(4*time.Minute).WithPolling(100*time.Millisecond).
		Should(Equal("completed"), func() string { return fmt.Sprintf("progress: %+v", process(t, id).Status.Progress) })
	result, rpcErr := rpc(t, second.url, "tasks/result", map[string]any{"taskId": id})
	g.Expect(rpcErr).To(BeNil())
	sc := result["structuredContent"].(map[string]any)
	g.Expect(sc["created"].(float64) + sc["unchanged"].(float64)).To(Equal(3000.0))
	g.Expect(sc["failed"]).To(Equal(0.0))
}

// Two managers against one API server: a task created through one is read and
// cancelled through the other.
func TestAnyReplicaAnswersForAnyTask(t *testing.T) {
	g := NewWithT(t)
	a := startReplica(t, "a")
	b := startReplica(t, "b")
	res, rpcErr := rpc(t, a.url, "tools/call", map[string]any{"name": "sandbar_workflow_start-process",
		"arguments": map[string]any{"workflow": "order.fulfillment"}, "task": map[string]any{}})
	g.Expect(rpcErr).To(BeNil())
	id := res["task"].(map[string]any)["taskId"].(string)

	g.Expect(taskStatus(t, b.url, id)).To(Equal("working"))
	res, rpcErr = rpc(t, b.url, "tasks/cancel", map[string]any{"taskId": id})
	g.Expect(rpcErr).To(BeNil())
	g.Expect(res["status"]).To(Equal("cancelled"))
	g.Eventually(func() string { return taskStatus(t, a.url, id) }).WithTimeout(timeout).WithPolling(50 * time.Millisecond).
		Should(Equal("cancelled"))
}

func ptr[T any](v T) *T { return &v }

// An export's result outlives the manager that made it: after it stops, a new
// replica gives every item, page by page, through tasks/result.
func TestExportResultIsReadInFullAfterAManagerRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	first := startReplica(t, "exporter")
	const n = 250
	for i := range n {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "Exported"}}}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("SpaceBoot")
		u.SetNamespace("default")
		u.SetName(fmt.Sprintf("exported-%03d", i))
		// The first waits for the class's instance API, which the replica makes.
		g.Eventually(func() error { return client.IgnoreAlreadyExists(k8s.Create(ctx, u.DeepCopy())) }).
			WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	}
	var boots unstructured.UnstructuredList
	boots.SetAPIVersion("zorp.sandbar.dev/v1")
	boots.SetKind("SpaceBootList")
	g.Expect(k8s.List(ctx, &boots, client.InNamespace("default"))).To(Succeed())
	want := map[string]bool{}
	for _, b := range boots.Items {
		want[b.GetName()] = true
	}
	res, rpcErr := rpc(t, first.url, "tools/call", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}, "task": map[string]any{}})
	g.Expect(rpcErr).To(BeNil())
	id := res["task"].(map[string]any)["taskId"].(string)
	g.Eventually(func() string { return taskStatus(t, first.url, id) }).WithTimeout(timeout).WithPolling(100 * time.Millisecond).
		Should(Equal("completed"))
	first.stop()

	second := startReplica(t, "reader")
	got := map[string]bool{}
	params := map[string]any{"taskId": id}
	for pages := 0; ; pages++ {
		g.Expect(pages).To(BeNumerically("<", len(want)), "the pages end")
		result, rpcErr := rpc(t, second.url, "tasks/result", params)
		g.Expect(rpcErr).To(BeNil())
		sc := result["structuredContent"].(map[string]any)
		for _, it := range sc["items"].([]any) {
			name := it.(map[string]any)["name"].(string)
			g.Expect(got[name]).To(BeFalse(), "%s came twice", name)
			got[name] = true
		}
		next, _ := sc["continue"].(string)
		if next == "" {
			break
		}
		params = map[string]any{"taskId": id, "continue": next}
	}
	g.Expect(got).To(Equal(want))
}
