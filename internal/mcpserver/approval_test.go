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
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// approvalsPolicy installs the admission policy of approvals as config/admission
// has it, and waits until the API server enforces it.
func approvalsPolicy(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	objs, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "admission", "approvals.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		g.Expect(client.IgnoreAlreadyExists(k8s.Create(context.Background(), o))).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	// The API server enforces a policy a moment after it is made: until a user who
	// may create Approvals is refused one, it does not yet.
	probe := unique("vap-probe")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: probe},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{metav1alpha1.GroupVersion.Group}, Resources: []string{"approvals"}, Verbs: []string{"create", "delete"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: probe},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: probe},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: probe}}}
	for _, o := range []client.Object{role, binding} {
		g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	as := asUser(t, probe)
	g.Eventually(func() error {
		ap := &metav1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: probe},
			Spec: metav1alpha1.ApprovalSpec{Call: metav1alpha1.HeldCall{Tool: "x", Canonical: "x", Digest: "x", Account: "x", User: "x", TaskID: "x"},
				Policy: metav1alpha1.HoldingPolicy{Kind: "x", Name: "x", Rule: "x"}, ExpiresAt: metav1.Now()}}
		err := as.Create(context.Background(), ap)
		if err == nil {
			_ = k8s.Delete(context.Background(), ap)
		}
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(MatchError(ContainSubstring("Approvals are made only by a Sandbar manager")))
}

// asUser is a client that acts as a user in groups, as kubectl would for them.
func asUser(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(apiConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// plugin runs kubectl-sandbar, built from this tree, as a user in groups (a
// kubeconfig that impersonates them), and answers what it printed and its error.
func plugin(t *testing.T, bin, user string, groups []string, args ...string) (string, error) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: apiConfig.Host, CertificateAuthorityData: apiConfig.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: apiConfig.CertData, ClientKeyData: apiConfig.KeyData,
		Token: apiConfig.BearerToken, Impersonate: user, ImpersonateGroups: groups}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: "default"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	out, err := exec.Command(bin, append(args, "--kubeconfig", path)...).CombinedOutput()
	return string(out), err
}

// kubectlSandbar builds the kubectl plugin from this tree, as make test-compile does.
func kubectlSandbar(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-sandbar")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/kubectl-sandbar")
	build.Dir, build.Env = testenv.RepoRoot(), append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), string(out))
	return bin
}

var approvalName = regexp.MustCompile(`Approval (task-[a-z0-9]+) in namespace default`)

