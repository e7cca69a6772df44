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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

// The class these tests watch; no other test subscribes to its instances.
const wearerClass = "zorp/Wearer"

// watchesOf is the manager's gauge of watches of a class's instances (its metrics
// endpoint serves the same registry); -1 when the class has no series.
func watchesOf(t *testing.T, class string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != resources.InstanceWatchesMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == class {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

func newWearer(t *testing.T, ns, name string, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"handle": "watch/" + name}}}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("Wearer")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	NewWithT(t).Expect(k8s.Create(context.Background(), u)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	return u
}

func touchWearer(g Gomega, u *unstructured.Unstructured, n int) {
	g.Expect(k8s.Patch(context.Background(), u, client.RawPatch("application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"spec":{"handle":"watch/touched-%d"}}`, n))))).To(Succeed())
}

// A class whose instances no session subscribes to holds no watch: listing, reading
// and completing its instances are answered from the API server, and its watch starts
// with the first subscription and stops with the last (unsubscribed, or the session
// closed).
func TestAClassWithNoSubscriberHoldsNoWatch(t *testing.T) {
	g := NewWithT(t)
	name := unique("idle-wearer")
	newWearer(t, "default", name, nil)
	uri := resources.InstanceURI("zorp", "Wearer", "default", name)
	g.Eventually(func() float64 { return watchesOf(t, wearerClass) }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(-1.0), "no session subscribes to a wearer")

	cs := connect(t, mcpURL, token, nil)
	g.Eventually(func() map[string]*mcp.Resource { return listResources(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey(uri), "the instance is listed")
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	g.Expect(err).NotTo(HaveOccurred())
	res, err := cs.Complete(context.Background(), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "mcp://sandbar/zorp/Wearer/{namespace}/{name}"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: name},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Completion.Values).To(Equal([]string{name}))
	g.Expect(watchesOf(t, wearerClass)).To(Equal(-1.0), "listing, reading and completing watch nothing")

	g.Expect(cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})).To(Succeed())
	g.Expect(watchesOf(t, wearerClass)).To(Equal(1.0), "a subscription watches its class")
	g.Expect(cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri})).To(Succeed())
	g.Expect(watchesOf(t, wearerClass)).To(Equal(-1.0), "the watch stops with the last subscription")

	g.Expect(cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})).To(Succeed())
	other := connect(t, mcpURL, token, nil)
	g.Expect(other.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})).To(Succeed())
	g.Expect(watchesOf(t, wearerClass)).To(Equal(1.0), "one watch serves every subscriber of a class")
	g.Expect(cs.Close()).To(Succeed())
	g.Consistently(func() float64 { return watchesOf(t, wearerClass) }).WithTimeout(time.Second).WithPolling(poll).
		Should(Equal(1.0), "the other session still subscribes")
	g.Expect(other.Close()).To(Succeed())
	g.Eventually(func() float64 { return watchesOf(t, wearerClass) }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(-1.0), "the watch stops when the last subscribed session closes")
}

// A subscription made while its class is not watched hears the very next change: the
// subscription is answered once the watch has listed the class.
func TestASubscriptionAfterIdleHearsTheNextChange(t *testing.T) {
	g := NewWithT(t)
	for i := range 3 {
		name := unique("late-wearer")
		u := newWearer(t, "default", name, nil)
		uri := resources.InstanceURI("zorp", "Wearer", "default", name)
		g.Eventually(func() float64 { return watchesOf(t, wearerClass) }).WithTimeout(timeout).WithPolling(poll).
			Should(Equal(-1.0), "idle: the class is not watched")
		updated := make(chan string, 16)
		cs := connect(t, mcpURL, token, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
		})
		g.Expect(cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})).To(Succeed())
		touchWearer(g, u, i)
		g.Eventually(updated).WithTimeout(5*time.Second).Should(Receive(Equal(uri)), "the change right after subscribing is told")
		g.Expect(cs.Close()).To(Succeed())
	}
}

// resources/list pages through the instances, read from the API server a page at a
// time: every instance once, with a cursor between pages; a cursor that is not one
// the server gave is -32602.
func TestResourcesListPagesThroughInstances(t *testing.T) {
	g := NewWithT(t)
	batch := unique("page")
	const n = 520 // more than a page
	want := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("%s-%03d", batch, i)
		newWearer(t, "default", name, map[string]string{"sandbar.dev/test-batch": batch})
		want[resources.InstanceURI("zorp", "Wearer", "default", name)] = true
	}
	cs := connect(t, mcpURL, token, nil)
	pages, seen := 0, map[string]int{}
	cursor := ""
	for {
		res, err := cs.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: cursor})
		g.Expect(err).NotTo(HaveOccurred())
		pages++
		for _, r := range res.Resources {
			seen[r.URI]++
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	g.Expect(pages).To(BeNumerically(">", 1), "the list comes in pages")
	for uri := range want {
		g.Expect(seen[uri]).To(Equal(1), "%s listed once", uri)
	}

	var rpc *jsonrpc.Error
	_, err := cs.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: "not-a-cursor"})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))
}
