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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// A broken Class says why in a condition and an Event, and the rest of the metamodel
// keeps working.
func TestBrokenClassesReportWhyAndOthersKeepWorking(t *testing.T) {
	p := uniq("p")
	good := property(p+".title", metav1alpha1.RangeString)
	create(t, good)

	cycleA, cycleB := uniq("cycle"), uniq("cycle")
	unknownProp, unknownParent, fine := uniq("badprop"), uniq("badparent"), uniq("fine")
	create(t,
		abstract(class(cycleA, p, "CycleA", []string{cycleB})),
		abstract(class(cycleB, p, "CycleB", []string{cycleA})),
		class(unknownProp, p, "NoProp", nil, slot(p+".missing", true)),
		class(unknownParent, p, "NoParent", []string{p + ".ghost"}),
		class(fine, p, "Fine", nil, slot(good.Name, true)),
	)

	for _, name := range []string{cycleA, cycleB} {
		c := waitClassCondition(t, name, metav1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle)
		NewWithT(t).Expect(condition(c.Status.Conditions, metav1alpha1.ConditionReferencesResolved).Message).
			To(ContainSubstring(cycleA + " -> " + cycleB))
		waitClassCondition(t, name, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle)
		waitEvent(t, "", name, metav1alpha1.ReasonInheritanceCycle)
	}
	c := waitClassCondition(t, unknownProp, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonUnknownProperty)
	NewWithT(t).Expect(condition(c.Status.Conditions, metav1alpha1.ConditionReady).Message).To(ContainSubstring(p + ".missing"))
	waitEvent(t, "", unknownProp, metav1alpha1.ReasonUnknownProperty)
	c = waitClassCondition(t, unknownParent, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonUnknownParent)
	NewWithT(t).Expect(condition(c.Status.Conditions, metav1alpha1.ConditionReady).Message).To(ContainSubstring(p + ".ghost"))
	NewWithT(t).Expect(c.Status.InstanceAPI).To(BeNil(), "no CRD was made for a Class that does not resolve")

	waitClassCondition(t, fine, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	waitEvent(t, "", fine, metav1alpha1.ReasonReady)

	// Fixing the manifest fixes the Class: the missing Property appears.
	create(t, property(p+".missing", metav1alpha1.RangeInteger))
	waitClassCondition(t, unknownProp, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
}

// A Ready message longer than an Event's note may be (1024 bytes) still makes its
// Event, with the note cut; the condition keeps the whole message.
func TestLongMessagesStillMakeEvents(t *testing.T) {
	p := uniq("long")
	names := make([]string, 12)
	for i := range names {
		names[i] = uniq(p + "." + strings.Repeat("x", 90))
	}
	for i, name := range names {
		create(t, abstract(class(name, p, fmt.Sprintf("Long%d", i), []string{names[(i+1)%len(names)]})))
	}

	c := waitClassCondition(t, names[0], metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle)
	message := condition(c.Status.Conditions, metav1alpha1.ConditionReady).Message
	g := NewWithT(t)
	g.Expect(len(message)).To(BeNumerically(">", 1024))
	e := waitEvent(t, "", names[0], metav1alpha1.ReasonInheritanceCycle)
	g.Expect(len(e.Message)).To(BeNumerically("<=", 1024))
	g.Expect(e.Message).To(HaveSuffix("..."))
	g.Expect(message).To(HavePrefix(strings.TrimSuffix(e.Message, "...")))
}

// The API server refuses what a rule on the object itself can state.
func TestAPIServerRefusesInvalidManifests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("q")

	self := class(p+".self", p, "Self", []string{p + ".self"})
	g.Expect(k8s.Create(ctx, self)).To(MatchError(ContainSubstring("a Class cannot be its own parent")))

	ref := property(p+".ref", metav1alpha1.RangeRef)
	g.Expect(k8s.Create(ctx, ref)).To(MatchError(ContainSubstring("target is required when range is ref")))

	num := property(p+".num", metav1alpha1.RangeNumber)
	num.Spec.Pattern = "^[0-9]+$"
	g.Expect(k8s.Create(ctx, num)).To(MatchError(ContainSubstring("pattern and maxLength apply only to ranges string, keyword and uri")))

	bad := property(p+".kind", "colour")
	g.Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring(`spec.range: Unsupported value: "colour"`)))

	lower := class(p+".lower", p, "lower", nil)
	g.Expect(k8s.Create(ctx, lower)).To(MatchError(ContainSubstring("spec.kind")))
}

