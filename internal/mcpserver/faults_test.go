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
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

// holdAPIServer holds the API server for the rest of the test (as a paused or overloaded one
// does), unless the test releases it first.
func holdAPIServer(t *testing.T) {
	t.Helper()
	apiServer.Hold()
	t.Cleanup(apiServer.Release)
}

// A call that the API server does not answer gets, within the call's deadline, an
// answer the model can act on: what happened, whether anything may have changed,
// what to look at, when to retry. The first call after the API server is back works.
func TestPausedAPIServerGetsAnActionableAnswerWithinTheDeadline(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, serve(t, mcpserver.Options{CallTimeout: 5 * time.Second}), token, nil)
	listTools(t, cs)
	name := unique("paused-boot")

	holdAPIServer(t)
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Paused", "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(Equal("the Kubernetes API server did not answer within 5s. The change may or may not have been made: " +
		"look with sandbar_entity_find (or read the instance's resource) before you call sandbar_class_zorp_SpaceBoot again (after 5 s)."))

	res = callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(HavePrefix("the Kubernetes API server did not answer within 5s. Nothing was changed; call sandbar_entity_find again after 5 s."))

	res = callTool(t, cs, "sandbar_project_export", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring("The task may or may not have been started: look with sandbar_tasks_list"))

	apiServer.Release()
	res = callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeFalse(), "the first call after the API server is back works: %s", text(res))
}

// An API server that went away is said so, and nothing was changed by a read.
func TestUnreachableAPIServerIsSaidSo(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, serve(t, mcpserver.Options{CallTimeout: 2 * time.Second}), token, nil)
	listTools(t, cs)
	apiServer.Cut()
	t.Cleanup(apiServer.Release)
	res := callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(Or(HavePrefix("the Kubernetes API server cannot be reached. Nothing was changed"),
		HavePrefix("the Kubernetes API server did not answer within 2s. Nothing was changed")))
	apiServer.Release()
	g.Eventually(func() bool {
		return callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot"}).IsError
	}).WithTimeout(timeout).WithPolling(poll).Should(BeFalse())
}

// A client that cancels a call stops its work; the server goes on serving.
func TestCancelledCallStopsItsWork(t *testing.T) {
	g := NewWithT(t)
	url, log := serveRecorded(t, mcpserver.Options{CallTimeout: time.Minute})
	cs := connect(t, url, token, nil)
	listTools(t, cs)
	holdAPIServer(t)
	log.take()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbar_entity_find", Arguments: map[string]any{"class": "zorp/SpaceBoot"}})
		done <- err
	}()
	// Cancelled once its work is under way: its check of the caller's access (or its
	// list of instances) has left for the held API server (cancelled before the
	// server has the call, it counts nothing).
	var sent []string
	g.Eventually(func() []string {
		sent = append(sent, log.take()...)
		return sent
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(Or(ContainSubstring("/subjectaccessreviews"), ContainSubstring("/spaceboots"))))
	cancelled := func() float64 {
		families, err := metrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() != "sandbar_mcp_tool_calls_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["tool"] == "sandbar_entity_find" && labels["outcome"] == "cancelled" {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	before := cancelled()
	cancel()
	g.Eventually(done).WithTimeout(timeout).Should(Receive(HaveOccurred()), "the client's call ends when it cancels")
	g.Eventually(cancelled).WithTimeout(timeout).WithPolling(poll).Should(Equal(before+1),
		"the call's handler returned while the API server was still held: its API work stopped")
	apiServer.Release()
	g.Expect(callTool(t, cs, "sandbar_schema_datatypes", nil).IsError).To(BeFalse())
}

// /readyz of the manager fails while the API server does not answer, so that its
// replica is taken out of the Service, and passes again once it does.
func TestReadinessFollowsTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	check, err := mcpserver.APIServerCheck(mgrConfig)
	g.Expect(err).NotTo(HaveOccurred())
	probe := func() error {
		req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
		return check(req)
	}
	g.Expect(probe()).To(Succeed())
	holdAPIServer(t)
	g.Eventually(probe).WithTimeout(timeout).WithPolling(500 * time.Millisecond).
		Should(MatchError(ContainSubstring("the Kubernetes API server does not answer")))
	apiServer.Release()
	g.Eventually(probe).WithTimeout(timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// A create retried after a timeout, with the same idempotency key, makes one object:
// the retries find what the first call made, even when that call was still on its
// way to the API server when they were sent.
func TestCreateRetriedWithItsIdempotencyKeyMakesOneObject(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, serve(t, mcpserver.Options{CallTimeout: 5 * time.Second}), token, nil)
	g.Expect(listTools(t, cs)["sandbar_class_zorp_SpaceBoot"].Description).To(ContainSubstring("metadata.idempotencyKey"),
		"the tool says how to retry safely")
	value, key := unique("Retried"), unique("order-42")
	create := func() *mcp.CallToolResult {
		return callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": value, "metadata": map[string]any{"idempotencyKey": key}})
	}
	withValue := func() []string {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("zorp.sandbar.dev/v1")
		list.SetKind("SpaceBootList")
		g.Expect(k8s.List(context.Background(), list, client.InNamespace("default"))).To(Succeed())
		var names []string
		for _, u := range list.Items {
			if u.Object["spec"].(map[string]any)["name"] == value {
				names = append(names, u.GetName())
			}
		}
		return names
	}
	t.Cleanup(func() {
		for _, name := range withValue() {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("zorp.sandbar.dev/v1")
			u.SetKind("SpaceBoot")
			u.SetNamespace("default")
			u.SetName(name)
			_ = k8s.Delete(context.Background(), u)
		}
	})

	holdAPIServer(t)
	for range 2 {
		res := create()
		g.Expect(res.IsError).To(BeTrue())
		g.Expect(text(res)).To(ContainSubstring("may or may not have been made"))
	}
	apiServer.Release()
	res := create()
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Consistently(withValue).WithTimeout(2*time.Second).WithPolling(200*time.Millisecond).Should(HaveLen(1),
		"three calls with one key made one object")
	res = create()
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(text(res)).To(ContainSubstring("an earlier call with this idempotencyKey made this instance"))
	g.Expect(withValue()).To(HaveLen(1))

	// The key is the account's own: another account's same key makes its own object.
	_, other := newAccount(t, unique("idem-other"), metav1alpha1.Permissions{})
	res = callTool(t, connect(t, mcpURL, other, nil), "sandbar_class_zorp_SpaceBoot",
		map[string]any{"name": value, "metadata": map[string]any{"idempotencyKey": key}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(withValue()).To(HaveLen(2))

	// A taken name is taken, whatever the key; the server's label cannot be set by hand.
	name := withValue()[0]
	res = callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": value,
		"metadata": map[string]any{"name": name, "idempotencyKey": unique("another")}})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring("already exists"))
	res = callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": value,
		"metadata": map[string]any{"labels": map[string]any{"meta.sandbar.dev/idempotency-key": "x"}}})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring("is the server's"))
	g.Expect(withValue()).To(HaveLen(2))
}
