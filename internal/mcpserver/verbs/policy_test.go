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

package verbs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/policy"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// policyServer is a server whose calls pass three ClusterCallPolicies: footwear
// over a price needs a person (a Deny on the superclass of zorp/SpaceBoot), an
// instance named keep-* whose stored name is Kept is never deleted (a rule on the
// stored object), and updates would be refused, under Audit enforcement only.
func policyServer(t *testing.T) *mcptest.Server {
	store := &policy.Store{}
	store.Publish(policy.NewSet([]*policy.Policy{
		policy.Compile("", "price-limit", 1, metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Classes: []string{"zorp/Footwear"}, Verbs: []string{"create", "update"}},
			Rules: []metav1alpha1.CallRule{{Name: "over-limit", Action: metav1alpha1.ActionDeny, Message: "footwear over 1000 needs a person",
				Expression: "has(call.attributes.price) && call.attributes.price > 1000"}}}),
		policy.Compile("", "keep", 1, metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Verbs: []string{"delete"}},
			Rules: []metav1alpha1.CallRule{{Name: "kept", Action: metav1alpha1.ActionDeny, Message: "kept instances stay",
				Expression: "call.name.startsWith('keep-') && call.object.spec.name == 'Kept'"}}}),
		policy.Compile("", "hidden-boots", 1, metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Classes: []string{"zorp/SpaceBoot"}, Verbs: []string{"read"}},
			Rules: []metav1alpha1.CallRule{{Name: "hidden", Action: metav1alpha1.ActionDeny, Message: "hidden boots are not read by agents",
				Expression: "call.name.startsWith('hidden-')"}}}),
		policy.Compile("", "reserved-names", 1, metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Verbs: []string{"create"}},
			Rules: []metav1alpha1.CallRule{{Name: "reserved", Action: metav1alpha1.ActionDeny, Message: "reserved names are not for agents",
				Expression: "call.name.startsWith('reserved-')"}}}),
		policy.Compile("", "try-updates", 1, metav1alpha1.CallPolicySpec{Enforcement: metav1alpha1.EnforcementAudit,
			Match: metav1alpha1.CallMatch{Tools: []string{"sandbar.entity.update"}},
			Rules: []metav1alpha1.CallRule{{Name: "no-updates", Action: metav1alpha1.ActionDeny}}}),
	}))
	return startWith(t, mcptest.Config{RunWorkflows: true, Server: func(o *mcpserver.Options) { o.Policies = store }})
}

