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
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// wantCondition is the condition a bad manifest must end in.
type wantCondition struct {
	obj     client.Object
	typ     string
	status  metav1.ConditionStatus
	reason  string
	message string // a substring that tells a person what to do or what is wrong
}

// badManifest is one kind of malformed or hostile manifest.
type badManifest struct {
	name string
	// apply makes the objects, in order; with refused set, the last one must be
	// refused by the API server with that message, and not be stored.
	apply   func(p string) []client.Object
	refused string
	// then, if set, changes the cluster after the objects are applied and the first
	// want holds (a parent deleted, a Property's range changed).
	then func(t *testing.T, p string, objs []client.Object)
	// want are the conditions the objects end in.
	want func(p string, objs []client.Object) []wantCondition
}

func conditionsOf(o client.Object) []metav1.Condition {
	switch o := o.(type) {
	case *metav1alpha1.Class:
		return o.Status.Conditions
	case *metav1alpha1.Property:
		return o.Status.Conditions
	case *metav1alpha1.WorkflowDefinition:
		return o.Status.Conditions
	case *metav1alpha1.ServiceAccount:
		return o.Status.Conditions
	case *metav1alpha1.WorkflowProcess:
		return o.Status.Conditions
	}
	return nil
}

func ready(obj client.Object, status metav1.ConditionStatus, reason, message string) wantCondition {
	return wantCondition{obj: obj, typ: metav1alpha1.ConditionReady, status: status, reason: reason, message: message}
}

func readyTrue(obj client.Object) wantCondition {
	return ready(obj, metav1.ConditionTrue, metav1alpha1.ReasonReady, "")
}

func labelledSecret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{metav1alpha1.LabelAPIKey: "true"}},
		Data:       data,
	}
}

func mcpAccount(name, service, secret string) *metav1alpha1.ServiceAccount {
	return &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: service,
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: secret}},
	}
}

func wfStates(names ...string) []metav1alpha1.WorkflowState {
	var out []metav1alpha1.WorkflowState
	for _, n := range names {
		out = append(out, metav1alpha1.WorkflowState{Name: n})
	}
	out[len(out)-1].Terminal = metav1alpha1.TerminalSuccess
	return out
}

func transition(name, to string, from ...string) metav1alpha1.WorkflowTransition {
	return metav1alpha1.WorkflowTransition{Name: name, From: from, To: to}
}

// kindOfLength is an UpperCamelCase kind of n characters that does not end in s.
func kindOfLength(n int) string { return "K" + strings.Repeat("a", n-2) + "t" }

// reconcilePanics is what controller-runtime counts of panics it recovered in
// reconcilers, all controllers together.
func reconcilePanics(t *testing.T) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_panics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

