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

// The attacks of a tenant on a shared cluster, one test each: every one asserts the
// refusal a client sees and that nothing changed in the cluster.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// tenant is an MCP account of a namespace of its own, acting as a Kubernetes
// ServiceAccount that may edit instances there and nowhere else, and that has given
// itself every namespace in its Sandbar permissions.
type tenant struct {
	namespace, token string
}

func newTenant(t *testing.T, perms metav1alpha1.Permissions) tenant {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := unique("team")
	name := unique("tenant")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-editor"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-editor"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}},
		&metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: name, ServiceAccountName: "agent",
				APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: name + "-key"}, Permissions: perms}},
	}
	for _, o := range objs {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), objs[0]) })
	return tenant{namespace: ns, token: issueWhenReady(t, ns, name)}
}

// issueWhenReady issues a key for the account namespace/name and waits until the
// catalog has the account Ready; it returns the token.
func issueWhenReady(t *testing.T, namespace, name string) string {
	t.Helper()
	tok, err := apikey.Issue(context.Background(), k8s, namespace, name)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Eventually(func() bool {
		a := store.Load().Accounts[name]
		return a != nil && a.Ready
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	return tok
}

func boots(t *testing.T, ns string) []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("zorp.sandbar.dev/v1")
	list.SetKind("SpaceBootList")
	NewWithT(t).Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	return names
}

// The attack of the issue: a tenant gives its own account every namespace and reads
// and writes another team's instances. RBAC decides, and says no.
func TestTenantWideningItsNamespacesReachesNoFurtherThanRBAC(t *testing.T) {
	g := NewWithT(t)
	victim := unique("victim-boot")
	newBoot(t, "default", victim, map[string]any{"name": "Theirs"})
	tn := newTenant(t, metav1alpha1.Permissions{Namespaces: []string{"*"}})
	before := boots(t, "default")
	cs := connect(t, mcpURL, tn.token, nil)

	res := callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": "default"})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(And(
		HavePrefix("forbidden: "),
		ContainSubstring(`User "system:serviceaccount:`+tn.namespace+`:agent" cannot list resource "spaceboots"`),
		ContainSubstring(`in API group "zorp.sandbar.dev" in the namespace "default"`),
		ContainSubstring("lacks the permission")))
	g.Expect(text(res)).NotTo(ContainSubstring(victim))

	res = callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{
		"name": "Mine", "metadata": map[string]any{"namespace": "default", "name": "planted"}})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`cannot create resource "spaceboots" in API group "zorp.sandbar.dev" in the namespace "default"`))

	res = callTool(t, cs, "sandbar_entity_update", map[string]any{
		"class": "zorp/SpaceBoot", "name": victim, "namespace": "default", "attributes": map[string]any{"name": "Mine now"}})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`cannot patch resource "spaceboots"`))

	var rpc *jsonrpc.Error
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.InstanceURI("zorp", "SpaceBoot", "default", victim)})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(ContainSubstring(`cannot get resource "spaceboots"`))
	g.Expect(listResources(t, cs)).NotTo(HaveKey(resources.InstanceURI("zorp", "SpaceBoot", "default", victim)))

	// Nothing changed in the cluster.
	g.Expect(boots(t, "default")).To(Equal(before))
	var still unstructured.Unstructured
	still.SetAPIVersion("zorp.sandbar.dev/v1")
	still.SetKind("SpaceBoot")
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: victim}, &still)).To(Succeed())
	g.Expect(still.Object["spec"]).To(Equal(map[string]any{"name": "Theirs"}))

	// In its own namespace, what RBAC grants works.
	res = callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Mine", "metadata": map[string]any{"name": "mine"}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(boots(t, tn.namespace)).To(Equal([]string{"mine"}))
}

// An account that names no Kubernetes ServiceAccount, on a manager without a default,
// touches nothing: the refusal says what to set.
func TestAccountWithoutKubernetesIdentityTouchesNothing(t *testing.T) {
	g := NewWithT(t)
	name := unique("nobody")
	sa := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: name, APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: name + "-key"}}}
	g.Expect(k8s.Create(context.Background(), sa)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sa) })
	tok := issueWhenReady(t, "default", name)
	before := boots(t, "default")
	cs := connect(t, mcpURL, tok, nil)

	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot"}},
		{"sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Orphan"}},
		{"sandbar_project_export", map[string]any{"class": "zorp/SpaceBoot"}},
		{"sandbar_tasks_list", map[string]any{}},
	} {
		res := callTool(t, cs, call.tool, call.args)
		g.Expect(res.IsError).To(BeTrue(), "%s: %s", call.tool, text(res))
		g.Expect(text(res)).To(ContainSubstring("account default/"+name+" has no Kubernetes identity: set spec.serviceAccountName"), call.tool)
	}
	// Reading the metamodel, as API discovery, needs no identity.
	res := callTool(t, cs, "sandbar_class_describe", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(boots(t, "default")).To(Equal(before))
}

