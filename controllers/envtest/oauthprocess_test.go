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

package envtest_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// A tenant whose role lets it create and update processes in the namespace where
// the people signed in with OAuth keep theirs cannot plant a process in a person's
// list of tasks (owner oauth_*), nor cancel one of theirs: the shipped admission
// policy lets only a Sandbar manager make or change them. Its own processes it still
// makes and changes.
func TestATenantCannotPlantOrChangeAPersonsProcess(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	as, ns := tenantWithProcessPolicy(t, "people", []string{"workflowprocesses"}, "get", "list", "create", "update", "patch")

	// A person's process, as a manager makes it.
	theirs := process(uniq("p"), "order.fulfillment", nil)
	theirs.Namespace, theirs.Spec.Owner = ns, "oauth_oidc-alice_0123456789abcdef"
	create(t, theirs)

	planted := process(uniq("planted"), "order.fulfillment", map[string]any{"note": "click here"})
	planted.Namespace, planted.Spec.Owner = ns, "oauth_oidc-alice_0123456789abcdef"
	// The policy takes effect once the API server has loaded it.
	g.Eventually(func() error { return as.Create(ctx, planted.DeepCopy()) }).WithTimeout(timeout).WithPolling(poll).
		Should(MatchError(ContainSubstring("a person signed in with OAuth, are created and changed only by a Sandbar manager")))

	g.Expect(updateSpecAs(as, client.ObjectKeyFromObject(theirs), func(p *metav1alpha1.WorkflowProcess) {
		p.Spec.CancelRequest = &metav1alpha1.CancelRequest{Reason: "planted"}
	})).To(MatchError(ContainSubstring("only by a Sandbar manager")), "a person's process cannot be cancelled around MCP")

	mine := process(uniq("mine"), "order.fulfillment", nil)
	mine.Namespace, mine.Spec.Owner = ns, "tenant-account"
	g.Expect(as.Create(ctx, mine)).To(Succeed(), "a process of the tenant's own account")
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mine) })
}

// updateSpecAs is updateSpec through another client.
func updateSpecAs(c client.Client, key client.ObjectKey, mutate func(*metav1alpha1.WorkflowProcess)) error {
	var p metav1alpha1.WorkflowProcess
	if err := c.Get(context.Background(), key, &p); err != nil {
		return err
	}
	mutate(&p)
	return c.Update(context.Background(), &p)
}

// tenantWithProcessPolicy makes a namespace with the shipped admission policy on
// processes bound to it, and answers a client that acts as a tenant user whose Role
// there grants verbs on resources (of meta.sandbar.dev).
func tenantWithProcessPolicy(t *testing.T, base string, resources []string, verbs ...string) (client.Client, string) {
	t.Helper()
	g := NewWithT(t)
	ns := uniq(base)
	g.Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	processPolicyIn(t, ns)
	tenant := "tenant-" + ns
	create(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "processes"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{metav1alpha1.GroupVersion.Group}, Resources: resources, Verbs: verbs}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "processes"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "processes"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenant}}})
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenant}
	as, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	return as, ns
}
