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
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The samples are what a new user applies first: every object becomes Ready, the
// SpaceBoot instance API accepts good instances and rejects bad ones, and the catalog
// holds the resolved metamodel.
func TestSamplesApplyAndBecomeReady(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := filepath.Join(testenv.RepoRoot(), "config", "samples")
	var objs []*unstructured.Unstructured
	for _, f := range testenv.SampleFiles {
		o, err := testenv.Objects(filepath.Join(dir, f))
		g.Expect(err).NotTo(HaveOccurred())
		objs = append(objs, o...)
	}
	// Applied again (go test -count=2), they are there already, as after a second kubectl apply.
	for _, o := range objs {
		g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o))).To(Succeed(), "creating %s %s", o.GetKind(), o.GetName())
	}

	for _, o := range objs {
		if o.GroupVersionKind().Group != metav1alpha1.GroupVersion.Group {
			continue // Secrets, the Kubernetes ServiceAccount and its RoleBindings have no conditions
		}
		g.Eventually(func(g Gomega) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(o.GroupVersionKind())
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), u)).To(Succeed())
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			ready := map[string]any{}
			for _, c := range conds {
				if c.(map[string]any)["type"] == metav1alpha1.ConditionReady {
					ready = c.(map[string]any)
				}
			}
			g.Expect(ready["status"]).To(Equal("True"), "%s %s: %v", o.GetKind(), o.GetName(), ready["message"])
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	}

	boot := waitClassCondition(t, "zorp.spaceboot", metav1alpha1.ConditionInstanceAPIEstablished, metav1.ConditionTrue, metav1alpha1.ReasonEstablished)
	var fields []string
	for _, s := range boot.Status.EffectiveSlots {
		fields = append(fields, s.Field)
	}
	g.Expect(fields).To(Equal([]string{"name", "price", "tentacleCount", "vacuumRated"}))
	g.Expect(boot.Status.RequiredSlots).To(Equal([]string{"name"}))
	g.Expect(boot.Status.Ancestors).To(Equal([]string{"zorp.footwear"}))
	g.Expect(boot.Status.InstanceAPI.CRDName).To(Equal("spaceboots.zorp.sandbar.dev"))

	footwear := waitClassCondition(t, "zorp.footwear", metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	g.Expect(footwear.Status.InstanceAPI).To(BeNil(), "an abstract class has no instance API")
	g.Expect(hasCondition(footwear.Status.Conditions, metav1alpha1.ConditionInstanceAPIEstablished)).To(BeFalse())

	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "spaceboots.zorp.sandbar.dev"}, &crd)).To(Succeed())
	g.Expect(crd.Spec.Names.Categories).To(ContainElements("sandbar-instances", "zorp", "footwear"))
	g.Expect(crd.Spec.Names.ShortNames).To(Equal([]string{"sb"}))
	var abstractCRD apiextensionsv1.CustomResourceDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "footwears.zorp.sandbar.dev"}, &abstractCRD)).NotTo(Succeed())

	// Instances are validated by the API server against the effective slots.
	g.Expect(k8s.Create(ctx, spaceBoot(uniq("moonwalker"), map[string]any{
		"name": "Moonwalker", "price": 12.5, "tentacleCount": int64(8), "vacuumRated": true,
	}))).To(Succeed())
	err := k8s.Create(ctx, spaceBoot("nameless", map[string]any{"price": 3}))
	g.Expect(err).To(MatchError(ContainSubstring("spec.name: Required value")))
	err = k8s.Create(ctx, spaceBoot("pricey", map[string]any{"name": "Pricey", "price": "cheap"}))
	g.Expect(err).To(MatchError(ContainSubstring(`spec.price: Invalid value: "string": spec.price in body must be of type number`)))
	err = k8s.Create(ctx, spaceBoot("octopus", map[string]any{"name": "Octo", "tentacleCount": 65}))
	g.Expect(err).To(MatchError(ContainSubstring("spec.tentacleCount: Invalid value: 65: spec.tentacleCount in body should be less than or equal to 64")))

	// Other constraints carry through: patterns, enums, formats, refs as names.
	err = k8s.Create(ctx, instance("order.sandbar.dev", "Order", "bad-order", map[string]any{"number": "123", "customer": "glorbo"}))
	g.Expect(err).To(MatchError(ContainSubstring("spec.number in body should match '^ORD-[0-9]+$'")))
	err = k8s.Create(ctx, instance("zorp.sandbar.dev", "Wearer", "venus", map[string]any{"handle": "zorp/glorbo", "homePlanets": []any{"venus"}}))
	g.Expect(err).To(MatchError(ContainSubstring(`Unsupported value: "venus"`)))
	g.Expect(k8s.Create(ctx, instance("zorp.sandbar.dev", "Wearer", uniq("glorbo"), map[string]any{
		"handle": "zorp/glorbo", "boots": []any{"moonwalker"}, "homePlanets": []any{"glorb"},
	}))).To(Succeed())
	g.Expect(k8s.Create(ctx, instance("order.sandbar.dev", "Order", uniq("ord"), map[string]any{
		"number": "ORD-1", "customer": "glorbo", "items": []any{"moonwalker"},
		"placedAt": "2026-11-21T10:00:00Z", "trackingId": "6f1f1c52-0f8e-4d43-9f5e-6b0c3f5d2a11",
		"notes": map[string]any{"gift": true},
	}))).To(Succeed())

	// The catalog holds the resolved metamodel.
	g.Eventually(func(g Gomega) {
		snap := store.Load()
		c, ok := snap.Classes["zorp.spaceboot"]
		g.Expect(ok).To(BeTrue())
		g.Expect(c.Ready).To(BeTrue())
		g.Expect(c.InstanceAPI).NotTo(BeNil())
		g.Expect(c.InstanceAPI.Established).To(BeTrue())
		g.Expect(snap.Subclasses("zorp.footwear")).To(ContainElement("zorp.spaceboot"))
		g.Expect(snap.Workflows["order.fulfillment"].CancellableFrom).To(Equal([]string{"pending", "confirmed"}))
		acct, ok := snap.Accounts["claude"]
		g.Expect(ok).To(BeTrue())
		g.Expect(acct.Ready).To(BeTrue())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	var wd metav1alpha1.WorkflowDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "order.fulfillment"}, &wd)).To(Succeed())
	g.Expect(wd.Status.TerminalStates).To(Equal([]string{"delivered", "cancelled"}))
}

func hasCondition(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return true
		}
	}
	return false
}

func spaceBoot(name string, spec map[string]any) *unstructured.Unstructured {
	return instance("zorp.sandbar.dev", "SpaceBoot", name, spec)
}

func instance(group, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(group + "/v1")
	u.SetKind(kind)
	u.SetNamespace("default")
	u.SetName(name)
	return u
}
