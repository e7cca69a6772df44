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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

func newBoot(t *testing.T, ns, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	u.SetNamespace(ns)
	u.SetName(name)
	NewWithT(t).Expect(k8s.Create(context.Background(), u)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	return u
}

func listResources(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Resource {
	t.Helper()
	out := map[string]*mcp.Resource{}
	for r, err := range cs.Resources(context.Background(), nil) {
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		out[r.URI] = r
	}
	return out
}

func TestResourcesListReadAndTemplates(t *testing.T) {
	g := NewWithT(t)
	resBoot, hiddenBoot := unique("res-boot"), unique("hidden-boot")
	newBoot(t, "default", resBoot, map[string]any{"name": "Res"})
	newBoot(t, "kube-public", hiddenBoot, map[string]any{"name": "Hidden"})
	cs := connect(t, mcpURL, token, nil)

	mine := resources.InstanceURI("zorp", "SpaceBoot", "default", resBoot)
	hidden := resources.InstanceURI("zorp", "SpaceBoot", "kube-public", hiddenBoot)
	g.Eventually(func() map[string]*mcp.Resource { return listResources(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey(mine))
	all := listResources(t, cs)
	g.Expect(all).NotTo(HaveKey(hidden), "another namespace's instances are not listed")
	g.Expect(all).To(HaveKey(resources.MetaURI(resources.MetaClass, "zorp.spaceboot")))
	g.Expect(all).To(HaveKey(resources.MetaURI(resources.MetaProperty, "footwear.name")))
	g.Expect(all).To(HaveKey(resources.MetaURI(resources.MetaWorkflow, "order.fulfillment")))
	g.Expect(all[mine].MIMEType).To(Equal("application/json"))

	var templates []string
	for tmpl, err := range cs.ResourceTemplates(context.Background(), nil) {
		g.Expect(err).NotTo(HaveOccurred())
		templates = append(templates, tmpl.URITemplate)
	}
	g.Expect(templates).To(ContainElement("mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}{?format}"))
	g.Expect(templates).NotTo(ContainElement("mcp://sandbar/zorp/Footwear/{namespace}/{name}{?format}"))

	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mine})
	g.Expect(err).NotTo(HaveOccurred())
	var v map[string]any
	g.Expect(json.Unmarshal([]byte(res.Contents[0].Text), &v)).To(Succeed())
	g.Expect(v["attributes"]).To(Equal(map[string]any{"name": "Res"}))
	g.Expect(res.Contents[0].MIMEType).To(Equal("application/json"))

	// Any instance reads as Markdown when asked.
	res, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mine + "?format=markdown"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Contents[0].MIMEType).To(Equal("text/markdown"))
	g.Expect(res.Contents[0].Text).To(Equal("---\nmetadata:\n  name: " + resBoot + "\nname: Res\n---\n"))

	res, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.MetaURI(resources.MetaClass, "zorp.spaceboot")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Contents[0].Text).To(ContainSubstring(`"required": [`))

	var rpc *jsonrpc.Error
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: hidden})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(Equal("Resource not found"), "another namespace reads as not found")
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp://sandbar/zorp/SpaceBoot/default/missing-boot"})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(Equal("Resource not found"))
	err = cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "mcp://sandbar/Not A URI"})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp://sandbar/zorp/SpaceBoot/default"})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))
	g.Expect(rpc.Message).To(ContainSubstring("want mcp://sandbar/<prefix>/<Kind>/<namespace>/<name>"))
}

// TestReadOfAForeignURISaysWhichURI: a read of a URI that is not Sandbar's is -32602
// with the URI in the error's data, as a resource not found has it (SEP-2164).
func TestReadOfAForeignURISaysWhichURI(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	for _, uri := range []string{"test://nonexistent-resource", "mcp://sandbar/zorp/SpaceBoot/default"} {
		var rpc *jsonrpc.Error
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
		g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)), uri)
		g.Expect(string(rpc.Data)).To(MatchJSON(fmt.Sprintf(`{"uri":%q}`, uri)), uri)
	}
}