// A Property whose pattern is not a regular expression passes the API server's rules
// but is reported, and so is every Class that uses it.
func TestInvalidPropertyIsReportedWithItsClasses(t *testing.T) {
	p := uniq("r")
	pat := property(p+".code", metav1alpha1.RangeString)
	pat.Spec.Pattern = "[unclosed"
	cls := abstract(class(p+".coded", p, "Coded", nil, slot(pat.Name, false)))
	create(t, pat, cls)

	NewWithT(t).Eventually(func(g Gomega) {
		var got metav1alpha1.Property
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: pat.Name}, &got)).To(Succeed())
		valid := condition(got.Status.Conditions, metav1alpha1.ConditionValid)
		g.Expect(valid.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(valid.Message).To(ContainSubstring("not a valid regular expression"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	waitEvent(t, "", pat.Name, metav1alpha1.ReasonInvalid)
	waitClassCondition(t, cls.Name, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonPropertyNotReady)

	// Fixing the Property re-reconciles the Class through the index, not by polling.
	NewWithT(t).Eventually(func() error {
		var got metav1alpha1.Property
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: pat.Name}, &got); err != nil {
			return err
		}
		got.Spec.Pattern = "^[A-Z]+$"
		return k8s.Update(context.Background(), &got)
	}).WithTimeout(timeout).Should(Succeed())
	waitClassCondition(t, cls.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
}

// A Property change reaches every Class that has the slot, inherited ones included.
func TestPropertyChangeReReconcilesDependentClasses(t *testing.T) {
	p := uniq("s")
	prop := property(p+".colour", metav1alpha1.RangeString)
	root := abstract(class(p+".root", p, "Root", nil, slot(prop.Name, false)))
	mid := abstract(class(p+".mid", p, "Mid", []string{root.Name}))
	leaf := abstract(class(p+".leaf", p, "Leaf", []string{mid.Name}))
	create(t, prop, root, mid, leaf)
	for _, c := range []string{root.Name, mid.Name, leaf.Name} {
		got := waitClassCondition(t, c, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
		NewWithT(t).Expect(got.Status.EffectiveSlots).To(HaveLen(1))
	}

	NewWithT(t).Eventually(func() error {
		var got metav1alpha1.Property
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: prop.Name}, &got); err != nil {
			return err
		}
		got.Spec.Range = metav1alpha1.RangeKeyword
		got.Spec.Field = "hue"
		return k8s.Update(context.Background(), &got)
	}).WithTimeout(timeout).Should(Succeed())

	for _, c := range []string{root.Name, mid.Name, leaf.Name} {
		NewWithT(t).Eventually(func(g Gomega) {
			var got metav1alpha1.Class
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: c}, &got)).To(Succeed())
			g.Expect(got.Status.EffectiveSlots).To(ConsistOf(metav1alpha1.EffectiveSlot{
				Property: prop.Name, Field: "hue", Range: metav1alpha1.RangeKeyword,
				Cardinality: metav1alpha1.CardinalityOne, From: root.Name,
			}))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "class %s", c)
	}

	// A parent added later extends the leaf's slots.
	extra := property(p+".size", metav1alpha1.RangeInteger)
	other := abstract(class(p+".other", p, "Other", nil, slot(extra.Name, true)))
	create(t, extra, other)
	NewWithT(t).Eventually(func() error {
		var got metav1alpha1.Class
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: mid.Name}, &got); err != nil {
			return err
		}
		got.Spec.Parents = append(got.Spec.Parents, other.Name)
		return k8s.Update(context.Background(), &got)
	}).WithTimeout(timeout).Should(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		var got metav1alpha1.Class
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: leaf.Name}, &got)).To(Succeed())
		g.Expect(got.Status.RequiredSlots).To(Equal([]string{"size"}))
		g.Expect(got.Status.Ancestors).To(ConsistOf(root.Name, other.Name, mid.Name))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// A change that stored instances may not survive is refused unless the Class allows