func badManifests() []badManifest {
	return []badManifest{
		// Classes: inheritance.
		{
			name: "Class/inheritance cycle 50 deep",
			apply: func(p string) []client.Object {
				var out []client.Object
				for i := range 50 {
					out = append(out, abstract(class(fmt.Sprintf("%s.c%02d", p, i), p, fmt.Sprintf("C%02d", i),
						[]string{fmt.Sprintf("%s.c%02d", p, (i+1)%50)})))
				}
				return out
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{
					ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle, p+".c49 -> "+p+".c00"),
					ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle, "remove one of these parents"),
					ready(objs[49], metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle, "inheritance cycle"),
				}
			},
		},
		{
			name: "Class/inheritance cycle of 130 names of 253 characters, longer than a condition's message may be",
			apply: func(p string) []client.Object {
				name := func(i int) string { return fmt.Sprintf("%s.%03d.%s", p, i%130, strings.Repeat("n", 247-len(p))) }
				var out []client.Object
				for i := range 130 {
					out = append(out, abstract(class(name(i), p, fmt.Sprintf("L%03d", i), []string{name(i + 1)})))
				}
				return out
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{
					ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle, "inheritance cycle: "+objs[0].GetName()),
					ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle, "(111 more)"),
					ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInheritanceCycle, "remove one of these parents"),
				}
			},
		},
		{
			name: "Class/its own parent",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".self", p, "Self", []string{p + ".self"})}
			},
			refused: "a Class cannot be its own parent",
		},
		{
			name: "Class/parent that does not exist",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".orphan", p, "Orphan", []string{p + ".ghost"})}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonUnknownParent, `parent Class "`+p+`.ghost"`)}
			},
		},
		{
			name: "Class/parent deleted under it",
			apply: func(p string) []client.Object {
				return []client.Object{abstract(class(p+".base", p, "Base", nil)), class(p+".derived", p, "Derived", []string{p + ".base"})}
			},
			then: func(t *testing.T, _ string, objs []client.Object) {
				NewWithT(t).Expect(k8s.Delete(context.Background(), objs[0])).To(Succeed())
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonUnknownParent, `parent Class "`+p+`.base"`)}
			},
		},
		// Classes: slots.
		{
			name: "Class/500 slots through 4 parents, descriptions at their limit",
			apply: func(p string) []client.Object {
				var out, parents []client.Object
				var names []string
				for i := range 4 {
					parent := abstract(class(fmt.Sprintf("%s.part%d", p, i), p, fmt.Sprintf("Part%d", i), nil))
					for j := range 125 {
						prop := property(fmt.Sprintf("%s.s%d-%03d", p, i, j), metav1alpha1.RangeString)
						prop.Spec.Description = strings.Repeat("d", 2048)
						out = append(out, prop)
						parent.Spec.Slots = append(parent.Spec.Slots, slot(prop.Name, j%2 == 0))
					}
					parents = append(parents, parent)
					names = append(names, parent.Name)
				}
				big := class(p+".big", p, "Big", names)
				big.Spec.Description = strings.Repeat("b", 4096)
				return append(append(out, parents...), big)
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{readyTrue(objs[len(objs)-1])}
			},
		},
		{
			name: "Class/1,000 slots with descriptions at their limit, a CRD too large to store",
			apply: func(p string) []client.Object {
				var out, parents []client.Object
				var names []string
				for i := range 8 {
					parent := abstract(class(fmt.Sprintf("%s.part%d", p, i), p, fmt.Sprintf("Part%d", i), nil))
					for j := range 125 {
						prop := property(fmt.Sprintf("%s.s%d-%03d", p, i, j), metav1alpha1.RangeString)
						prop.Spec.Description = strings.Repeat("d", 2048)
						out = append(out, prop)
						parent.Spec.Slots = append(parent.Spec.Slots, slot(prop.Name, false))
					}
					parents = append(parents, parent)
					names = append(names, parent.Name)
				}
				return append(append(out, parents...), class(p+".huge", p, "Huge", names))
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[len(objs)-1], metav1.ConditionFalse, metav1alpha1.ReasonApplyFailed, "too large for the API server to store")}
			},
		},
		{
			name: "Class/slot naming a Property that does not exist",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".noprop", p, "NoProp", nil, slot(p+".missing", true))}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonUnknownProperty, `Property "`+p+`.missing"`)}
			},
		},
		{
			name: "Class/the same slot twice",
			apply: func(p string) []client.Object {
				return []client.Object{property(p+".title", metav1alpha1.RangeString),
					class(p+".twice", p, "Twice", nil, slot(p+".title", true), slot(p+".title", false))}
			},
			refused: "Duplicate value",
		},
		{
			name: "Class/two slots with one field",
			apply: func(p string) []client.Object {
				a, b := property(p+".a.name", metav1alpha1.RangeString), property(p+".b.name", metav1alpha1.RangeString)
				return []client.Object{a, b, class(p+".clash", p, "Clash", nil, slot(a.Name, false), slot(b.Name, false))}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[2], metav1.ConditionFalse, metav1alpha1.ReasonDuplicateField, `both use the field "name"`)}
			},
		},
		{
			name: "Class/slot with the reserved field metadata",
			apply: func(p string) []client.Object {
				m := property(p+".metadata", metav1alpha1.RangeString)
				return []client.Object{m, class(p+".meta", p, "Meta", nil, slot(m.Name, false))}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonReservedField, "set its spec.field")}
			},
		},
		{
			name: "Class/codec section that is not a string slot",
			apply: func(p string) []client.Object {
				n := property(p+".count", metav1alpha1.RangeInteger)
				c := class(p+".doc", p, "Doc", nil, slot(n.Name, false))
				c.Spec.Codec = metav1alpha1.CodecSpec{Format: metav1alpha1.CodecMarkdown, Sections: []string{"count"}}
				return []client.Object{n, c}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, `codec section "count" is not a single-valued string slot`)}
			},
		},
		// Classes: names and their limits.
		{
			name: "Class/empty kind",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".nokind", p, "", nil)}
			},
			refused: "spec.kind",
		},
		{
			name: "Class/kind that is not UpperCamelCase",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".lower", p, "space-boot", nil)}
			},
			refused: "spec.kind",
		},
		{
			name: "Class/prefix meta, Sandbar's own group",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".meta", "meta", "Thing", nil)}
			},
			refused: "prefix meta is reserved",
		},
		{
			name: "Class/unicode in its name",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".zürich", p, "Zurich", nil)}
			},
			refused: "metadata.name",
		},
		{
			name: "Class/unicode and control characters in descriptions and enums",
			apply: func(p string) []client.Object {
				colour := property(p+".colour", metav1alpha1.RangeString)
				colour.Spec.Description = "Farbe 色 🎨 \u202e\x1b[31m\x07 bell"
				colour.Spec.Enum = []string{"rot", "grün", "青", "🟦", "tab\there"}
				c := class(p+".paint", p, "Paint", nil, slot(colour.Name, true))
				c.Spec.Description = "Peinture ✓ \u0000\u200b zero-width"
				return []client.Object{colour, c}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{readyTrue(objs[0]), readyTrue(objs[1])}
			},
		},
		{
			name: "Class/name of 253 characters, abstract",
			apply: func(p string) []client.Object {
				name := p + "." + strings.Repeat("n", 252-len(p))
				return []client.Object{abstract(class(name, p, "Long", nil))}
			},
			want: func(p string, objs []client.Object) []wantCondition { return []wantCondition{readyTrue(objs[0])} },
		},
		{
			name: "Class/name longer than 63 characters with an instance API",
			apply: func(p string) []client.Object {
				name := p + "." + strings.Repeat("n", 64)
				return []client.Object{class(name, p, "Named", nil)}
			},
			refused: "at most 63 characters",
		},
		{
			name: "Class/name of 63 characters with an instance API",
			apply: func(p string) []client.Object {
				name := p + "." + strings.Repeat("n", 62-len(p))
				return []client.Object{class(name, p, "Named", nil)}
			},
			want: func(p string, objs []client.Object) []wantCondition { return []wantCondition{readyTrue(objs[0])} },
		},
		{
			name: "Class/kind of 63 characters (its list kind would be 67)",
			apply: func(p string) []client.Object {
				c := class(p+".k63", p, kindOfLength(63), nil)
				c.Spec.InstanceAPI.Plural = "k63"
				return []client.Object{c}
			},
			refused: "spec.kind",
		},
		{
			name: "Class/kind of 59 characters, prefix of 32, plural of 63",
			apply: func(p string) []client.Object {
				prefix := p + strings.Repeat("x", 32-len(p))
				c := class(p+".limits", prefix, kindOfLength(59), nil)
				c.Spec.InstanceAPI.Plural = strings.Repeat("p", 63)
				return []client.Object{c}
			},
			want: func(p string, objs []client.Object) []wantCondition { return []wantCondition{readyTrue(objs[0])} },
		},
		{
			name: "Class/kind of 59 characters ending in s, derived plural of 61",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".plural", p, "K"+strings.Repeat("a", 57)+"s", nil)}
			},
			want: func(p string, objs []client.Object) []wantCondition { return []wantCondition{readyTrue(objs[0])} },
		},
		{
			name: "Class/two Classes claiming one prefix and kind",
			apply: func(p string) []client.Object {
				first := class(p+".first", p, "Gadget", nil)
				second := class(p+".second", p, "Gadget", nil)
				second.Spec.InstanceAPI.Plural = "gadgetz"
				return []client.Object{first, second}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{readyTrue(objs[0]),
					ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonIdentConflict, "change spec.prefix, spec.kind or spec.instanceAPI.plural")}
			},
		},
		{
			name: "Class/kind that is another Class's list kind",
			apply: func(p string) []client.Object {
				return []client.Object{class(p+".thing", p, "Thing", nil)}
			},
			// The second Class comes once the first is served: of two created at once,
			// which CRD gets the name ThingList first is a race.
			then: func(t *testing.T, p string, objs []client.Object) {
				waitWant(t, readyTrue(objs[0]))
				create(t, class(p+".things", p, "ThingList", nil))
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{readyTrue(objs[0]), ready(class(p+".things", p, "ThingList", nil),
					metav1.ConditionFalse, metav1alpha1.ReasonCRDConflict, "change spec.kind or spec.instanceAPI.plural")}
			},
		},
		{
			name: "Class/instance API of a CRD Sandbar did not make",
			apply: func(p string) []client.Object {
				return []client.Object{foreignCRD(p), class(p+".squat", p, "Squat", nil)}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonCRDConflict, "was not generated by Sandbar")}
			},
		},
		// Properties.
		{
			name: "Property/unknown range",
			apply: func(p string) []client.Object {
				return []client.Object{property(p+".hue", "colour")}
			},
			refused: `spec.range: Unsupported value: "colour"`,
		},
		{
			name: "Property/enum on a range without values",
			apply: func(p string) []client.Object {
				n := property(p+".n", metav1alpha1.RangeInteger)
				n.Spec.Enum = []string{"one"}
				return []client.Object{n}
			},
			refused: "enum applies only to ranges string, keyword, uri and uuid",
		},
		{
			name: "Property/ref without a target",
			apply: func(p string) []client.Object {
				return []client.Object{property(p+".ref", metav1alpha1.RangeRef)}
			},
			refused: "target is required when range is ref",
		},
		{
			name: "Property/ref to a Class that does not exist",
			apply: func(p string) []client.Object {
				r := property(p+".owner", metav1alpha1.RangeRef)
				r.Spec.Target = p + ".nobody"
				return []client.Object{r, class(p+".pet", p, "Pet", nil, slot(r.Name, false))}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{
					ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonUnknownClass, `target Class "`+p+`.nobody" does not exist`),
					ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonPropertyNotReady, `target Class "`+p+`.nobody" does not exist`),
				}
			},
		},
		{
			name: "Property/minimum greater than maximum",
			apply: func(p string) []client.Object {
				n := property(p+".n", metav1alpha1.RangeNumber)
				lo, hi := 10.0, 1.0
				n.Spec.Minimum, n.Spec.Maximum = &lo, &hi
				return []client.Object{n}
			},
			refused: "minimum must not be greater than maximum",
		},
		{
			name: "Property/pattern that is not a regular expression",
			apply: func(p string) []client.Object {
				s := property(p+".code", metav1alpha1.RangeString)
				s.Spec.Pattern = "[unclosed"
				return []client.Object{s}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, "not a valid regular expression")}
			},
		},
		{
			name: "Property/enum value its own pattern refuses",
			apply: func(p string) []client.Object {
				s := property(p+".code", metav1alpha1.RangeString)
				s.Spec.Pattern = "^[A-Z]+$"
				s.Spec.Enum = []string{"OK", "no"}
				return []client.Object{s}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, `enum value "no" does not match pattern`)}
			},
		},
		{
			name: "Property/enum values not of its range",
			apply: func(p string) []client.Object {
				id := property(p+".id", metav1alpha1.RangeUUID)
				id.Spec.Enum = []string{"0b7e9c1a-4a5f-4c53-9f43-0e1b7d3a9c11", "not-a-uuid"}
				return []client.Object{id}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, `enum value "not-a-uuid" is not a valid uuid`)}
			},
		},
		{
			name: "Property/field of 64 characters",
			apply: func(p string) []client.Object {
				s := property(p+".f", metav1alpha1.RangeString)
				s.Spec.Field = "f" + strings.Repeat("x", 63)
				return []client.Object{s}
			},
			refused: "spec.field",
		},
		{
			name: "Property/range changed under existing instances",
			apply: func(p string) []client.Object {
				pages := property(p+".pages", metav1alpha1.RangeString)
				return []client.Object{pages, class(p+".book", p, "Book", nil, slot(pages.Name, true))}
			},
			then: func(t *testing.T, p string, objs []client.Object) {
				g := NewWithT(t)
				ctx := context.Background()
				waitClassCondition(t, objs[1].GetName(), metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
				inst := instance(p+".sandbar.dev", "Book", p+"-dune", map[string]any{"pages": "four hundred"})
				g.Expect(k8s.Create(ctx, inst)).To(Succeed())
				t.Cleanup(func() { _ = k8s.Delete(context.Background(), inst) })
				g.Eventually(func() error {
					var got metav1alpha1.Property
					if err := k8s.Get(ctx, client.ObjectKeyFromObject(objs[0]), &got); err != nil {
						return err
					}
					got.Spec.Range = metav1alpha1.RangeInteger
					return k8s.Update(ctx, &got)
				}).WithTimeout(timeout).Should(Succeed())
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{
					readyTrue(objs[0]),
					ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonBreakingChange, "set spec.instanceAPI.allowBreakingChanges"),
				}
			},
		},
		// WorkflowDefinitions.
		{
			name: "WorkflowDefinition/transition to a state that does not exist",
			apply: func(p string) []client.Object {
				return []client.Object{workflow(p+"-wf", wfStates("open", "done"), transition("go", "nowhere", "open"))}
			},
			refused: "every transition's to must name one of the states",
		},
		{
			name: "WorkflowDefinition/transition from a state that does not exist",
			apply: func(p string) []client.Object {
				return []client.Object{workflow(p+"-wf", wfStates("open", "done"), transition("go", "done", "limbo"))}
			},
			refused: "every transition's from must name states of the workflow",
		},
		{
			name: "WorkflowDefinition/initial state that does not exist",
			apply: func(p string) []client.Object {
				w := workflow(p+"-wf", wfStates("open", "done"))
				w.Spec.Initial = "start"
				return []client.Object{w}
			},
			refused: "initial must name one of the states",
		},
		{
			name: "WorkflowDefinition/no terminal state",
			apply: func(p string) []client.Object {
				w := workflow(p+"-wf", wfStates("open", "done"))
				w.Spec.States[1].Terminal = ""
				return []client.Object{w}
			},
			refused: "at least one state must be terminal",
		},
		{
			name: "WorkflowDefinition/transition out of a terminal state",
			apply: func(p string) []client.Object {
				return []client.Object{workflow(p+"-wf", wfStates("open", "done"),
					transition("finish", "done", "open"), transition("reopen", "open", "done"))}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, `transition "reopen" starts from the terminal state "done"`)}
			},
		},
		{
			name: "WorkflowDefinition/no transition reaches a terminal state",
			apply: func(p string) []client.Object {
				return []client.Object{workflow(p+"-wf", wfStates("open", "review", "done"),
					transition("submit", "review", "open"), transition("back", "open", "review"))}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, `state "open" leads to no terminal state`)}
			},
		},
		{
			name: "WorkflowDefinition/cycle that traps processes away from the end",
			apply: func(p string) []client.Object {
				return []client.Object{workflow(p+"-wf", wfStates("open", "loop-a", "loop-b", "done"),
					transition("finish", "done", "open"), transition("enter", "loop-a", "open"),
					transition("tick", "loop-b", "loop-a"), transition("tock", "loop-a", "loop-b"))}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, `state "loop-a" leads to no terminal state`)}
			},
		},
		{
			name: "WorkflowDefinition/subject Class that does not exist",
			apply: func(p string) []client.Object {
				w := workflow(p+"-wf", wfStates("open", "done"), transition("finish", "done", "open"))
				w.Spec.SubjectClass = p + ".ghost"
				return []client.Object{w}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonUnknownClass, `subject Class "`+p+`.ghost" does not exist`)}
			},
		},
		// ServiceAccounts.
		{
			name: "ServiceAccount/Secret that does not exist",
			apply: func(p string) []client.Object {
				return []client.Object{mcpAccount(p, p, p+"-key")}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonSecretNotFound, "labelled meta.sandbar.dev/api-key=true")}
			},
		},
		{
			name: "ServiceAccount/Secret without the key",
			apply: func(p string) []client.Object {
				return []client.Object{labelledSecret(p+"-key", map[string][]byte{"other": []byte("x")}), mcpAccount(p, p, p+"-key")}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonKeyNotFound, `has no key "api-key-hash"`)}
			},
		},
		{
			name: "ServiceAccount/Secret holding a key, not a hash",
			apply: func(p string) []client.Object {
				return []client.Object{labelledSecret(p+"-key", map[string][]byte{"api-key-hash": []byte("plain-text-key")}), mcpAccount(p, p, p+"-key")}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonInvalidHash, "store the hash of the API key, never the key")}
			},
		},
		{
			name: "ServiceAccount/tool permission that is not a glob",
			apply: func(p string) []client.Object {
				sa := mcpAccount(p, p, p+"-key")
				sa.Spec.Permissions.Tools = []string{"sandbar_entity_*", "sandbar_[schema"}
				return []client.Object{labelledSecret(p+"-key", map[string][]byte{"api-key-hash": goodHash()}), sa}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonInvalid, `spec.permissions.tools "sandbar_[schema" is not a valid glob`)}
			},
		},
		{
			name: "ServiceAccount/service name another account has",
			apply: func(p string) []client.Object {
				return []client.Object{labelledSecret(p+"-key", map[string][]byte{"api-key-hash": goodHash()}),
					mcpAccount(p+"-first", p, p+"-key"), mcpAccount(p+"-second", p, p+"-key")}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{readyTrue(objs[1]),
					ready(objs[2], metav1.ConditionFalse, metav1alpha1.ReasonDuplicateService, "default/"+p+"-first")}
			},
		},
		{
			name: "ServiceAccount/service name with a colon",
			apply: func(p string) []client.Object {
				return []client.Object{mcpAccount(p, p+":evil", p+"-key")}
			},
			refused: "spec.serviceName",
		},
		// WorkflowProcesses.
		{
			name: "WorkflowProcess/definition that does not exist",
			apply: func(p string) []client.Object {
				return []client.Object{process(p, p+"-nowhere", nil)}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[0], metav1.ConditionFalse, metav1alpha1.ReasonUnknownDefinition, `WorkflowDefinition "`+p+`-nowhere" does not exist`)}
			},
		},
		{
			name: "WorkflowProcess/definition that is not valid",
			apply: func(p string) []client.Object {
				return []client.Object{workflow(p+"-wf", wfStates("open", "done"),
					transition("finish", "done", "open"), transition("reopen", "open", "done")), process(p, p+"-wf", nil)}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{ready(objs[1], metav1.ConditionFalse, metav1alpha1.ReasonDependencyFailed, "is not valid")}
			},
		},
		{
			name: "WorkflowProcess/empty definition",
			apply: func(p string) []client.Object {
				return []client.Object{process(p, "", nil)}
			},
			refused: "spec.definition",
		},
		{
			name: "WorkflowProcess/built-in export with input of the wrong shape",
			apply: func(p string) []client.Object {
				return []client.Object{process(p, "sandbar.export", map[string]any{"classes": 42, "format": []string{"x"}})}
			},
			want: func(p string, objs []client.Object) []wantCondition {
				return []wantCondition{{obj: objs[0], typ: "Phase", message: "input"}}
			},
		},
	}
}

