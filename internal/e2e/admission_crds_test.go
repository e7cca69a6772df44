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
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The manager may write CRDs, which RBAC cannot narrow by group: with its rights, a bug
// or a hijacked manager could replace any API of the cluster. The chart's admission
// policy keeps its CRD writes to what it generates. Each attempt is made as the
// manager's ServiceAccount (impersonated) and must be refused, leaving the cluster's
// CRDs as they were; the CRD of a Class is still created, updated and deleted.
func TestManagerCannotWriteCRDsItDoesNotGenerate(t *testing.T) {
	g := NewWithT(t)
	const ns = "sandbar-crd-policy"
	chart := filepath.Join(testenv.RepoRoot(), "charts", "sandbar")
	cfg, runHelm := chartCluster(t)
	out, err := runHelm("install", release, chart, "--namespace", ns, "--create-namespace", "--set", "replicaCount=1")
	g.Expect(err).NotTo(HaveOccurred(), "helm install:\n%s", out)

	// The kustomize install (config/admission) ships the same policy, for its own
	// ServiceAccount name.
	kube, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	server, err := kube.Discovery().ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	out, err = runHelm("template", release, chart, "--namespace", "sandbar-system", "--kube-version="+server.GitVersion,
		"--show-only", "templates/admission-crds.yaml")
	g.Expect(err).NotTo(HaveOccurred(), "helm template:\n%s", out)
	rendered := decode(t, strings.ReplaceAll(out, ":sandbar-system:sandbar-manager'", ":sandbar-system:sandbar-controller-manager'"))
	kustomized, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "admission", "crds.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(kustomized)).To(Equal(ids(rendered)))
	for i := range rendered {
		g.Expect(kustomized[i].Object["spec"]).To(Equal(rendered[i].Object["spec"]), "config/admission and the chart differ in %s", id(rendered[i]))
	}

	// Before Kubernetes 1.30 there is no admissionregistration.k8s.io/v1 policy: the chart
	// says so rather than install without it, unless it is turned off.
	// (The other policies, on built-in processes and on approvals, are turned off here:
	// they say the same.)
	out, err = runHelm("template", release, chart, "--kube-version=v1.29.5", "--set", "admissionPolicies.builtinProcesses.enabled=false",
		"--set", "admissionPolicies.approvals.enabled=false")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("admissionPolicies.crds needs ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.30 or later)"))
	out, err = runHelm("template", release, chart, "--kube-version=v1.29.5", "--set", "admissionPolicies.crds.enabled=false",
		"--set", "admissionPolicies.builtinProcesses.enabled=false")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("admissionPolicies.approvals.enabled needs Kubernetes 1.30 or later"))
	out, err = runHelm("template", release, chart, "--kube-version=v1.29.5", "--set", "admissionPolicies.crds.enabled=false",
		"--set", "admissionPolicies.builtinProcesses.enabled=false", "--set", "admissionPolicies.approvals.enabled=false")
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	g.Expect(out).NotTo(ContainSubstring("ValidatingAdmissionPolicy"))

	crdWritesAreBounded(t, cfg, "system:serviceaccount:"+ns+":"+release+"-manager")
}

// The kustomize install's policy (config/admission) does the same for the manager of
// config/default, with the rights of config/rbac.
func TestKustomizedPolicyBoundsTheManagersCRDWrites(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start() // with the metamodel's CRDs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	c, err := client.New(env.Config, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	root := testenv.RepoRoot()
	g.Expect(testenv.Apply(ctx, c, filepath.Join(root, "config", "rbac", "role.yaml"), filepath.Join(root, "config", "admission", "crds.yaml"))).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sandbar-manager-rolebinding"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "manager-role"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "sandbar-system", Name: "sandbar-controller-manager"}},
	})).To(Succeed())
	crdWritesAreBounded(t, env.Config, "system:serviceaccount:sandbar-system:sandbar-controller-manager")
}