// An account allowed only the schema tools reaches nothing more through resources,
// templates, subscriptions, prompts or completions; a tool name that is not served
// is refused before any handler runs.
func TestToolPermissionsBoundEveryMethod(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	boot := unique("narrow-boot")
	newBoot(t, "default", boot, map[string]any{"name": "Narrow"})
	bootURI := resources.InstanceURI("zorp", "SpaceBoot", "default", boot)
	// The suite's own account sees the instance, so what follows is the permissions' doing.
	g.Eventually(func() map[string]*mcp.Resource { return listResources(t, connect(t, mcpURL, token, nil)) }).
		WithTimeout(timeout).WithPolling(poll).Should(HaveKey(bootURI))

	_, tok := newAccount(t, unique("schema-only"), metav1alpha1.Permissions{Tools: []string{"sandbar_schema_*"}})
	cs := connect(t, mcpURL, tok, nil)
	var rpc *jsonrpc.Error

	all := listResources(t, cs)
	g.Expect(all).NotTo(HaveKey(bootURI), "instances take entity.find")
	g.Expect(all).To(HaveKey(resources.MetaURI(resources.MetaClass, "zorp.spaceboot")), "the metamodel takes schema.classes, which it has")
	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: bootURI})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidRequest)))
	g.Expect(rpc.Message).To(ContainSubstring(`forbidden: this account's permissions do not allow reading instances (it takes the tool "sandbar_entity_find")`))
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: bootURI})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(ContainSubstring("do not allow subscribing to instances"))
	for tmpl, err := range cs.ResourceTemplates(ctx, nil) {
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tmpl).To(BeNil(), "no templates without entity.find")
	}
	_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}{?format}"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: ""}})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)

	for p, err := range cs.Prompts(ctx, nil) {
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p).To(BeNil(), "prompts start processes: they take workflow.start-process")
	}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sandbar_workflow_order_fulfillment"})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(ContainSubstring(`it takes the tool "sandbar_workflow_start-process"`))

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbar_class_zorp_NotYet", Arguments: map[string]any{}})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))
	g.Expect(rpc.Message).To(Equal(`unknown tool "sandbar_class_zorp_NotYet" (tools/list has the tools this account may call)`))
}

// tools: [] is no tools at all, not every tool.
func TestEmptyToolListMeansNoTools(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := unique("no-tools")
	// A typed client leaves an empty list out; write it as kubectl would.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "meta.sandbar.dev/v1alpha1", "kind": "ServiceAccount",
		"metadata": map[string]any{"namespace": "default", "name": name},
		"spec": map[string]any{"serviceName": name, "serviceAccountName": "claude",
			"apiKeySecretRef": map[string]any{"name": name + "-key"}, "permissions": map[string]any{"tools": []any{}}},
	}}
	g.Expect(k8s.Create(ctx, u)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	cs := connect(t, mcpURL, issueWhenReady(t, "default", name), nil)
	g.Expect(listTools(t, cs)).To(BeEmpty())
	res := callTool(t, cs, "sandbar_schema_classes", map[string]any{})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring("forbidden: this account's permissions do not allow the tool"))
	g.Expect(listResources(t, cs)).To(BeEmpty())
}

// A read-only account may export (a task of its own) but cannot cancel through tasks/*.
func TestReadOnlyAccountCannotCancelTasks(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, unique("looker"), metav1alpha1.Permissions{ReadOnly: true})
	s := newRawSession(t, mcpURL, tok)
	res := s.call("tools/call", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}, "task": map[string]any{}})
	g.Expect(res.Error).To(BeNil())
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	g.Expect(json.Unmarshal(res.Result, &created)).To(Succeed())
	g.Expect(created.Task.TaskID).To(HavePrefix("task-"))
	_, rpcErr := s.task("tasks/cancel", created.Task.TaskID)
	g.Expect(rpcErr).NotTo(BeNil())
	g.Expect(rpcErr.Error.Code).To(Equal(int64(jsonrpc.CodeInvalidRequest)))
	g.Expect(rpcErr.Error.Message).To(Equal("forbidden: this account is read-only: it cannot cancel processes"))
	var p metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: created.Task.TaskID}, &p)).To(Succeed())
	g.Expect(p.Spec.CancelRequest).To(BeNil())
	g.Expect(p.Status.Cancellation).To(BeNil(), "nothing was cancelled")
}

