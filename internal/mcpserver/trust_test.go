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
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

// catalogWith builds a catalog the way the manager does, from the metamodel as the API
// server has it, with one Class as given (so that a status the Class reconciler would
// soon rewrite is the one the catalog sees, however quick the reconciler is).
func catalogWith(t *testing.T, class *metav1alpha1.Class) *catalog.Store {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	var (
		classes    metav1alpha1.ClassList
		properties metav1alpha1.PropertyList
		workflows  metav1alpha1.WorkflowDefinitionList
		accounts   metav1alpha1.ServiceAccountList
	)
	for _, l := range []client.ObjectList{&classes, &properties, &workflows, &accounts} {
		g.Expect(k8s.List(ctx, l)).To(Succeed())
	}
	for i := range classes.Items {
		if classes.Items[i].Name == class.Name {
			classes.Items[i] = *class
		}
	}
	st := catalog.NewStore()
	st.Publish(catalog.Build(catalog.Inputs{Classes: classes.Items, Properties: properties.Items,
		Workflows: workflows.Items, ServiceAccounts: accounts.Items}))
	return st
}

// Whoever may update classes/status (or a bug) points a Class's status at another API:
// apps/v1 Deployments, or the metamodel's own ServiceAccounts. The class's tools still
// act on its own kind, and nothing is written to the other API.
func TestClassStatusPointingAtAnotherAPIMovesNoVerb(t *testing.T) {
	ctx := context.Background()
	for _, elsewhere := range []metav1alpha1.InstanceAPIStatus{
		{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", CRDName: "deployments.apps"},
		{Group: metav1alpha1.GroupVersion.Group, Version: metav1alpha1.GroupVersion.Version, Kind: "ServiceAccount",
			Plural: "serviceaccounts", CRDName: "serviceaccounts.meta.sandbar.dev"},
	} {
		t.Run(elsewhere.Group+"/"+elsewhere.Kind, func(t *testing.T) {
			g := NewWithT(t)
			patch, err := json.Marshal(map[string]any{"status": map[string]any{"instanceAPI": elsewhere}})
			g.Expect(err).NotTo(HaveOccurred())
			var class metav1alpha1.Class
			class.Name = "zorp.spaceboot"
			g.Expect(k8s.Status().Patch(ctx, &class, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
			g.Expect(class.Status.InstanceAPI.Group).To(Equal(elsewhere.Group), "the API server took the status")
			t.Cleanup(func() { // the Class reconciler writes the status back
				NewWithT(t).Eventually(func() string {
					var live metav1alpha1.Class
					if err := k8s.Get(ctx, client.ObjectKey{Name: "zorp.spaceboot"}, &live); err != nil || live.Status.InstanceAPI == nil {
						return ""
					}
					return live.Status.InstanceAPI.Group
				}).WithTimeout(timeout).WithPolling(poll).Should(Equal("zorp.sandbar.dev"))
			})

			st := catalogWith(t, &class)
			g.Expect(st.Load().Classes["zorp.spaceboot"].Servable()).To(BeTrue())

			cs := connect(t, serveStore(t, st, mcpserver.Options{}), token, nil)
			name := unique("steered")
			res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Steered", "metadata": map[string]any{"name": name}})
			g.Expect(res.IsError).To(BeFalse(), text(res))
			boot := getBoot(t, name)
			g.Expect(boot.Object["spec"]).To(Equal(map[string]any{"name": "Steered"}))
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), boot) })
			g.Expect(st.Load().Classes["zorp.spaceboot"].GVK().String()).To(Equal("zorp.sandbar.dev/v1, Kind=SpaceBoot"))

			// Nothing in the other API.
			err = k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &appsv1.Deployment{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment default/%s: %v", name, err)
			err = k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &metav1alpha1.ServiceAccount{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceAccount default/%s: %v", name, err)
		})
	}
}