// it; a compatible change goes through.
func TestBreakingInstanceAPIChangeIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("t")
	title := property(p+".title", metav1alpha1.RangeString)
	pages := property(p+".pages", metav1alpha1.RangeInteger)
	book := class(p+".book", p, "Book", nil, slot(title.Name, true))
	create(t, title, pages, book)
	got := waitClassCondition(t, book.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	crdName := got.Status.InstanceAPI.CRDName
	g.Expect(crdName).To(Equal("books." + p + ".sandbar.dev"))
	g.Expect(k8s.Create(ctx, instance(p+".sandbar.dev", "Book", "dune", map[string]any{"title": "Dune"}))).To(Succeed())

	updateClass := func(mutate func(*metav1alpha1.Class)) {
		g.Eventually(func() error {
			var c metav1alpha1.Class
			if err := k8s.Get(ctx, client.ObjectKey{Name: book.Name}, &c); err != nil {
				return err
			}
			mutate(&c)
			return k8s.Update(ctx, &c)
		}).WithTimeout(timeout).Should(Succeed())
	}

	// Adding an optional slot is compatible.
	updateClass(func(c *metav1alpha1.Class) { c.Spec.Slots = append(c.Spec.Slots, slot(pages.Name, false)) })
	g.Eventually(func(g Gomega) {
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
		g.Expect(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties).To(HaveKey("pages"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	waitClassCondition(t, book.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	// Making it required would break "dune", which has no pages.
	updateClass(func(c *metav1alpha1.Class) { c.Spec.Slots[1].Required = true })
	got = waitClassCondition(t, book.Name, metav1alpha1.ConditionInstanceAPIEstablished, metav1.ConditionFalse, metav1alpha1.ReasonBreakingChange)
	g.Expect(condition(got.Status.Conditions, metav1alpha1.ConditionInstanceAPIEstablished).Message).
		To(ContainSubstring(`slot "pages" becomes required`))
	waitClassCondition(t, book.Name, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonBreakingChange)
	waitEvent(t, "", book.Name, metav1alpha1.ReasonBreakingChange)
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
	g.Expect(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Required).To(Equal([]string{"title"}))

	// Allowed explicitly, it goes through.
	updateClass(func(c *metav1alpha1.Class) { c.Spec.InstanceAPI.AllowBreakingChanges = true })
	waitClassCondition(t, book.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
	g.Expect(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Required).To(Equal([]string{"title", "pages"}))
}

// Deleting a Class keeps its CRD and instances unless the Class asks otherwise.
func TestClassDeletionRetainsInstances(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("u")
	name := property(p+".name", metav1alpha1.RangeString)
	kept := class(p+".kept", p, "Kept", nil, slot(name.Name, true))
	gone := class(p+".gone", p, "Gone", nil, slot(name.Name, true))
	gone.Spec.InstanceAPI.DeletionPolicy = metav1alpha1.DeletionPolicyDelete
	create(t, name, kept, gone)
	waitClassCondition(t, kept.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	waitClassCondition(t, gone.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	g.Expect(k8s.Create(ctx, instance(p+".sandbar.dev", "Kept", "one", map[string]any{"name": "one"}))).To(Succeed())

	g.Expect(k8s.Delete(ctx, kept)).To(Succeed())
	g.Expect(k8s.Delete(ctx, gone)).To(Succeed())
	waitCRDDeleted(t, "gones."+p+".sandbar.dev")
	g.Eventually(func() bool {
		var c metav1alpha1.Class
		return client.IgnoreNotFound(k8s.Get(ctx, client.ObjectKey{Name: kept.Name}, &c)) == nil &&
			k8s.Get(ctx, client.ObjectKey{Name: kept.Name}, &c) != nil
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())

	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "kepts." + p + ".sandbar.dev"}, &crd)).To(Succeed())
	one := &unstructured.Unstructured{}
	one.SetAPIVersion(p + ".sandbar.dev/v1")
	one.SetKind("Kept")
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "one"}, one)).To(Succeed())

	// A Class created again adopts the retained instance API.
	again := class(p+".kept", p, "Kept", nil, slot(name.Name, true))
	create(t, again)
	waitClassCondition(t, again.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
}

// A Class applied again while the CRD it was deleted with is still being removed
// says so, is not Ready, and gets a new instance API once the old CRD is gone.
func TestAClassAppliedAgainWhileItsCRDIsRemoved(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("ag")
	name := property(p+".name", metav1alpha1.RangeString)
	boat := func() *metav1alpha1.Class {
		c := class(p+".boat", p, "Boat", nil, slot(name.Name, true))
		c.Spec.InstanceAPI.DeletionPolicy = metav1alpha1.DeletionPolicyDelete
		return c
	}
	first := boat()
	create(t, name, first)
	waitClassCondition(t, first.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	// The CRD's deletion is held, as the API server's is while it deletes many
	// instances.
	crdName := "boats." + p + ".sandbar.dev"
	const hold = "test.sandbar.dev/hold"
	// A CRD that is gone, also between the read and the write (the cleanup deletes the
	// Class, and with it the new CRD, before it releases), needs nothing done.
	finalizers := func(change func([]string) []string) {
		g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := k8s.Get(ctx, client.ObjectKey{Name: crdName}, &crd); err != nil {
				return client.IgnoreNotFound(err)
			}
			want := change(slices.Clone(crd.Finalizers))
			if slices.Equal(want, crd.Finalizers) {
				return nil
			}
			crd.Finalizers = want
			return client.IgnoreNotFound(k8s.Update(ctx, &crd))
		})).To(Succeed())
	}
	finalizers(func(f []string) []string { return append(f, hold) })
	release := func() {
		finalizers(func(f []string) []string { return slices.DeleteFunc(f, func(s string) bool { return s == hold }) })
	}
	t.Cleanup(release)

	g.Expect(k8s.Delete(ctx, first)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(first), &metav1alpha1.Class{}))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the Class is deleted")
	waitCRDDeleted(t, crdName)

	again := boat()
	create(t, again)
	got := waitClassCondition(t, again.Name, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonCRDTerminating)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, metav1alpha1.ConditionReady).Message).To(
		Equal("the CRD " + crdName + " is being deleted; the instance API is made again once the API server has removed it"))

	release()
	waitClassCondition(t, again.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
	g.Expect(crd.DeletionTimestamp.IsZero()).To(BeTrue(), "a new CRD")
}