// A call a policy holds for approval neither runs nor fails: its caller is told
// which Approval waits, for whom, and which task to follow; kubectl get approvals
// shows it. A person the rule names approves it with kubectl sandbar approve, and
// the call runs once, exactly as made, answering its task with the approver's name.
// Nobody else gets it run: not the caller (confirm: true, its own kubectl rights),
// not a person the rule does not name, not a decision written in another's name,
// not the same call made again after it ran, not a changed call, not an Approval
// decided after it expired. A denial ends the task with the reason. Without the
// admission policy that binds a decision to its writer, no call is held.
func TestApprovalsRunACallOnceAPersonApprovesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin := kubectlSandbar(t)
	approvalsPolicy(t)

	name := unique("held")
	_, tok := newAccount(t, name, metav1alpha1.Permissions{})
	caller := "system:serviceaccount:default:claude" // what the account acts as
	pol := &metav1alpha1.CallPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: unique("big-boots")},
		Spec: metav1alpha1.CallPolicySpec{Match: metav1alpha1.CallMatch{Accounts: []string{"default/" + name}, Classes: []string{"zorp/Footwear"}},
			Rules: []metav1alpha1.CallRule{
				{Name: "soon-gone", Action: metav1alpha1.ActionRequireApproval, Expression: "call.attributes.price > 90000",
					Message: "a fortune", Approval: &metav1alpha1.ApprovalRequirement{ApproverSet: metav1alpha1.ApproverSet{Groups: []string{"approvers"}},
						ExpiresAfter: &metav1.Duration{Duration: 2 * time.Second}}},
				{Name: "big", Action: metav1alpha1.ActionRequireApproval, Expression: "call.attributes.price > 1000",
					Message: "boots over 1000 need a person", Approval: &metav1alpha1.ApprovalRequirement{ApproverSet: metav1alpha1.ApproverSet{Groups: []string{"approvers"}}}},
			}}}
	g.Expect(k8s.Create(ctx, pol)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	// Who may decide: the group approvers, and (to try it) the caller's own identity
	// and erin, who is not in the group.
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: unique("approvers")},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-approver"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "approvers"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "claude"},
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "erin"}}}
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding) })
	// mallory may update Approvals, but has not the verb approve.
	editor := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: unique("approvals-editor")},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{metav1alpha1.GroupVersion.Group}, Resources: []string{"approvals"}, Verbs: []string{"get", "update", "patch"}}}}
	mallory := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: editor.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: editor.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}}}
	for _, o := range []client.Object{editor, mallory} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}

	cs := connect(t, mcpURL, tok, nil)
	boot := unique("boot")
	create := func(price int) string {
		t.Helper()
		res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Big", "price": price, "metadata": map[string]any{"name": boot}})
		return text(res)
	}
	var held string
	g.Eventually(func() string { held = create(5000); return held }).WithTimeout(timeout).WithPolling(poll).
		Should(HavePrefix("held for approval, not run and not failed: CallPolicy default/" + pol.Name + ", rule big: boots over 1000 need a person"))
	g.Expect(held).To(And(ContainSubstring("1 approval by members of approvers"), ContainSubstring("sandbar_tasks_get")))
	id := approvalName.FindStringSubmatch(held)[1]
	var ap metav1alpha1.Approval
	key := client.ObjectKey{Namespace: "default", Name: id}
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, key, &ap)).To(Succeed())
		return ap.Status.Phase
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(metav1alpha1.ApprovalPending))
	g.Expect(ap.Spec.Call).To(And(HaveField("Tool", "sandbar_class_zorp_SpaceBoot"), HaveField("User", caller), HaveField("TaskID", id)))
	g.Expect(ap.Spec.Call.Arguments).To(ContainSubstring(`"price":5000`))
	g.Eventually(func() string { return text(callTool(t, cs, "sandbar_tasks_get", map[string]any{"taskId": id})) }).
		WithTimeout(timeout).WithPolling(poll).Should(And(ContainSubstring(`"status": "working"`), ContainSubstring("held for approval "+id)))
	// The same call again waits for the same Approval.
	g.Expect(create(5000)).To(ContainSubstring("Approval " + id + " in namespace default"))
	// So it does through legacy SSE (2024-11-05).
	sse, err := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, nil).Connect(ctx,
		&mcp.SSEClientTransport{Endpoint: strings.TrimSuffix(mcpURL, "/mcp") + "/mcp/sse", HTTPClient: &http.Client{Transport: testenv.Bearer{Token: tok}}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sse.Close() })
	g.Expect(text(callTool(t, sse, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Big", "price": 5000, "metadata": map[string]any{"name": boot}}))).
		To(ContainSubstring("Approval "+id+" in namespace default"), "legacy SSE")

	// Nobody but a named person gets it run.
	_, err = plugin(t, bin, caller, []string{"system:serviceaccounts", "system:serviceaccounts:default"}, "approve", id)
	g.Expect(err).NotTo(HaveOccurred(), "the admission policy admits the caller's own decision: it just does not count")
	_, err = plugin(t, bin, "erin", nil, "approve", id)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := plugin(t, bin, "mallory", []string{"shoppers"}, "approve", id)
	g.Expect(err).To(HaveOccurred(), "mallory has no approve verb")
	g.Expect(out).To(ContainSubstring("may not decide Approval " + id + ": that takes the verb approve"))
	forged := &ap
	g.Expect(k8s.Get(ctx, key, forged)).To(Succeed())
	forged.Spec.Decisions = append(forged.Spec.Decisions, metav1alpha1.ApprovalDecision{Decision: metav1alpha1.DecisionApprove, User: "carol", Groups: []string{"approvers"}})
	g.Expect(asUser(t, "erin").Update(ctx, forged)).To(MatchError(ContainSubstring("a decision names the person who writes it")))
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Big", "price": 5000, "metadata": map[string]any{"name": boot}, "confirm": true})
	g.Expect(text(res)).To(HavePrefix("held for approval"), "confirm: true runs nothing")
	res = callTool(t, cs, "sandbar_workflow_transition", map[string]any{"taskId": id, "transition": "approve"})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring("sandbar.approval is run by the server"), "no verb moves the task that waits")
	g.Consistently(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, key, &ap)).To(Succeed())
		return ap.Status.Phase
	}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(metav1alpha1.ApprovalPending))
	g.Expect(ap.Status.Message).To(ContainSubstring("not " + caller + ", who called"))
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: boot}, spaceBoot(boot)))).To(BeTrue(), "nothing ran")

	// carol approves: it runs once, as made.
	out, err = plugin(t, bin, "carol", []string{"approvers"}, "approve", id, "--reason", "budgeted")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("approval default/" + id + ": approve recorded (carol)"))
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, key, &ap)).To(Succeed())
		return ap.Status.Phase
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(metav1alpha1.ApprovalDone), func() string { return ap.Status.Message })
	g.Expect(ap.Status.ApprovedBy).To(Equal([]string{"carol"}))
	u := spaceBoot(boot)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
	g.Expect(u.Object["spec"]).To(HaveKeyWithValue("price", BeNumerically("==", 5000)))
	res = callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": id})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(res.StructuredContent).To(HaveKeyWithValue("approvedBy", ConsistOf("carol")))
	g.Expect(text(res)).To(ContainSubstring(boot))

	// Replayed: another decision on a done Approval runs nothing again; the same
	// call made again is a new one that waits.
	_, err = plugin(t, bin, "dave", []string{"approvers"}, "approve", id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, key, &ap)).To(Succeed())
		return ap.Status.Phase
	}).WithTimeout(time.Second).WithPolling(200 * time.Millisecond).Should(Equal(metav1alpha1.ApprovalDone))
	again := create(5000)
	g.Expect(again).To(HavePrefix("held for approval"))
	g.Expect(again).NotTo(ContainSubstring(id))

	// A changed call is another call; denied, it ends with the reason.
	changed := create(6000)
	other := approvalName.FindStringSubmatch(changed)[1]
	g.Expect(other).NotTo(Equal(id))
	out, err = plugin(t, bin, "carol", []string{"approvers"}, "deny", other, "--reason", "over budget")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func() string {
		return text(callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": other}))
	}).WithTimeout(timeout).WithPolling(poll).Should(And(ContainSubstring("denied by carol: over budget"), ContainSubstring("the task failed")))
	g.Expect(u.Object["spec"]).To(HaveKeyWithValue("price", BeNumerically("==", 5000)), "the instance is as the approved call made it")

	// Expired before anyone decided: nothing runs, and approving it then does nothing.
	late := approvalName.FindStringSubmatch(create(95000))[1]
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: late}, &ap)).To(Succeed())
		return ap.Status.Phase
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(metav1alpha1.ApprovalExpired))
	_, _ = plugin(t, bin, "carol", []string{"approvers"}, "approve", late)
	g.Expect(text(callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": late}))).To(ContainSubstring("expired at"))

	// Without the admission policy, no decision could be trusted: nothing is held.
	objs, _ := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "admission", "approvals.yaml"))
	for _, o := range objs {
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			g.Expect(k8s.Delete(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}})).To(Succeed())
		}
	}
	g.Eventually(func() string { return create(7000) }).WithTimeout(timeout).WithPolling(poll).
		Should(ContainSubstring("approvals are off: the admission policy that binds a decision to the person who makes it"))
}