func TestSubscriptionsFollowKubernetesChanges(t *testing.T) {
	g := NewWithT(t)
	updated := make(chan string, 64)
	cs := connect(t, mcpURL, token, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	boot := newBoot(t, "default", "sub-boot", map[string]any{"name": "Sub"})
	uri := resources.InstanceURI("zorp", "SpaceBoot", "default", "sub-boot")
	g.Eventually(func() map[string]*mcp.Resource { return listResources(t, cs) }).WithTimeout(timeout).WithPolling(poll).Should(HaveKey(uri))
	g.Expect(cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})).To(Succeed())

	// A change made with the Kubernetes API, as kubectl edit does, reaches the subscriber.
	patch := func(price float64) {
		g.Expect(k8s.Patch(context.Background(), boot, client.RawPatch("application/merge-patch+json",
			[]byte(`{"spec":{"price":`+jsonNumber(price)+`}}`)))).To(Succeed())
	}
	patch(1)
	g.Eventually(updated).WithTimeout(5 * time.Second).Should(Receive(Equal(uri)))

	g.Expect(cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri})).To(Succeed())
	patch(2)
	g.Consistently(updated).WithTimeout(time.Second).ShouldNot(Receive(), "no updates after unsubscribing")

	err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: resources.InstanceURI("zorp", "SpaceBoot", "kube-system", "x")})
	g.Expect(err).To(HaveOccurred(), "no subscriptions to another namespace")
}

func jsonNumber(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestWorkflowsArePrompts(t *testing.T) {
	g := NewWithT(t)
	changed := make(chan struct{}, 16)
	cs := connect(t, mcpURL, token, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} },
	})
	prompts := map[string]*mcp.Prompt{}
	for p, err := range cs.Prompts(context.Background(), nil) {
		g.Expect(err).NotTo(HaveOccurred())
		prompts[p.Name] = p
	}
	g.Expect(prompts).To(HaveKey("sandbar_workflow_order_fulfillment"))
	g.Expect(prompts).To(HaveKey("sandbar_workflow_validation_resource"))
	p := prompts["sandbar_workflow_order_fulfillment"]
	g.Expect(p.Arguments).To(HaveLen(1))
	g.Expect(p.Arguments[0].Name).To(Equal("order"))
	g.Expect(p.Arguments[0].Required).To(BeTrue())

	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: p.Name, Arguments: map[string]string{"order": "ord-7"}})
	g.Expect(err).NotTo(HaveOccurred())
	text := res.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{
		"# Workflow order.fulfillment", "- `pending` (initial)", "- `delivered` (terminal: success)",
		"| `cancel` | pending, confirmed | cancelled |", "A process can be cancelled while in: pending, confirmed.",
		"- order: ord-7", "order/Order",
	} {
		g.Expect(text).To(ContainSubstring(want))
	}
	_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: p.Name})
	g.Expect(err).To(MatchError(ContainSubstring("needs the argument(s): order")))

	wd := &metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: "review.simple"}, Spec: metav1alpha1.WorkflowDefinitionSpec{
		Initial: "open", States: []metav1alpha1.WorkflowState{{Name: "open"}, {Name: "done", Terminal: metav1alpha1.TerminalSuccess}},
		Transitions: []metav1alpha1.WorkflowTransition{{Name: "finish", From: []string{"open"}, To: "done"}},
	}}
	g.Expect(k8s.Create(context.Background(), wd)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), wd) })
	g.Eventually(changed).WithTimeout(timeout).Should(Receive(), "notifications/prompts/list_changed")
	g.Eventually(func() []string {
		var names []string
		for p, err := range cs.Prompts(context.Background(), nil) {
			if err == nil {
				names = append(names, p.Name)
			}
		}
		return names
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement("sandbar_workflow_review_simple"))
}