// Two Classes with the same prefix and kind, or the same instance API: the older
// keeps it.
func TestClassNameConflicts(t *testing.T) {
	p := uniq("v")
	first := class(p+".first", p, "Gadget", nil)
	first.Spec.InstanceAPI.DeletionPolicy = metav1alpha1.DeletionPolicyDelete
	create(t, first)
	waitClassCondition(t, first.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	sameIdent := class(p+".second", p, "Gadget", nil)
	sameIdent.Spec.InstanceAPI.Plural = "gadgetz"
	create(t, sameIdent)
	got := waitClassCondition(t, sameIdent.Name, metav1alpha1.ConditionNameConflict, metav1.ConditionTrue, metav1alpha1.ReasonIdentConflict)
	NewWithT(t).Expect(condition(got.Status.Conditions, metav1alpha1.ConditionNameConflict).Message).To(ContainSubstring(first.Name))
	waitClassCondition(t, sameIdent.Name, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonIdentConflict)

	samePlural := class(p+".third", p, "Widget", nil)
	samePlural.Spec.InstanceAPI.Plural = "gadgets"
	create(t, samePlural)
	got = waitClassCondition(t, samePlural.Name, metav1alpha1.ConditionNameConflict, metav1.ConditionTrue, metav1alpha1.ReasonCRDConflict)
	NewWithT(t).Expect(condition(got.Status.Conditions, metav1alpha1.ConditionNameConflict).Message).To(ContainSubstring("gadgets." + p + ".sandbar.dev"))

	waitClassCondition(t, first.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	// When the older Class goes with its instance API, the next one takes the name
	// over. (A retained CRD keeps its kind: the API server refuses a second one.)
	// Until the API server has removed the older CRD (it deletes its instances first:
	// beside other suites, tens of seconds), the API server refuses the kind again.
	NewWithT(t).Expect(k8s.Delete(context.Background(), first)).To(Succeed())
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKey{Name: "gadgets." + p + ".sandbar.dev"}, &apiextensionsv1.CustomResourceDefinition{}))
	}).WithTimeout(3*timeout).WithPolling(poll).Should(BeTrue(), "the API server removes the older Class's CRD")
	waitClassCondition(t, sameIdent.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
}

// Two Classes that claim one instance API, the younger of which made the CRD first
// (as when both are applied at once and the younger is reconciled first): the older
// takes the CRD over and the younger reports the conflict, rather than both
// reporting a conflict for good.
func TestOlderClassTakesOverAnInstanceAPIAYoungerClassMade(t *testing.T) {
	p := uniq("t")
	older := class(p+".a-older", p, "Gadget", nil)
	disabled := false
	older.Spec.InstanceAPI.Enabled = &disabled
	create(t, older)
	waitClassCondition(t, older.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	younger := class(p+".b-younger", p, "Gadget", nil)
	create(t, younger)
	waitClassCondition(t, younger.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	enabled := true
	orig := older.DeepCopy()
	older.Spec.InstanceAPI.Enabled = &enabled
	NewWithT(t).Expect(k8s.Patch(context.Background(), older, client.MergeFrom(orig))).To(Succeed())

	waitClassCondition(t, older.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	got := waitClassCondition(t, younger.Name, metav1alpha1.ConditionReady, metav1.ConditionFalse, metav1alpha1.ReasonIdentConflict)
	NewWithT(t).Expect(condition(got.Status.Conditions, metav1alpha1.ConditionReady).Message).To(ContainSubstring(older.Name))
	var crd apiextensionsv1.CustomResourceDefinition
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Name: "gadgets." + p + ".sandbar.dev"}, &crd)).To(Succeed())
	NewWithT(t).Expect(crd.Labels).To(HaveKeyWithValue(metav1alpha1.LabelClass, older.Name))
}

