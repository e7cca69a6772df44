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

// Shared objects are guarded: workflow definitions change what every account sees,
// so defining one takes a permission of its own, an account changes only the
// definitions it made, and a workflow limited to some namespaces is neither offered
// nor served to the accounts of others. Each test asserts the refusal and that
// nothing changed in the cluster.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// twoStates is the spec of a small valid workflow, as workflow.define takes it.
func twoStates(extra map[string]any) map[string]any {
	spec := map[string]any{"initial": "open",
		"states":      []any{map[string]any{"name": "open"}, map[string]any{"name": "done", "terminal": "success"}},
		"transitions": []any{map[string]any{"name": "close", "from": []any{"open"}, "to": "done"}}}
	for k, v := range extra {
		spec[k] = v
	}
	return spec
}

func definition(t *testing.T, name string) (*metav1alpha1.WorkflowDefinition, bool) {
	t.Helper()
	var wd metav1alpha1.WorkflowDefinition
	err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &wd)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return &wd, true
}

// unchanged asserts that a definition's spec and metadata are as they were: its
// generation (which every write of the spec bumps), spec and annotations. The
// controller writes only its status.
func unchanged(t *testing.T, name string, before *metav1alpha1.WorkflowDefinition) {
	t.Helper()
	now, ok := definition(t, name)
	g := NewWithT(t)
	g.Expect(ok).To(BeTrue(), name)
	g.Expect(now.Generation).To(Equal(before.Generation), "%s: nothing changed", name)
	g.Expect(now.Spec).To(Equal(before.Spec), name)
	g.Expect(now.Annotations).To(Equal(before.Annotations), name)
}

func deleteDefinitionAfter(t *testing.T, name string) {
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// "*" (every tool) or a glob over the workflow tools does not grant workflow.define,
// though the account's Kubernetes identity may write WorkflowDefinitions: the
// account's permissions must name it, and a read-only account never has it.
func TestWorkflowDefineIsNotGrantedByGlobs(t *testing.T) {
	g := NewWithT(t)
	for _, globs := range [][]string{nil, {"*"}, {"sandbar_workflow_*"}, {"sandbar.workflow.*"}} {
		name := unique("globbed")
		_, tok := newAccount(t, unique("globber"), metav1alpha1.Permissions{Tools: globs})
		cs := connect(t, mcpURL, tok, nil)
		g.Expect(listTools(t, cs)).NotTo(HaveKey("sandbar_workflow_define"), "globs %v", globs)
		g.Expect(listTools(t, cs)).To(HaveKey("sandbar_workflow_start-process"), "globs %v", globs)
		res := callTool(t, cs, "sandbar_workflow_define", map[string]any{"name": name, "spec": twoStates(nil)})
		g.Expect(res.IsError).To(BeTrue(), "globs %v: %s", globs, text(res))
		g.Expect(text(res)).To(ContainSubstring(`the tool "sandbar_workflow_define" is granted only by name: no glob such as "*" allows it`))
		_, exists := definition(t, name)
		g.Expect(exists).To(BeFalse(), "globs %v: nothing was defined", globs)
	}

	_, tok := newAccount(t, unique("reader"), metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_define"}, ReadOnly: true})
	g.Expect(listTools(t, connect(t, mcpURL, tok, nil))).NotTo(HaveKey("sandbar_workflow_define"), "a read-only account never has it")

	for _, named := range []string{"sandbar_workflow_define", "sandbar.workflow.define"} {
		name := unique("named")
		deleteDefinitionAfter(t, name)
		_, tok := newAccount(t, unique("author"), metav1alpha1.Permissions{Tools: []string{"sandbar_schema_*", named}})
		cs := connect(t, mcpURL, tok, nil)
		g.Expect(listTools(t, cs)).To(HaveKey("sandbar_workflow_define"), named)
		res := callTool(t, cs, "sandbar_workflow_define", map[string]any{"name": name, "spec": twoStates(nil)})
		g.Expect(res.IsError).To(BeFalse(), "%s: %s", named, text(res))
		_, exists := definition(t, name)
		g.Expect(exists).To(BeTrue())
	}
}

// An account cannot change, through workflow.define, a definition another account
// made, one an admin made with kubectl, or a built-in one; the definition stays as it
// was. Its own it may change.
func TestWorkflowDefineCannotChangeAnotherAccountsDefinition(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	author := metav1alpha1.Permissions{Tools: []string{"*", "sandbar_workflow_define"}}
	owner, ownerTok := newAccount(t, unique("owner"), author)
	_, otherTok := newAccount(t, unique("other"), author)
	mine, other := connect(t, mcpURL, ownerTok, nil), connect(t, mcpURL, otherTok, nil)

	theirs := unique("theirs")
	deleteDefinitionAfter(t, theirs)
	res := callTool(t, mine, "sandbar_workflow_define", map[string]any{"name": theirs, "spec": twoStates(map[string]any{"description": "The owner's."})})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	made, _ := definition(t, theirs)
	g.Expect(made.Annotations).To(HaveKeyWithValue(metav1alpha1.AnnotationDefinedBy, "default/"+owner.Name))

	res = callTool(t, other, "sandbar_workflow_define", map[string]any{"name": theirs, "spec": twoStates(map[string]any{"description": "Hijacked."})})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(And(
		ContainSubstring("forbidden: the workflow "+theirs+" was defined by the account default/"+owner.Name),
		ContainSubstring("choose another name, or ask the owner")))
	unchanged(t, theirs, made)

	adminMade := unique("admin-made")
	deleteDefinitionAfter(t, adminMade)
	wd := &metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: adminMade}, Spec: metav1alpha1.WorkflowDefinitionSpec{
		Initial: "open", States: []metav1alpha1.WorkflowState{{Name: "open"}, {Name: "done", Terminal: metav1alpha1.TerminalSuccess}},
		Transitions: []metav1alpha1.WorkflowTransition{{Name: "close", From: []string{"open"}, To: "done"}}}}
	g.Expect(k8s.Create(ctx, wd)).To(Succeed())
	res = callTool(t, mine, "sandbar_workflow_define", map[string]any{"name": adminMade, "spec": twoStates(map[string]any{"description": "Mine now."})})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring("forbidden: the workflow " + adminMade + " was not defined through MCP (an admin made it with kubectl or Helm)"))
	unchanged(t, adminMade, wd)

	builtinBefore, _ := definition(t, "sandbar.export")
	res = callTool(t, mine, "sandbar_workflow_define", map[string]any{"name": "sandbar.export", "spec": twoStates(nil)})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring("sandbar.export is a built-in workflow and cannot be redefined"))
	unchanged(t, "sandbar.export", builtinBefore)

	res = callTool(t, mine, "sandbar_workflow_define", map[string]any{"name": theirs, "spec": twoStates(map[string]any{"description": "Still the owner's."})})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	changed, _ := definition(t, theirs)
	g.Expect(changed.Spec.Description).To(Equal("Still the owner's."))
	g.Expect(changed.Annotations).To(HaveKeyWithValue(metav1alpha1.AnnotationDefinedBy, "default/"+owner.Name))
}