func TestCompletion(t *testing.T) {
	g := NewWithT(t)
	newBoot(t, "default", "comp-boot", map[string]any{"name": "Comp"})
	cs := connect(t, mcpURL, token, nil)
	g.Eventually(func() []string {
		res, err := cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "comp"},
		})
		if err != nil {
			return nil
		}
		return res.Completion.Values
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal([]string{"comp-boot"}))

	res, err := cs.Complete(context.Background(), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}"},
		Argument: mcp.CompleteParamsArgument{Name: "namespace", Value: ""},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Completion.Values).To(Equal([]string{"default"}))

	order := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"number": "ORD-9", "customer": "someone"}}}
	order.SetAPIVersion("order.sandbar.dev/v1")
	order.SetKind("Order")
	order.SetNamespace("default")
	order.SetName("ord-9")
	g.Expect(k8s.Create(context.Background(), order)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), order) })
	g.Eventually(func() []string {
		res, err := cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "sandbar_workflow_order_fulfillment"},
			Argument: mcp.CompleteParamsArgument{Name: "order", Value: "ord"},
		})
		if err != nil {
			return nil
		}
		return res.Completion.Values
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement("ord-9"), "the subject's instances complete a prompt argument")

	res, err = cs.Complete(context.Background(), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "sandbar_workflow_validation_resource"},
		Argument: mcp.CompleteParamsArgument{Name: "class", Value: "zorp/S"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Completion.Values).To(Equal([]string{"zorp/SpaceBoot"}))
}

// A prompt's subject argument completes with instance names only for an account that
// may read those instances as resources/list and entity.find let it: its tool
// permissions allow entity.find, and its Kubernetes identity may list the class in the
// namespace. An account that may run workflows and nothing else gets no names, though
// its identity could list them; with entity.find it gets them, in its own namespace
// and not in another that its identity may not read.
func TestPromptCompletionOfInstancesNeedsTheRightToReadThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	workflowsOnly := newTenant(t, metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_*"}, Namespaces: []string{"*"}})
	reader := newTenant(t, metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_*", "sandbar_entity_find"}, Namespaces: []string{"*"}})
	name := unique("ord-secret")
	for _, ns := range []string{workflowsOnly.namespace, reader.namespace, "default"} {
		order := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"number": "ORD-7", "customer": "someone"}}}
		order.SetAPIVersion("order.sandbar.dev/v1")
		order.SetKind("Order")
		order.SetNamespace(ns)
		order.SetName(name)
		g.Expect(k8s.Create(ctx, order)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), order) })
	}
	complete := func(cs *mcp.ClientSession, ns string) ([]string, error) {
		params := &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "sandbar_workflow_order_fulfillment"},
			Argument: mcp.CompleteParamsArgument{Name: "order", Value: "ord-secret"},
		}
		if ns != "" {
			params.Context = &mcp.CompleteContext{Arguments: map[string]string{"namespace": ns}}
		}
		res, err := cs.Complete(ctx, params)
		if err != nil {
			return nil, err
		}
		return res.Completion.Values, nil
	}

	// The account that may read them sees the name in its own namespace (once the
	// catalog serves it), and not in one its identity may not list.
	rs := connect(t, mcpURL, reader.token, nil)
	g.Eventually(func() ([]string, error) { return complete(rs, "") }).
		WithTimeout(timeout).WithPolling(poll).Should(ContainElement(name))
	g.Expect(complete(rs, "default")).To(BeEmpty())

	// The workflow-only account may start the workflow and list its prompt, but
	// learns no instance name, in its own namespace or any other.
	ws := connect(t, mcpURL, workflowsOnly.token, nil)
	prompts, err := ws.ListPrompts(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(prompts.Prompts).NotTo(BeEmpty())
	for _, ns := range []string{"", workflowsOnly.namespace, "default"} {
		g.Expect(complete(ws, ns)).To(BeEmpty(), "namespace %q", ns)
	}
}