// The official TypeScript SDK clients meet a held call as the Go client does, the v1
// client in a session and the v2 client on the stateless revision: an order over the
// sample limit (config/samples/policies.yaml) names the Approval that waits; approved
// by a person in approvers with kubectl sandbar, its task completes with the order
// created once and the approver named; denied, the task fails with the reason and no
// order exists.
func TestTypeScriptClientWaitsForAPersonsApproval(t *testing.T) {
	bin := kubectlSandbar(t)
	approvalsPolicy(t)
	dir, node := tsClient(t)
	for _, tc := range []struct{ expect, decision, by, revision string }{
		{"approved", "approve", "alice", sessionRevision}, {"denied", "deny", "bob", sessionRevision},
		{"approved", "approve", "alice", "2026-07-28"}, {"denied", "deny", "bob", "2026-07-28"},
	} {
		t.Run(tc.expect+" "+tc.revision, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "approval.mjs"))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "MCP_URL="+mcpURL, "MCP_TOKEN="+token, "ORDER="+unique("ord"), "EXPECT="+tc.expect, "REVISION="+tc.revision)
			stdout, err := cmd.StdoutPipe()
			g.Expect(err).NotTo(HaveOccurred())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			g.Expect(cmd.Start()).To(Succeed())
			lines := bufio.NewScanner(stdout)
			g.Expect(lines.Scan()).To(BeTrue(), "the script printed nothing: %s", &stderr)
			var held struct{ Held string }
			g.Expect(json.Unmarshal(lines.Bytes(), &held)).To(Succeed(), lines.Text())
			out, err := plugin(t, bin, tc.by, []string{"approvers"}, tc.decision, held.Held, "--reason", "as the test says")
			g.Expect(err).NotTo(HaveOccurred(), out)
			var rest strings.Builder
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			g.Expect(cmd.Wait()).To(Succeed(), "approval.mjs: %s%s", &rest, &stderr)
			t.Logf("approval.mjs: %s", strings.TrimSpace(rest.String()))
		})
	}
}
