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

package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// A tenant with kubectl, allowed by RBAC to create workflowprocesses in its namespace,
// cannot start a built-in workflow there: the chart's ValidatingAdmissionPolicy admits
// them only from a Sandbar manager (who may start-builtin), and nothing is created. The tenant's
// own workflows it may still start, and the manager may start built-in ones.
func TestTenantCannotCreateBuiltinProcessesWithKubectl(t *testing.T) {
	g := NewWithT(t)
	chart := filepath.Join(testenv.RepoRoot(), "charts", "sandbar")
	const ns, rel, team = "sandbar-vap", "sandbar", "team-a"

	cfg, runHelm := chartCluster(t)
	helmRun := func(args ...string) string {
		t.Helper()
		out, err := runHelm(args...)
		g.Expect(err).NotTo(HaveOccurred(), "helm %s:\n%s", strings.Join(args, " "), out)
		return out
	}

	// Off, the chart renders no such policy.
	off := decode(t, helmRun("template", rel, chart, "--namespace", ns, "--set", "admissionPolicies.builtinProcesses.enabled=false"))
	for _, id := range ids(off) {
		g.Expect(id).NotTo(HaveSuffix("-builtin-processes"))
	}
	helmRun("install", rel, chart, "--namespace", ns, "--create-namespace")

	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	tenantRole := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "agent"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "processes"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{metav1alpha1.GroupVersion.Group}, Resources: []string{"workflowprocesses"},
			Verbs: []string{"get", "list", "create", "update", "patch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "agent-processes"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "processes"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: team}}},
	}
	for _, o := range tenantRole {
		g.Expect(c.Create(ctx, o)).To(Succeed())
	}
	as := func(user string) client.Client {
		impersonating := rest.CopyConfig(cfg)
		impersonating.Impersonate = rest.ImpersonationConfig{UserName: user}
		kc, err := client.New(impersonating, client.Options{Scheme: controllers.NewScheme()})
		g.Expect(err).NotTo(HaveOccurred())
		return kc
	}
	tenant := as("system:serviceaccount:" + team + ":agent")
	manager := as("system:serviceaccount:" + ns + ":" + rel + "-manager")
	process := func(name, definition string) *metav1alpha1.WorkflowProcess {
		return &metav1alpha1.WorkflowProcess{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
			Spec: metav1alpha1.WorkflowProcessSpec{Definition: definition, Owner: "agent"}}
	}

	// The API server enforces a policy once it has loaded it: wait with dry runs, which
	// store nothing.
	const refusal = "WorkflowProcesses of the built-in workflow sandbar.export are created only by a Sandbar manager " +
		"(whose role grants start-builtin on workflowprocesses): start it through MCP with its own verb (sandbar_project_export"
	g.Eventually(func() string {
		if err := tenant.Create(ctx, process("probe", "sandbar.export"), client.DryRunAll); err != nil {
			return err.Error()
		}
		return "admitted"
	}).WithTimeout(timeout).Should(ContainSubstring(refusal))

	err = tenant.Create(ctx, process("my-export", "sandbar.export"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(refusal))
	var procs metav1alpha1.WorkflowProcessList
	g.Expect(c.List(ctx, &procs, client.InNamespace(team))).To(Succeed())
	g.Expect(procs.Items).To(BeEmpty(), "nothing was created")

	// A workflow of the tenant's own it may start; the manager may start a built-in one.
	g.Expect(tenant.Create(ctx, process("my-order", "order.fulfillment"))).To(Succeed())
	g.Expect(manager.Create(ctx, process("managers-export", "sandbar.export"), client.DryRunAll)).To(Succeed())
	g.Expect(c.List(ctx, &procs, client.InNamespace(team))).To(Succeed())
	g.Expect(procs.Items).To(HaveLen(1))
	g.Expect(procs.Items[0].Name).To(Equal("my-order"))
}