// The built-in workflows run only through their own verbs and permissions:
// workflow.start-process refuses them and does not offer them.
func TestStartProcessRefusesBuiltinWorkflows(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	var before metav1alpha1.WorkflowProcessList
	g.Expect(k8s.List(context.Background(), &before, client.InNamespace("default"))).To(Succeed())
	res := callTool(t, cs, "sandbar_workflow_start-process", map[string]any{"workflow": "sandbar.export", "input": map[string]any{"class": "zorp/SpaceBoot"}})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring("sandbar.export is a built-in workflow: start it with sandbar_project_export"))
	var after metav1alpha1.WorkflowProcessList
	g.Expect(k8s.List(context.Background(), &after, client.InNamespace("default"))).To(Succeed())
	g.Expect(after.Items).To(HaveLen(len(before.Items)), "no process was created")
	schema, _ := json.Marshal(listTools(t, cs)["sandbar_workflow_start-process"].InputSchema)
	g.Expect(string(schema)).To(ContainSubstring("order.fulfillment"))
	g.Expect(string(schema)).NotTo(ContainSubstring("sandbar.export"))
}

// Service names are unique in a namespace only. Team B makes an account with team
// A's service name before team A does (so B's is the older): both accounts stay
// ready, their conditions say the name is shared, A's key works in both token forms
// (the namespaced one and the one without a namespace that A's clients already have),
// and B's key only ever acts as B.
func TestAServiceNameClaimedFirstInAnotherNamespaceLocksNoOneOut(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	service := unique("shared")
	// newTeam makes a namespace whose Kubernetes ServiceAccount may edit instances
	// there, and an MCP account in it with the service name; it returns the account.
	newTeam := func() *metav1alpha1.ServiceAccount {
		ns := unique("team")
		sa := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: service, ServiceAccountName: "agent",
				APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "agent-key"}}}
		objs := []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-editor"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-editor"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}},
			sa,
		}
		for _, o := range objs {
			g.Expect(k8s.Create(ctx, o)).To(Succeed())
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), objs[0]) })
		return sa
	}
	claimant := newTeam()
	claimantTok, err := apikey.Issue(ctx, k8s, claimant.Namespace, claimant.Name)
	g.Expect(err).NotTo(HaveOccurred())
	// Creation times have seconds: the claimant's is older by at least one.
	g.Eventually(func() bool { return time.Now().Unix() > claimant.CreationTimestamp.Unix() }).
		WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
	victim := newTeam()
	victimTok, err := apikey.Issue(ctx, k8s, victim.Namespace, victim.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(victimTok).To(HavePrefix(victim.Namespace+"/"+service+":"), "create-key prints the namespaced form")
	_, key, _ := strings.Cut(victimTok, ":")
	_, claimantKey, _ := strings.Cut(claimantTok, ":")

	// createsIn is the namespace where a create through a session of tok lands.
	createsIn := func(tok string) string {
		var cs *mcp.ClientSession
		g.Eventually(func() error {
			c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, nil)
			var err error
			cs, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL,
				HTTPClient: &http.Client{Transport: testenv.Bearer{Token: tok}}, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
			return err
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "a session with %s...", tok[:strings.Index(tok, ":")])
		defer cs.Close()
		name := unique("whose-boot")
		res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Whose", "metadata": map[string]any{"name": name}})
		g.Expect(res.IsError).To(BeFalse(), text(res))
		for _, ns := range []string{victim.Namespace, claimant.Namespace} {
			if slices.Contains(boots(t, ns), name) {
				return ns
			}
		}
		return ""
	}
	g.Expect(createsIn(victimTok)).To(Equal(victim.Namespace), "the victim's namespaced token")
	g.Expect(createsIn(service+":"+key)).To(Equal(victim.Namespace), "the victim's token without a namespace, as its clients have it")
	g.Expect(createsIn(service+":"+claimantKey)).To(Equal(claimant.Namespace), "the claimant's token without a namespace")
	g.Expect(createsIn(claimantTok)).To(Equal(claimant.Namespace), "the claimant's namespaced token")
	// The claimant's key in the victim's namespace is no token at all.
	r, _ := post(t, mcpURL, map[string]string{"Authorization": "Bearer " + victim.Namespace + "/" + service + ":" + claimantKey})
	g.Expect(r.StatusCode).To(Equal(http.StatusUnauthorized))

	// Both accounts are ready, and say that the name is shared, and with whom.
	for _, tc := range []struct {
		sa    *metav1alpha1.ServiceAccount
		other string
	}{{victim, claimant.Namespace + "/agent"}, {claimant, victim.Namespace + "/agent"}} {
		g.Eventually(func(g Gomega) {
			var got metav1alpha1.ServiceAccount
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tc.sa), &got)).To(Succeed())
			ready := meta.FindStatusCondition(got.Status.Conditions, metav1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			conflict := meta.FindStatusCondition(got.Status.Conditions, metav1alpha1.ConditionNameConflict)
			g.Expect(conflict).NotTo(BeNil())
			g.Expect(conflict.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(conflict.Reason).To(Equal(metav1alpha1.ReasonServiceNameShared))
			g.Expect(conflict.Message).To(And(ContainSubstring(tc.other), ContainSubstring(tc.sa.Namespace+"/"+service+":<key>")))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s/%s", tc.sa.Namespace, tc.sa.Name)
	}
}