// kubectl explain reads the OpenAPI document the API server publishes for a generated
// CRD: the class's and every slot's descriptions are there, and apiVersion, kind and
// metadata carry the standard descriptions, which the generated schema leaves out.
func TestKubectlExplainDescribesGeneratedInstances(t *testing.T) {
	p := uniq("x")
	colour := property(p+".colour", metav1alpha1.RangeString)
	colour.Spec.Description = "The colour of the gadget's casing."
	c := class(p+".gadget", p, "Gadget", nil, slot(colour.Name, true))
	c.Spec.Description = "A gadget on a shelf."
	create(t, colour, c)
	waitClassCondition(t, c.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	type schema struct {
		Description string            `json:"description"`
		Properties  map[string]schema `json:"properties"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	var gadget schema
	NewWithT(t).Eventually(func(g Gomega) {
		raw, err := kube.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/" + p + ".sandbar.dev/v1").DoRaw(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(json.Unmarshal(raw, &doc)).To(Succeed())
		var ok bool
		gadget, ok = doc.Components.Schemas["dev.sandbar."+p+".v1.Gadget"]
		g.Expect(ok).To(BeTrue(), "the OpenAPI document has no Gadget")
	}, timeout, poll).Should(Succeed())
	g := NewWithT(t)
	g.Expect(gadget.Description).To(ContainSubstring("A gadget on a shelf."))
	g.Expect(gadget.Properties["spec"].Properties["colour"].Description).To(ContainSubstring("The colour of the gadget's casing."))
	for _, f := range []string{"apiVersion", "kind", "metadata"} {
		g.Expect(gadget.Properties[f].Description).NotTo(BeEmpty(), "%s has no description", f)
	}
}

// A new Class whose CRD the API server establishes at once has its status written
// once, Ready: no Establishing status (and Event) comes first, a status write and an
// Event fewer for each Class of a metamodel applied at once.
func TestANewClassBecomesReadyWithoutAnEstablishingStatusFirst(t *testing.T) {
	p := uniq("est")
	name := property(p+".name", metav1alpha1.RangeString)
	c := class(uniq("once"), p, "Once", nil, slot(name.Name, true))
	create(t, name, c)

	waitClassCondition(t, c.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	waitEvent(t, "", c.Name, "InstanceAPICreated")
	// Events are written in the order they are made: the Ready one comes last.
	waitEvent(t, "", c.Name, metav1alpha1.ReasonReady)
	var events corev1.EventList
	NewWithT(t).Expect(k8s.List(context.Background(), &events, client.InNamespace("default"))).To(Succeed())
	for _, e := range events.Items {
		if e.InvolvedObject.Name == c.Name {
			NewWithT(t).Expect(e.Reason).NotTo(Equal(metav1alpha1.ReasonEstablishing), "Event %s: %s", e.Reason, e.Message)
		}
	}
}

// Deleting many Classes at once, whose CRDs go with them, ends each in one reconcile
// or a few, none of them an error: a reconcile that meets a Class already gone (the
// cache a moment behind its finalizer's removal) has nothing left to do.
func TestDeletingManyClassesLogsNoReconcilerErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("dm")
	name := property(p+".name", metav1alpha1.RangeString)
	create(t, name)
	var classes []*metav1alpha1.Class
	for i := range 40 {
		c := class(fmt.Sprintf("%s.c%02d", p, i), p, fmt.Sprintf("C%02d", i), nil, slot(name.Name, true))
		c.Spec.InstanceAPI.DeletionPolicy = metav1alpha1.DeletionPolicyDelete
		create(t, c)
		classes = append(classes, c)
	}
	for _, c := range classes {
		waitClassCondition(t, c.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	}
	before := reconcileErrors(t, "class")
	for _, c := range classes {
		g.Expect(k8s.Delete(ctx, c)).To(Succeed())
	}
	for _, c := range classes {
		g.Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c), &metav1alpha1.Class{}))
		}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), func() string {
			var got metav1alpha1.Class
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(c), &got)
			return fmt.Sprintf("%s: finalizers %v deleting %v", c.Name, got.Finalizers, got.DeletionTimestamp)
		})
	}
	for _, c := range classes {
		waitCRDDeleted(t, strings.ToLower(c.Spec.Kind)+"s."+p+".sandbar.dev")
	}
	g.Expect(reconcileErrors(t, "class")-before).To(BeZero(), "reconciler errors while deleting")
}