// A call a policy denies is refused with the policy and rule named, and changes
// nothing, on every way a client can make it: a class's own tool, the generic
// create with attributes or with a document of either format, the batch create,
// an import (each item, as a create or an update), a task-augmented call, either
// revision; confirm: true is no way round it. A call the rules let through runs,
// and a policy under Audit enforcement refuses nothing.
func TestCallPoliciesRefuseOnEveryPath(t *testing.T) {
	s := policyServer(t)
	for _, revision := range []string{mcptest.SessionRevision, mcptest.StatelessRevision} {
		t.Run(revision, func(t *testing.T) {
			f := &fixture{g: NewWithT(t), t: t, server: s, id: fmt.Sprintf("p%d", runs.Add(1))}
			f.cs = s.Client(t, revision)
			big := "big-" + f.id
			denied := func(verb string, args map[string]any, says string) {
				t.Helper()
				res, text := f.call(verb, args)
				f.g.Expect(res.IsError).To(BeTrue(), "%s: %s", verb, text)
				f.g.Expect(text).To(ContainSubstring("forbidden: denied by ClusterCallPolicy "+says), verb)
			}
			limit := "price-limit, rule over-limit: footwear over 1000 needs a person"
			denied("sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Big", "price": 5000, "metadata": map[string]any{"name": big}}, limit)
			denied("sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Big", "price": 5000},
				"metadata": map[string]any{"name": big}}, limit)
			denied("sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "format": "json",
				"source": `{"name": "Big", "price": 5000}`, "metadata": map[string]any{"name": big}}, limit)
			denied("sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "format": "markdown",
				"source": "---\nmetadata:\n  name: " + big + "\nname: Big\nprice: 5000\n---\n"}, limit)
			denied("sandbar_schema_entities", map[string]any{"entities": []any{
				map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Small", "price": 5}, "metadata": map[string]any{"name": "small-" + f.id}},
				map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Big", "price": 5000}, "metadata": map[string]any{"name": big}},
			}}, limit)
			denied("sandbar_project_import", map[string]any{"confirm": true, "bundle": map[string]any{"items": []any{
				map[string]any{"class": "zorp/SpaceBoot", "name": big, "attributes": map[string]any{"name": "Big", "price": 5000}},
			}}}, limit)
			denied("sandbar_project_import", map[string]any{"bundle": map[string]any{"format": "markdown", "items": []any{
				map[string]any{"class": "zorp/SpaceBoot", "source": "---\nmetadata:\n  name: " + big + "\nname: Big\nprice: 5000\n---\n"},
			}}}, limit)
			// The name a document gives itself is the name the policies see.
			reserved := "reserved-" + f.id
			named := "reserved-names, rule reserved: reserved names are not for agents"
			denied("sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "format": "json",
				"source": `{"metadata": {"name": "` + reserved + `"}, "spec": {"name": "Small", "price": 5}}`}, named)
			denied("sandbar_project_import", map[string]any{"bundle": map[string]any{"format": "markdown", "items": []any{
				map[string]any{"class": "zorp/SpaceBoot", "source": "---\nmetadata:\n  name: " + reserved + "\nname: Small\nprice: 5\n---\n"},
			}}}, named)
			// A document without the bundle's format is read as the import reads it.
			denied("sandbar_project_import", map[string]any{"bundle": map[string]any{"items": []any{
				map[string]any{"class": "zorp/SpaceBoot", "source": "---\nmetadata:\n  name: " + big + "\nname: Big\nprice: 5000\n---\n"},
			}}}, limit)
			// An import whose item the policies cannot read is refused whole.
			res, text := f.call("sandbar_project_import", map[string]any{"bundle": map[string]any{"format": "markdown", "items": []any{
				map[string]any{"class": "zorp/SpaceBoot", "source": "---\nname: [unclosed\n---\n"},
				map[string]any{"class": "zorp/SpaceBoot", "name": big, "attributes": map[string]any{"name": "Big", "price": 5000}},
			}}})
			f.g.Expect(res.IsError).To(BeTrue(), text)
			f.g.Expect(text).To(ContainSubstring("the call policies cannot read this call"))
			for _, name := range []string{big, "small-" + f.id, "reserved-" + f.id} {
				err := s.Cluster.Get(context.Background(), client.ObjectKey{Namespace: mcptest.Home, Name: name}, spaceBoot())
				f.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s was not created: %v", name, err)
			}
			var procs metav1alpha1.WorkflowProcessList
			f.g.Expect(s.Cluster.List(context.Background(), &procs, client.InNamespace(mcptest.Home))).To(Succeed())
			for _, p := range procs.Items {
				f.g.Expect(string(p.Spec.Input.Raw)).NotTo(ContainSubstring(big), "no import started")
			}

			// Within the limit, the call runs.
			small := f.answer("sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Small", "price": 5, "metadata": map[string]any{"name": "small-" + f.id}})
			f.g.Expect(small["name"]).To(Equal("small-" + f.id))
			// Raising it past the limit with an update is refused as a create is; the
			// Audit policy on updates refuses nothing by itself.
			denied("sandbar_entity_update", map[string]any{"class": "zorp/SpaceBoot", "name": "small-" + f.id, "attributes": map[string]any{"price": 2000}}, limit)
			f.answer("sandbar_entity_update", map[string]any{"class": "zorp/SpaceBoot", "name": "small-" + f.id, "attributes": map[string]any{"price": 20}})
			f.g.Expect(f.instance("SpaceBoot", "small-"+f.id).Object["spec"]).To(HaveKeyWithValue("price", BeNumerically("==", 20)))

			// A rule on the stored object: confirm: true does not get round it.
			keep := "keep-" + f.id
			f.answer("sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Kept", "metadata": map[string]any{"name": keep}})
			denied("sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": keep, "confirm": true}, "keep, rule kept: kept instances stay")
			f.g.Expect(f.instance("SpaceBoot", keep).GetName()).To(Equal(keep))
			f.answer("sandbar_entity_update", map[string]any{"class": "zorp/SpaceBoot", "name": keep, "attributes": map[string]any{"name": "Free"}})
			f.answer("sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": keep, "confirm": true})
		})
	}
	// A task-augmented call (2025-11-25's params.task) meets the same gate.
	f := &fixture{g: NewWithT(t), t: t, server: s, id: fmt.Sprintf("p%d", runs.Add(1))}
	f.cs = s.Client(t, mcptest.SessionRevision)
	// Reads that are not tools meet it too: an instance read as a resource.
	hidden := "hidden-" + f.id
	f.answer("sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Hidden", "metadata": map[string]any{"name": hidden}})
	_, err := f.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.InstanceURI("zorp", "SpaceBoot", mcptest.Home, hidden)})
	f.g.Expect(err).To(MatchError(ContainSubstring("denied by ClusterCallPolicy hidden-boots, rule hidden: hidden boots are not read by agents")))
	f.answer("sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Shown", "metadata": map[string]any{"name": "shown-" + f.id}})
	_, err = f.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.InstanceURI("zorp", "SpaceBoot", mcptest.Home, "shown-"+f.id)})
	f.g.Expect(err).NotTo(HaveOccurred(), "another boot reads")
	found, text := f.call("sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "name": hidden})
	f.g.Expect(found.IsError).To(BeTrue(), text)
	f.g.Expect(text).To(ContainSubstring("hidden-boots"))

	answer, _ := s.Request(t, mcptest.VariantSession, "tools/call", map[string]any{"name": "sandbar_project_import", "task": map[string]any{"ttl": 60000},
		"arguments": map[string]any{"confirm": true, "bundle": map[string]any{"items": []any{
			map[string]any{"class": "zorp/SpaceBoot", "name": "big-" + f.id, "attributes": map[string]any{"name": "Big", "price": 5000}}}}}})
	var res struct {
		IsError bool `json:"isError"`
		Task    any  `json:"task"`
	}
	f.g.Expect(json.Unmarshal(answer.Result, &res)).To(Succeed(), string(answer.Result))
	f.g.Expect(res.IsError).To(BeTrue(), string(answer.Result))
	f.g.Expect(res.Task).To(BeNil(), "no task was started")
	f.g.Expect(string(answer.Result)).To(ContainSubstring("ClusterCallPolicy price-limit"))
}

