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

// sandbar_project_import asks the user before it overwrites existing instances, and
// starts nothing until the user agrees.

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// bootItem is a bundle item: a SpaceBoot with a name slot.
func bootItem(name, value string) map[string]any {
	return map[string]any{"class": "zorp/SpaceBoot", "name": name, "attributes": map[string]any{"name": value}}
}

// bootName is the name slot of a SpaceBoot in ns, or "" when there is none.
func bootName(t *testing.T, ns, name string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		NewWithT(t).Expect(client.IgnoreNotFound(err)).To(Succeed())
		return ""
	}
	v, _, _ := unstructured.NestedString(u.Object, "spec", "name")
	return v
}

// processesIn are the names of the WorkflowProcesses in ns.
func processesIn(t *testing.T, ns string) []string {
	t.Helper()
	var list metav1alpha1.WorkflowProcessList
	NewWithT(t).Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	names := []string{}
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// importResult imports items and waits for the import's result: its counts.
func importResult(t *testing.T, cs *mcp.ClientSession, args map[string]any) map[string]float64 {
	t.Helper()
	g := NewWithT(t)
	started := answer(t, callTool(t, cs, "sandbar_project_import", args))
	id, _ := started["taskId"].(string)
	g.Expect(id).NotTo(BeEmpty(), "%v", started)
	res := callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": id, "waitSeconds": 30})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var out struct {
		Result map[string]any `json:"result"`
	}
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed(), text(res))
	counts := map[string]float64{}
	for _, k := range []string{"created", "updated", "unchanged", "failed"} {
		counts[k], _ = out.Result[k].(float64)
	}
	return counts
}

func bundle(items ...any) map[string]any {
	return map[string]any{"bundle": map[string]any{"items": items}}
}

// An import that would overwrite an instance with other content asks first. A
// client that cannot ask is refused and told to call again with confirm: true, and
// nothing starts; with confirm: true the import runs. A bundle that only creates
// instances, or leaves them as they are, starts without a question. A client that
// can ask puts the question to its user, at both revisions, and the import runs once
// the user accepts.
func TestImportAsksBeforeOverwritingInstances(t *testing.T) {
	g := NewWithT(t)
	sa, tok := toolAccount(t, "importer", metav1alpha1.ServiceAccountSpec{})
	ns := sa.Namespace
	newBoot(t, ns, "kept", map[string]any{"name": "Kept"})
	newBoot(t, ns, "changed", map[string]any{"name": "Before"})
	cs := connect(t, mcpURL, tok, nil)

	counts := importResult(t, cs, bundle(bootItem("kept", "Kept"), bootItem("fresh", "Fresh")))
	g.Expect(counts).To(Equal(map[string]float64{"created": 1, "updated": 0, "unchanged": 1, "failed": 0}))
	before := processesIn(t, ns)

	overwriting := bundle(bootItem("kept", "Kept"), bootItem("changed", "After"), bootItem("newer", "Newer"))
	msg := refused(t, callTool(t, cs, "sandbar_project_import", overwriting))
	g.Expect(msg).To(And(
		HavePrefix(`Import 3 items into namespace "`+ns+`", overwriting 1 existing instance: zorp/SpaceBoot "changed"? `),
		ContainSubstring("the client cannot ask its user"), ContainSubstring(`"confirm": true`)))
	g.Expect(processesIn(t, ns)).To(ConsistOf(before), "nothing was started")
	g.Expect(bootName(t, ns, "changed")).To(Equal("Before"))
	g.Expect(bootName(t, ns, "newer")).To(BeEmpty())

	overwriting["confirm"] = true
	counts = importResult(t, cs, overwriting)
	g.Expect(counts).To(Equal(map[string]float64{"created": 1, "updated": 1, "unchanged": 1, "failed": 0}))
	g.Expect(bootName(t, ns, "changed")).To(Equal("After"))
	g.Expect(bootName(t, ns, "newer")).To(Equal("Newer"))

	for _, rev := range []string{sessionRevision, revision2026} {
		var questions []string
		asking, _ := connectAt(t, mcpURL, tok, rev, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				questions = append(questions, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			}})
		counts = importResult(t, asking, bundle(bootItem("changed", rev), bootItem("kept", "Kept")))
		g.Expect(questions).To(Equal([]string{`Import 2 items into namespace "` + ns + `", overwriting 1 existing instance: zorp/SpaceBoot "changed"?`}), rev)
		g.Expect(counts).To(Equal(map[string]float64{"created": 0, "updated": 1, "unchanged": 1, "failed": 0}), rev)
		g.Expect(bootName(t, ns, "changed")).To(Equal(rev))
	}
}

// An account with spec.confirm: false (an agent that runs unattended) imports over
// existing instances without a question, though its client could ask.
func TestImportByAnUnattendedAccountIsNotAsked(t *testing.T) {
	g := NewWithT(t)
	no := false
	sa, tok := toolAccount(t, "unattended", metav1alpha1.ServiceAccountSpec{Confirm: &no})
	newBoot(t, sa.Namespace, "changed", map[string]any{"name": "Before"})
	var asked atomic.Int32
	cs := connect(t, mcpURL, tok, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	counts := importResult(t, cs, bundle(bootItem("changed", "After")))
	g.Expect(counts).To(HaveKeyWithValue("updated", 1.0))
	g.Expect(asked.Load()).To(BeZero())
	g.Expect(bootName(t, sa.Namespace, "changed")).To(Equal("After"))
}

// An account whose Kubernetes identity may start processes but not list the
// instances of a class in the bundle cannot be told which instances the import
// would overwrite: it is asked all the same, and nothing starts unasked.
func TestImportThatCannotTellWhatItOverwritesAsksAllTheSame(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, account := unique("blind"), unique("blind")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "processes"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{metav1alpha1.GroupVersion.Group}, Resources: []string{"workflowprocesses"},
			Verbs: []string{"create", "get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-processes"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "processes"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}},
		&metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: account, ServiceAccountName: "agent",
				APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: account + "-key"}}},
	}
	for _, o := range objs {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), objs[0]) })
	tok := issueWhenReady(t, ns, account)
	newBoot(t, ns, "hidden", map[string]any{"name": "Before"})

	msg := refused(t, callTool(t, connect(t, mcpURL, tok, nil), "sandbar_project_import", bundle(bootItem("hidden", "After"))))
	g.Expect(msg).To(And(
		HavePrefix(`Import 1 item into namespace "`+ns+`", perhaps overwriting existing instances (this account may not list them, so it could not tell which)? `),
		ContainSubstring(`"confirm": true`)))
	g.Expect(processesIn(t, ns)).To(BeEmpty(), "nothing was started")
	g.Expect(bootName(t, ns, "hidden")).To(Equal("Before"))
}