// A workflow limited to one namespace (spec.namespaces) is neither offered nor served
// to the accounts of another: its prompt is not listed, prompts/get and completion
// refuse it, start-process refuses it and leaves it out of its enum. The workflows
// open to everyone still work, and the namespace it names uses it.
func TestRestrictedWorkflowIsServedOnlyToItsNamespaces(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	b := newTenant(t, metav1alpha1.Permissions{Tools: []string{"*", "sandbar_workflow_define"}})
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: unique("author")},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-workflow-author"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: b.namespace}}}
	g.Expect(k8s.Create(ctx, crb)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crb) })
	a := newTenant(t, metav1alpha1.Permissions{})

	private := unique("private")
	prompt := "sandbar_workflow_" + private
	deleteDefinitionAfter(t, private)
	bs, as := connect(t, mcpURL, b.token, nil), connect(t, mcpURL, a.token, nil)
	// RBAC decisions are cached for a few seconds: the binding above may not be seen at once.
	g.Eventually(func() string {
		return text(callTool(t, bs, "sandbar_workflow_define", map[string]any{"name": private,
			"spec": twoStates(map[string]any{"namespaces": []any{b.namespace}})}))
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring(`"defined"`))
	prompts := func(cs *mcp.ClientSession) []string {
		var names []string
		for p, err := range cs.Prompts(ctx, nil) {
			g.Expect(err).NotTo(HaveOccurred())
			names = append(names, p.Name)
		}
		return names
	}
	g.Eventually(func() []string { return prompts(bs) }).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(prompt))

	// A sees neither the prompt nor the enum value; the open workflows are there.
	g.Expect(prompts(as)).NotTo(ContainElement(prompt))
	g.Expect(prompts(as)).To(ContainElement("sandbar_workflow_order_fulfillment"))
	enumOf := func(cs *mcp.ClientSession) string {
		schema, _ := json.Marshal(listTools(t, cs)["sandbar_workflow_start-process"].InputSchema)
		return string(schema)
	}
	g.Expect(enumOf(as)).NotTo(ContainSubstring(private))
	g.Expect(enumOf(as)).To(ContainSubstring("order.fulfillment"))
	g.Expect(enumOf(bs)).To(ContainSubstring(private))

	var rpc *jsonrpc.Error
	_, err := as.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidRequest)))
	g.Expect(rpc.Message).To(ContainSubstring("forbidden: the workflow " + private + " is open only to the accounts of namespace(s) " + b.namespace))
	_, err = as.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prompt},
		Argument: mcp.CompleteParamsArgument{Name: "namespace", Value: ""}})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(HavePrefix("forbidden: the workflow " + private))

	res := callTool(t, as, "sandbar_workflow_start-process", map[string]any{"workflow": private})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring("forbidden: the workflow " + private + " is open only to the accounts of namespace(s) " + b.namespace +
		` (its spec.namespaces), not to this account's namespace "` + a.namespace + `"`))
	var procs metav1alpha1.WorkflowProcessList
	g.Expect(k8s.List(ctx, &procs, client.InNamespace(a.namespace))).To(Succeed())
	g.Expect(procs.Items).To(BeEmpty(), "no process was created")

	// What is open to A works; B uses its own workflow.
	res = callTool(t, as, "sandbar_workflow_start-process", map[string]any{"workflow": "order.fulfillment"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	_, err = as.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sandbar_workflow_order_fulfillment", Arguments: map[string]string{"order": "o-1"}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = bs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt})
	g.Expect(err).NotTo(HaveOccurred())
	res = callTool(t, bs, "sandbar_workflow_start-process", map[string]any{"workflow": private})
	g.Expect(res.IsError).To(BeFalse(), text(res))
}