func spaceBoot() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	return u
}

// heldServer is a server whose calls of zorp/SpaceBoot over a price a policy holds
// for the group approvers, and whose fake cluster has the admission policy of
// approvals when bound says so.
func heldServer(t *testing.T, bound bool) *mcptest.Server {
	store := &policy.Store{}
	store.Publish(policy.NewSet([]*policy.Policy{policy.Compile("", "big", 1, metav1alpha1.CallPolicySpec{
		Match: metav1alpha1.CallMatch{Classes: []string{"zorp/SpaceBoot"}},
		Rules: []metav1alpha1.CallRule{{Name: "over", Action: metav1alpha1.ActionRequireApproval, Message: "boots over 1000 need a person",
			Expression: "has(call.attributes.price) && call.attributes.price > 1000",
			Approval:   &metav1alpha1.ApprovalRequirement{ApproverSet: metav1alpha1.ApproverSet{Groups: []string{"approvers"}}}}}})}))
	s := startWith(t, mcptest.Config{RunWorkflows: true, Server: func(o *mcpserver.Options) { o.Policies = store }})
	if bound {
		objs, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "admission", "approvals.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if err := s.Cluster.Create(context.Background(), o); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// A held call is answered on every way a client calls: a task to a task-augmented
// call (2025-11-25's params.task, the stateless revision's extension), the
// Approval's name and the task to follow to a client without Tasks, either
// revision; nothing runs. Without the admission policy of approvals, nothing is
// held: the call is refused, saying why.
func TestAHeldCallIsATaskOnEveryPath(t *testing.T) {
	g := NewWithT(t)
	off := heldServer(t, false)
	res, _ := off.Request(t, mcptest.VariantSession, "tools/call", map[string]any{"name": "sandbar_class_zorp_SpaceBoot",
		"arguments": map[string]any{"name": "Big", "price": 5000}})
	g.Expect(string(res.Result)).To(ContainSubstring("approvals are off"))

	s := heldServer(t, true)
	bundle := map[string]any{"items": []any{map[string]any{"class": "zorp/SpaceBoot", "name": "big-import", "attributes": map[string]any{"name": "Big", "price": 5000}}}}
	for _, tc := range []struct {
		name    string
		variant int
		params  map[string]any
		task    bool
	}{
		{"a class's own tool, 2025-11-25", mcptest.VariantSession, map[string]any{"name": "sandbar_class_zorp_SpaceBoot",
			"arguments": map[string]any{"name": "Big", "price": 5000, "metadata": map[string]any{"name": "big-session"}}}, false},
		{"a class's own tool, 2026-07-28", mcptest.VariantStateless, map[string]any{"name": "sandbar_class_zorp_SpaceBoot",
			"arguments": map[string]any{"name": "Big", "price": 5000, "metadata": map[string]any{"name": "big-stateless"}}}, false},
		{"an import as a task, 2025-11-25", mcptest.VariantSession, map[string]any{"name": "sandbar_project_import",
			"task": map[string]any{"ttl": 60000}, "arguments": map[string]any{"confirm": true, "bundle": bundle}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			answer, _ := s.Request(t, tc.variant, "tools/call", tc.params)
			var out struct {
				IsError bool `json:"isError"`
				Task    *struct {
					TaskID, Status, StatusMessage string
				} `json:"task"`
				Content []struct{ Text string } `json:"content"`
			}
			g.Expect(json.Unmarshal(answer.Result, &out)).To(Succeed(), string(answer.Result))
			var ap metav1alpha1.ApprovalList
			g.Expect(s.Cluster.List(context.Background(), &ap)).To(Succeed())
			if tc.task {
				g.Expect(out.Task).NotTo(BeNil(), string(answer.Result))
				g.Expect(out.Task.Status).To(Equal("working"))
				g.Expect(ap.Items).To(ContainElement(HaveField("Name", out.Task.TaskID)))
				return
			}
			g.Expect(out.IsError).To(BeTrue(), string(answer.Result))
			g.Expect(out.Content[0].Text).To(And(HavePrefix("held for approval, not run and not failed: ClusterCallPolicy big, rule over: boots over 1000 need a person"),
				ContainSubstring("1 approval by members of approvers")))
		})
	}
	var boots unstructured.UnstructuredList
	boots.SetAPIVersion("zorp.sandbar.dev/v1")
	boots.SetKind("SpaceBootList")
	g.Expect(s.Cluster.List(context.Background(), &boots)).To(Succeed())
	for _, b := range boots.Items {
		g.Expect(b.GetName()).NotTo(HavePrefix("big-"), "nothing held ran")
	}
}