var goodHashValue []byte

func goodHash() []byte {
	if goodHashValue == nil {
		h, err := bcrypt.GenerateFromPassword([]byte("a-key"), bcrypt.MinCost)
		if err != nil {
			panic(err)
		}
		goodHashValue = h
	}
	return goodHashValue
}

// foreignCRD is a CRD that Sandbar did not make, with the names Class <p>.squat wants.
func foreignCRD(p string) *apiextensionsv1.CustomResourceDefinition {
	group := p + ".sandbar.dev"
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "squats." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "squats", Singular: "squat", Kind: "Squat", ListKind: "SquatList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

// Every kind of bad manifest ends in a condition a person can act on, or in the API
// server's refusal that says what is wrong; none panics a reconciler or stalls a
// queue: a good Class made after all of them is Ready.
func TestBadManifestsEndInAnActionableCondition(t *testing.T) {
	panicsBefore := reconcilePanics(t)
	for _, row := range badManifests() {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			p := uniq("bad")
			cleanupGeneratedCRDs(t, p)
			objs := row.apply(p)
			for i := 0; i < len(objs); i++ {
				o := objs[i]
				if j := i; isProperty(o) {
					for j < len(objs)-1 && isProperty(objs[j+1]) {
						j++
					}
					if j-i >= 16 && (row.refused == "" || j < len(objs)-1) {
						createConcurrently(t, objs[i:j+1])
						i = j
						continue
					}
				}
				if row.refused != "" && i == len(objs)-1 {
					err := k8s.Create(ctx, o)
					g.Expect(err).To(MatchError(ContainSubstring(row.refused)))
					g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "refused as invalid: %v", err)
					fresh := o.DeepCopyObject().(client.Object)
					g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(o), fresh))).To(BeTrue(), "nothing stored")
					break
				}
				create(t, o)
			}
			if row.want == nil {
				return
			}
			if row.then != nil {
				row.then(t, p, objs)
			}
			for _, w := range row.want(p, objs) {
				waitWant(t, w)
			}
		})
	}

	// The manager is still at work: a good Class after all the bad ones is served.
	p := uniq("after")
	title := property(p+".title", metav1alpha1.RangeString)
	good := class(p+".good", p, "Good", nil, slot(title.Name, true))
	good.Spec.InstanceAPI.DeletionPolicy = metav1alpha1.DeletionPolicyDelete
	create(t, title, good)
	waitClassCondition(t, good.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	NewWithT(t).Expect(reconcilePanics(t)).To(Equal(panicsBefore), "no reconciler panicked")
}

