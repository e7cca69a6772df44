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
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
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

// BenchmarkEntityCreateBaselineImpersonated creates the same object as
// BenchmarkEntityCreate with the client the manager acts as the account with
// (identity.Identities: the account's Kubernetes ServiceAccount impersonated), on the
// same connection as the benchmark's server, without MCP. Against
// BenchmarkEntityCreateBaseline it is what impersonation costs the API server (an
// authorization of the impersonation and RBAC for the ServiceAccount, where the
// baseline's administrator passes as system:masters); against BenchmarkEntityCreate it
// is what the MCP call adds.
func BenchmarkEntityCreateBaselineImpersonated(b *testing.B) {
	acct := store.Load().Accounts["claude"]
	if acct == nil {
		b.Fatal("no account claude")
	}
	c, err := identity.New(directCluster().Connection, nil).Client(acct)
	if err != nil {
		b.Fatal(err)
	}
	benchClientCreate(b, c, "bench-imp")
}

// meter measures, over a benchmark's loop, the CPU time of this process (the
// client, and for BenchmarkEntityCreate the MCP server and the manager too), which
// a shared machine moves far less than the wall time, and the requests the API
// server served (its apiserver_request_total, every resource and verb).
type meter struct {
	cpu      time.Duration
	requests float64
}

func startMeter(b *testing.B) *meter {
	return &meter{cpu: cpuTime(), requests: apiRequests(b)}
}

// report adds cpu-us/op and api-requests/op.
func (m *meter) report(b *testing.B) {
	requests := apiRequests(b) - m.requests
	if b.N == 0 {
		return
	}
	reportCPU(b, m.cpu)
	b.ReportMetric(requests/float64(b.N), "api-requests/op")
}

// apiRequests is the number of requests the API server has served, by its own count.
func apiRequests(b *testing.B) float64 {
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
			total += v
		}
	}
	return total
}
