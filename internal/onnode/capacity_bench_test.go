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

package onnode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

const (
	// capacitySessions is how many clients call at once, as in the benchmarks the
	// capacity model takes its figures from.
	capacitySessions = 50
	// capacityCalls is how many calls each phase makes, all clients together.
	capacityCalls = 6000
	// capacityInstances is how many SpaceBoots the finds answer.
	capacityInstances = 5
)

// BenchmarkCapacityOnANode checks the capacity model of docs/performance.md where a
// user runs Sandbar: the chart installed on the one-node cluster, the manager image
// in pods behind the Service, the Service's balancing, and the Kubernetes API server
// of the cluster. With one replica and then two, 50 clients of the stateless revision
// (each its own connections, as 50 agents are) make capacityCalls calls of each kind:
// sandbar_class_describe (the catalog) and sandbar_entity_find of five SpaceBoots (the
// informer cache). For each replica count and kind it reports the calls a second, the
// CPU the manager pods spent a call (and how many cores they kept busy), the API
// server's requests and CPU a call, and the managers' RSS. The model predicts that a
// call costs a replica the same CPU whichever replica serves it and however many there
// are, and that neither read asks the API server anything: the figures at two
// replicas check that. Run with `make bench-cluster`.
func BenchmarkCapacityOnANode(b *testing.B) {
	k := newKube(b)
	k.namespace(b)
	k.helm(b, os.Getenv("HELM4"), "install", release, chart(), "--namespace", namespace,
		"--set", "image.repository="+repository(), "--set-string", "image.tag="+tag(), "--set", "image.pullPolicy=Never",
		"--set", "bootstrap.enabled=true", "--set", "replicaCount=1",
		// The clients are one account: its rate limit is not what is measured.
		"--set", "mcp.rateLimit=1000000", "--set", "mcp.rateBurst=1000000", "--wait", "--timeout", "4m")
	k.readyReplicas(b, 1)
	k.kubectl(b, "apply", "-f", filepath.Join(testenv.RepoRoot(), "config", "samples", "properties.yaml"),
		"-f", filepath.Join(testenv.RepoRoot(), "config", "samples", "classes.yaml"))
	k.classReady(b, "zorp.spaceboot")
	for i := range capacityInstances {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": fmt.Sprintf("Boot %d", i)}}}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("SpaceBoot")
		u.SetNamespace(namespace) // the bootstrap account's own
		u.SetName(fmt.Sprintf("capacity-%02d", i))
		if err := k.c.Create(context.Background(), u); err != nil {
			b.Fatal(err)
		}
	}
	k.service(b)
	kinds := []struct {
		name string
		call func() *mcp.CallToolParams // a call's params are the SDK's to change: one each
	}{
		{"describe", func() *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "sandbar_class_describe", Arguments: map[string]any{"class": "zorp/SpaceBoot"}}
		}},
		{"find", func() *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "sandbar_entity_find", Arguments: map[string]any{"class": "zorp/SpaceBoot"}}
		}},
	}
	api := apiServerOf(b)
	for _, replicas := range []int{1, 2} {
		k.kubectl(b, "-n", namespace, "scale", "deployment/"+release, "--replicas="+strconv.Itoa(replicas))
		k.readyReplicas(b, replicas)
		clients := capacityClients(b, k)
		for _, kind := range kinds {
			// Until every replica has the SpaceBoots cached: each client's first calls
			// go to one replica or another.
			for range 3 {
				capacityPhase(b, clients, capacitySessions*4, kind.call, true)
			}
			managers, apiCPU, requests := managerProcesses(b, replicas), api.cpu(), api.requests(b)
			elapsed := capacityPhase(b, clients, capacityCalls, kind.call, false)
			after := managerProcesses(b, replicas)
			prefix := fmt.Sprintf("r%d-%s-", replicas, kind.name)
			mgrCPU := testenv.CPU(after) - testenv.CPU(managers)
			b.ReportMetric(capacityCalls/elapsed.Seconds(), prefix+"calls/s")
			b.ReportMetric(float64(mgrCPU.Microseconds())/capacityCalls, prefix+"mgr-cpu-us/call")
			b.ReportMetric(mgrCPU.Seconds()/elapsed.Seconds(), prefix+"mgr-cores")
			b.ReportMetric((api.requests(b)-requests)/capacityCalls, prefix+"api-req/call")
			b.ReportMetric(float64((api.cpu()-apiCPU).Microseconds())/capacityCalls, prefix+"api-cpu-us/call")
			var rss int64
			for _, p := range after {
				rss += p.RSS
			}
			b.ReportMetric(float64(rss)/float64(len(after))/(1<<20), prefix+"mgr-rss-MiB")
		}
		for _, cs := range clients {
			_ = cs.Close()
		}
	}
}

// capacityClients are capacitySessions clients of the stateless revision, each with
// connections of its own (which the Service spreads over the replicas).
func capacityClients(b *testing.B, k *kube) []*mcp.ClientSession {
	out := make([]*mcp.ClientSession, capacitySessions)
	for i := range out {
		out[i] = k.connect(b, "2026-07-28")
	}
	return out
}

// capacityPhase makes n calls from all clients at once, each calling again as soon
// as it has its answer, and gives the wall time over them. warm: the calls are
// warm-up calls, and a find that answers fewer SpaceBoots than there are is not yet a
// failure (a replica's informer is syncing).
func capacityPhase(b *testing.B, clients []*mcp.ClientSession, n int, call func() *mcp.CallToolParams, warm bool) time.Duration {
	elapsed, _, err := testenv.Calls(clients, n, call, func(res *mcp.CallToolResult) error {
		if warm || call().Name != "sandbar_entity_find" {
			return nil
		}
		if got, _ := res.StructuredContent.(map[string]any)["count"].(float64); got != capacityInstances {
			return fmt.Errorf("a find answered %v SpaceBoots of %d", got, capacityInstances)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return elapsed
}

// managerProcesses are the manager processes of the release's pods, as the node's
// /proc shows them (the image's entrypoint is /manager); it fails unless there are n.
func managerProcesses(b *testing.B, n int) []testenv.Process {
	ps := testenv.Processes(func(args []string) bool {
		return args[0] == "/manager" && slices.Contains(args, "--leader-election-namespace="+namespace)
	})
	if len(ps) != n {
		b.Fatalf("%d manager processes on the node, want %d", len(ps), n)
	}
	return ps
}

// apiServer is the cluster's API server: its process and its metrics.
type apiServer struct{ k kubernetes.Interface }

func apiServerOf(b *testing.B) *apiServer {
	k, err := kubernetes.NewForConfig(cluster.Rest)
	if err != nil {
		b.Fatal(err)
	}
	return &apiServer{k: k}
}

// cpu is the CPU time of the node's kube-apiserver (in the node's network
// namespace, on port 6443; the host reaches it through a forwarded port).
func (a *apiServer) cpu() time.Duration {
	return testenv.CPU(testenv.Processes(func(args []string) bool {
		return strings.HasSuffix(args[0], "kube-apiserver") && slices.Contains(args, "--secure-port=6443") &&
			slices.Contains(args, "--authorization-mode=Node,RBAC")
	}))
}

// requests is how many requests the API server has answered, of every client and
// verb: what the node's own components ask meanwhile (the kubelet's, the leases) is
// counted too, a few a second.
func (a *apiServer) requests(b *testing.B) float64 {
	n, err := testenv.APIRequests(context.Background(), a.k.Discovery().RESTClient(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