// waitWant waits until the object's condition is as wanted. The type Phase stands for
// a WorkflowProcess's phase Failed with its status message.
func waitWant(t *testing.T, w wantCondition) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		got := w.obj.DeepCopyObject().(client.Object)
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(w.obj), got)).To(Succeed())
		if w.typ == "Phase" {
			wp := got.(*metav1alpha1.WorkflowProcess)
			g.Expect(wp.Status.Phase).To(Equal(metav1alpha1.PhaseFailed), wp.Status.StatusMessage)
			g.Expect(wp.Status.StatusMessage).To(ContainSubstring(w.message))
			return
		}
		c := condition(conditionsOf(got), w.typ)
		g.Expect(c.Status).To(Equal(w.status), "%s %s: %s", w.typ, c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(w.reason), "%s: %s", w.typ, c.Message)
		g.Expect(c.Message).To(ContainSubstring(w.message))
		g.Expect(c.ObservedGeneration).To(Equal(got.GetGeneration()))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s %s", w.obj.GetObjectKind().GroupVersionKind().Kind, w.obj.GetName())
}

// cleanupGeneratedCRDs deletes, when the test ends, the CRDs generated for groups whose
// prefix starts with p.
func cleanupGeneratedCRDs(t *testing.T, p string) {
	t.Cleanup(func() {
		ctx := context.Background()
		var list apiextensionsv1.CustomResourceDefinitionList
		if err := k8s.List(ctx, &list, client.MatchingLabels{metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue}); err != nil {
			return
		}
		for i := range list.Items {
			if strings.HasPrefix(list.Items[i].Spec.Group, p) {
				_ = k8s.Delete(ctx, &list.Items[i])
			}
		}
	})
}

func isProperty(o client.Object) bool { _, ok := o.(*metav1alpha1.Property); return ok }

// createConcurrently creates many objects whose order does not matter, eight at a
// time, and deletes them the same way when the test ends.
func createConcurrently(t *testing.T, objs []client.Object) {
	t.Helper()
	each := func(do func(client.Object) error) error {
		var mu sync.Mutex
		var first error
		var wg sync.WaitGroup
		work := make(chan client.Object)
		for range 8 {
			wg.Go(func() {
				for o := range work {
					if err := do(o); err != nil {
						mu.Lock()
						first = cmp.Or(first, err)
						mu.Unlock()
					}
				}
			})
		}
		for _, o := range objs {
			work <- o
		}
		close(work)
		wg.Wait()
		return first
	}
	t.Cleanup(func() {
		_ = each(func(o client.Object) error { return client.IgnoreNotFound(k8s.Delete(context.Background(), o)) })
	})
	NewWithT(t).Expect(each(func(o client.Object) error { return k8s.Create(context.Background(), o) })).To(Succeed())
}