// crdWritesAreBounded makes, as the manager's ServiceAccount, the CRD writes the
// policy refuses, and checks that each is refused and the cluster's CRDs are as they
// were; then that the CRD the manager generates for a Class is still created, updated
// and deleted. The metamodel's CRDs must be installed.
func crdWritesAreBounded(t *testing.T, cfg *rest.Config, manager string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	asManager := rest.CopyConfig(cfg)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: manager}
	mgr, err := client.New(asManager, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())

	// What the manager would generate for a Class, and CRDs it must not write.
	generated := instanceapi.CRD(&catalog.Class{Name: "zorp.gizmo", Prefix: "zorp", Kind: "Gizmo"}, nil)
	crd := func(name, group string, labelled bool) *apiextensionsv1.CustomResourceDefinition {
		o := generated.DeepCopy()
		plural, _, _ := strings.Cut(name, ".")
		o.Name, o.Spec.Group, o.Spec.Names.Plural = name, group, plural
		o.Spec.Names.Singular = strings.TrimSuffix(plural, "s")
		if !labelled {
			o.Labels = nil
		}
		return o
	}
	// Someone else's CRD in a generated group, made by a cluster admin.
	theirs := crd("gadgets.zorp.sandbar.dev", "zorp.sandbar.dev", false)
	g.Expect(c.Create(ctx, theirs)).To(Succeed())
	crdNames := func() []string {
		var list apiextensionsv1.CustomResourceDefinitionList
		g.Expect(c.List(ctx, &list)).To(Succeed())
		var names []string
		for _, o := range list.Items {
			names = append(names, o.Name+"@"+o.ResourceVersion)
		}
		return names
	}

	// The policy takes effect once the API server has loaded it.
	other := crd("widgets.example.com", "example.com", true)
	g.Eventually(func() error {
		err := mgr.Create(ctx, other.DeepCopy())
		if err == nil {
			_ = c.Delete(ctx, other.DeepCopy())
		}
		return err
	}).WithTimeout(timeout).Should(MatchError(ContainSubstring(
		"the Sandbar manager writes only the CRDs of the instance APIs it generates (API groups <prefix>.sandbar.dev); refused CREATE of widgets.example.com")))
	// The CRD made before the policy took effect goes; a delete that did not take
	// (the API server under load) is asked again, and what holds it is said.
	g.Eventually(func() error {
		var live apiextensionsv1.CustomResourceDefinition
		err := c.Get(ctx, client.ObjectKeyFromObject(other), &live)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case live.DeletionTimestamp == nil:
			if err := c.Delete(ctx, &live); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting %s: %w", live.Name, err)
			}
		}
		return fmt.Errorf("%s is still there (deleting since %v, finalizers %v, conditions %+v)", live.Name, live.DeletionTimestamp, live.Finalizers, live.Status.Conditions)
	}).WithTimeout(timeout).Should(Succeed())
	before := crdNames()

	for _, attempt := range []struct {
		desc  string
		write func() error
		says  string
	}{
		{"a CRD in the metamodel's group", func() error { return mgr.Create(ctx, crd("widgets.meta.sandbar.dev", "meta.sandbar.dev", true)) },
			"the Sandbar manager may not write the metamodel CRDs (meta.sandbar.dev); refused CREATE of widgets.meta.sandbar.dev"},
		{"a CRD in a group of two labels", func() error { return mgr.Create(ctx, crd("widgets.a.b.sandbar.dev", "a.b.sandbar.dev", true)) },
			"refused CREATE of widgets.a.b.sandbar.dev"},
		{"a CRD without the managed-by label", func() error { return mgr.Create(ctx, crd("widgets.zorp.sandbar.dev", "zorp.sandbar.dev", false)) },
			"the Sandbar manager writes only CRDs labelled app.kubernetes.io/managed-by=sandbar; refused CREATE of widgets.zorp.sandbar.dev"},
		{"adopting someone else's CRD", func() error {
			var live apiextensionsv1.CustomResourceDefinition
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(theirs), &live)).To(Succeed())
			live.Labels = generated.Labels
			return mgr.Update(ctx, &live)
		}, "the Sandbar manager does not adopt a CRD it did not make (it lacks the label app.kubernetes.io/managed-by=sandbar); refused UPDATE of gadgets.zorp.sandbar.dev"},
		{"deleting someone else's CRD", func() error { return mgr.Delete(ctx, theirs.DeepCopy()) },
			"refused DELETE of gadgets.zorp.sandbar.dev"},
		{"deleting the metamodel's CRD", func() error {
			return mgr.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "serviceaccounts.meta.sandbar.dev"}})
		}, "refused DELETE of serviceaccounts.meta.sandbar.dev"},
	} {
		err := attempt.write()
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", attempt.desc, err)
		g.Expect(err).To(MatchError(ContainSubstring(attempt.says)), attempt.desc)
	}
	g.Expect(crdNames()).To(Equal(before), "the refused writes changed no CRD")
	var live apiextensionsv1.CustomResourceDefinition
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(theirs), &live)).To(Succeed())
	g.Expect(live.Labels).NotTo(HaveKey(metav1alpha1.LabelManagedBy))

	// What the manager generates, it may still create, update and delete.
	mine := generated.DeepCopy()
	g.Expect(mgr.Create(ctx, mine)).To(Succeed())
	g.Eventually(func() error { // the API server writes the CRD's status meanwhile
		if err := mgr.Get(ctx, client.ObjectKeyFromObject(mine), mine); err != nil {
			return err
		}
		mine.Spec.Names.ShortNames = []string{"gz"}
		return mgr.Update(ctx, mine)
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(mgr.Delete(ctx, mine)).To(Succeed())
}
