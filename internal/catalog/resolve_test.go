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

package catalog

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// ---- fixtures -------------------------------------------------------------------

func ptr[T any](v T) *T { return &v }

type propOpt func(*metav1alpha1.PropertySpec)

func newProp(name string, r metav1alpha1.PropertyRange, opts ...propOpt) metav1alpha1.Property {
	p := metav1alpha1.Property{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       metav1alpha1.PropertySpec{Range: r},
	}
	for _, o := range opts {
		o(&p.Spec)
	}
	return p
}

func withField(f string) propOpt   { return func(s *metav1alpha1.PropertySpec) { s.Field = f } }
func withTarget(t string) propOpt  { return func(s *metav1alpha1.PropertySpec) { s.Target = t } }
func withPattern(p string) propOpt { return func(s *metav1alpha1.PropertySpec) { s.Pattern = p } }
func withMaxLen(n int64) propOpt   { return func(s *metav1alpha1.PropertySpec) { s.MaxLength = &n } }
func withEnum(v ...string) propOpt { return func(s *metav1alpha1.PropertySpec) { s.Enum = v } }
func withMany() propOpt {
	return func(s *metav1alpha1.PropertySpec) { s.Cardinality = metav1alpha1.CardinalityMany }
}
func withRange(lo, hi float64) propOpt {
	return func(s *metav1alpha1.PropertySpec) { s.Minimum, s.Maximum = &lo, &hi }
}

func newClass(name string, abstract bool, parents []string, slots ...metav1alpha1.SlotRef) metav1alpha1.Class {
	prefix, kind, _ := strings.Cut(name, ".")
	return metav1alpha1.Class{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: metav1alpha1.ClassSpec{
			Prefix:   prefix,
			Kind:     strings.ToUpper(kind[:1]) + kind[1:],
			Abstract: abstract,
			Parents:  parents,
			Slots:    slots,
		},
	}
}

func opt(p string) metav1alpha1.SlotRef { return metav1alpha1.SlotRef{Property: p} }
func req(p string) metav1alpha1.SlotRef { return metav1alpha1.SlotRef{Property: p, Required: true} }

// lookupOf backs a Lookup with maps, as Build does.
func lookupOf(classes []metav1alpha1.Class, props []metav1alpha1.Property) mapLookup {
	l := mapLookup{classes: map[string]*metav1alpha1.Class{}, properties: map[string]*metav1alpha1.Property{}}
	for i := range classes {
		l.classes[classes[i].Name] = &classes[i]
	}
	for i := range props {
		l.properties[props[i].Name] = &props[i]
	}
	return l
}

// baseProps are Properties that every ResolveClass case can use.
func baseProps() []metav1alpha1.Property {
	return []metav1alpha1.Property{
		newProp("footwear.name", metav1alpha1.RangeString),
		newProp("footwear.size", metav1alpha1.RangeInteger),
		newProp("footwear.tags", metav1alpha1.RangeString, withMany()),
		newProp("zorp.tentacle-count", metav1alpha1.RangeInteger),
		newProp("zorp.color", metav1alpha1.RangeKeyword),
		newProp("zorp.name", metav1alpha1.RangeString),                        // field "name", clashes with footwear.name
		newProp("zorp.label", metav1alpha1.RangeString, withField("name")),    // field "name" by override
		newProp("zorp.metadata", metav1alpha1.RangeJSON),                      // the reserved field
		newProp("zorp.broken-ref", metav1alpha1.RangeRef),                     // ref without target
		newProp("zorp.owner", metav1alpha1.RangeRef, withTarget("zorp.gone")), // target does not exist
		newProp("d.a", metav1alpha1.RangeString),
		newProp("d.b", metav1alpha1.RangeString),
		newProp("d.c", metav1alpha1.RangeString),
		newProp("d.d", metav1alpha1.RangeString),
	}
}

func assertProblem(t *testing.T, got *Problem, reason string, words ...string) {
	t.Helper()
	if reason == "" {
		if got != nil {
			t.Fatalf("problem = %+v, want none", *got)
		}
		return
	}
	if got == nil {
		t.Fatalf("problem = nil, want reason %s", reason)
	}
	if got.Reason != reason {
		t.Errorf("reason = %q, want %q (message %q)", got.Reason, reason, got.Message)
	}
	for _, w := range words {
		if !strings.Contains(got.Message, w) {
			t.Errorf("message %q does not contain %q", got.Message, w)
		}
	}
}

// ---- FieldName ------------------------------------------------------------------

func TestFieldName(t *testing.T) {
	fieldPattern := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`) // PropertySpec.Field's pattern
	tests := []struct {
		name, field, want string
	}{
		{name: "footwear.tentacle-count", want: "tentacleCount"},
		{name: "footwear.name", want: "name"},
		{name: "x", want: "x"},
		{name: "footwear.tentacle-count", field: "legs", want: "legs"},
		{name: "footwear.shoe_size", want: "shoeSize"},
		{name: "footwear.lace_tip-color", want: "laceTipColor"},
		{name: "a.b.release-date", want: "releaseDate"},
		{name: "footwear.size-2", want: "size2"},
		{name: "footwear.3d-model", want: "f3dModel"},
		{name: "footwear.4", want: "f4"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.field, func(t *testing.T) {
			p := newProp(tt.name, metav1alpha1.RangeString, withField(tt.field))
			got := FieldName(&p)
			if got != tt.want {
				t.Errorf("FieldName(%q, field %q) = %q, want %q", tt.name, tt.field, got, tt.want)
			}
			if !fieldPattern.MatchString(got) {
				t.Errorf("FieldName(%q) = %q does not match the field pattern %s", tt.name, got, fieldPattern)
			}
		})
	}
}

// ---- ValidateProperty -----------------------------------------------------------

func TestValidateProperty(t *testing.T) {
	classes := []metav1alpha1.Class{newClass("zorp.space-boot", false, nil)}
	tests := []struct {
		desc   string
		prop   metav1alpha1.Property
		reason string
		words  []string
	}{
		{desc: "valid string with constraints",
			prop: newProp("zorp.color-name", metav1alpha1.RangeString,
				withPattern(`^[a-z]+$`), withMaxLen(5), withEnum("red", "blue"))},
		{desc: "valid integer with minimum equal to maximum",
			prop: newProp("zorp.one", metav1alpha1.RangeInteger, withRange(1, 1))},
		{desc: "maxLength counts characters, not bytes",
			prop: newProp("zorp.umlaut", metav1alpha1.RangeString, withMaxLen(3), withEnum("äöü"))},
		{desc: "ref to a known class",
			prop: newProp("zorp.boot", metav1alpha1.RangeRef, withTarget("zorp.space-boot"))},
		{desc: "ref without target",
			prop:   newProp("zorp.boot", metav1alpha1.RangeRef),
			reason: metav1alpha1.ReasonInvalid, words: []string{"ref", "target"}},
		{desc: "target on a non-ref",
			prop:   newProp("zorp.boot", metav1alpha1.RangeString, withTarget("zorp.space-boot")),
			reason: metav1alpha1.ReasonInvalid, words: []string{"target", "only for range ref", "string"}},
		{desc: "minimum greater than maximum",
			prop:   newProp("zorp.count", metav1alpha1.RangeInteger, withRange(10, 2)),
			reason: metav1alpha1.ReasonInvalid, words: []string{"minimum 10", "greater than", "maximum 2"}},
		{desc: "pattern that does not compile",
			prop:   newProp("zorp.code", metav1alpha1.RangeString, withPattern("[")),
			reason: metav1alpha1.ReasonInvalid, words: []string{`"["`, "not a valid regular expression"}},
		{desc: "enum value not matching the pattern",
			prop:   newProp("zorp.code", metav1alpha1.RangeString, withPattern(`^[a-z]+$`), withEnum("red", "Blue")),
			reason: metav1alpha1.ReasonInvalid, words: []string{`"Blue"`, "does not match pattern", `"^[a-z]+$"`}},
		{desc: "enum value longer than maxLength",
			prop:   newProp("zorp.code", metav1alpha1.RangeString, withMaxLen(3), withEnum("red", "green")),
			reason: metav1alpha1.ReasonInvalid, words: []string{`"green"`, "longer than maxLength 3"}},
		{desc: "ref to an unknown class",
			prop:   newProp("zorp.owner", metav1alpha1.RangeRef, withTarget("zorp.nowhere")),
			reason: metav1alpha1.ReasonUnknownClass, words: []string{`"zorp.nowhere"`, "does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			assertProblem(t, ValidateProperty(&tt.prop, lookupOf(classes, nil)), tt.reason, tt.words...)
		})
	}
}

// ---- ResolveClass ---------------------------------------------------------------

// slotSum is the part of a Slot that resolution decides.
type slotSum struct {
	Property, Field, From string
	Required              bool
}

func summarize(slots []*Slot) []slotSum {
	var out []slotSum
	for _, s := range slots {
		out = append(out, slotSum{s.Property, s.Field, s.From, s.Required})
	}
	return out
}

func TestResolveClass(t *testing.T) {
	footwear := newClass("footwear.footwear", true, nil, req("footwear.name"), opt("footwear.size"))
	tests := []struct {
		desc      string
		classes   []metav1alpha1.Class
		props     []metav1alpha1.Property // added to baseProps
		resolve   string
		reason    string
		words     []string
		ancestors []string
		slots     []slotSum
		required  []string
	}{{
		desc:      "simple class",
		classes:   []metav1alpha1.Class{newClass("zorp.thing", false, nil, req("footwear.name"), opt("footwear.size"), opt("footwear.tags"))},
		resolve:   "zorp.thing",
		ancestors: nil,
		slots: []slotSum{
			{"footwear.name", "name", "zorp.thing", true},
			{"footwear.size", "size", "zorp.thing", false},
			{"footwear.tags", "tags", "zorp.thing", false},
		},
		required: []string{"name"},
	}, {
		desc: "abstract parent and concrete child: parent's slots first",
		classes: []metav1alpha1.Class{
			footwear,
			newClass("zorp.space-boot", false, []string{"footwear.footwear"}, req("zorp.tentacle-count"), opt("zorp.color")),
		},
		resolve:   "zorp.space-boot",
		ancestors: []string{"footwear.footwear"},
		slots: []slotSum{
			{"footwear.name", "name", "footwear.footwear", true},
			{"footwear.size", "size", "footwear.footwear", false},
			{"zorp.tentacle-count", "tentacleCount", "zorp.space-boot", true},
			{"zorp.color", "color", "zorp.space-boot", false},
		},
		required: []string{"name", "tentacleCount"},
	}, {
		desc: "three levels: roots first",
		classes: []metav1alpha1.Class{
			footwear,
			newClass("zorp.boot", true, []string{"footwear.footwear"}, opt("zorp.color")),
			newClass("zorp.space-boot", false, []string{"zorp.boot"}, req("zorp.tentacle-count")),
		},
		resolve:   "zorp.space-boot",
		ancestors: []string{"footwear.footwear", "zorp.boot"},
		slots: []slotSum{
			{"footwear.name", "name", "footwear.footwear", true},
			{"footwear.size", "size", "footwear.footwear", false},
			{"zorp.color", "color", "zorp.boot", false},
			{"zorp.tentacle-count", "tentacleCount", "zorp.space-boot", true},
		},
		required: []string{"name", "tentacleCount"},
	}, {
		desc: "diamond: the shared root appears once",
		classes: []metav1alpha1.Class{
			newClass("d.a", true, nil, opt("d.a")),
			newClass("d.b", true, []string{"d.a"}, opt("d.b")),
			newClass("d.c", true, []string{"d.a"}, opt("d.c")),
			newClass("d.d", false, []string{"d.b", "d.c"}, opt("d.d")),
		},
		resolve:   "d.d",
		ancestors: []string{"d.a", "d.b", "d.c"},
		slots: []slotSum{
			{"d.a", "a", "d.a", false},
			{"d.b", "b", "d.b", false},
			{"d.c", "c", "d.c", false},
			{"d.d", "d", "d.d", false},
		},
	}, {
		desc: "child requires a slot its parent leaves optional",
		classes: []metav1alpha1.Class{
			footwear,
			newClass("zorp.boot", false, []string{"footwear.footwear"}, req("footwear.size")),
		},
		resolve:   "zorp.boot",
		ancestors: []string{"footwear.footwear"},
		slots: []slotSum{
			{"footwear.name", "name", "footwear.footwear", true},
			{"footwear.size", "size", "footwear.footwear", true},
		},
		required: []string{"name", "size"},
	}, {
		desc: "child cannot make a required slot optional",
		classes: []metav1alpha1.Class{
			footwear,
			newClass("zorp.boot", false, []string{"footwear.footwear"}, opt("footwear.name")),
		},
		resolve:   "zorp.boot",
		ancestors: []string{"footwear.footwear"},
		slots: []slotSum{
			{"footwear.name", "name", "footwear.footwear", true},
			{"footwear.size", "size", "footwear.footwear", false},
		},
		required: []string{"name"},
	}, {
		desc:    "unknown parent",
		classes: []metav1alpha1.Class{newClass("zorp.boot", false, []string{"footwear.missing"}, opt("footwear.name"))},
		resolve: "zorp.boot",
		reason:  metav1alpha1.ReasonUnknownParent,
		words:   []string{`"footwear.missing"`, "zorp.boot", "does not exist"},
	}, {
		desc: "unknown grandparent",
		classes: []metav1alpha1.Class{
			newClass("zorp.boot", true, []string{"footwear.missing"}),
			newClass("zorp.space-boot", false, []string{"zorp.boot"}, opt("footwear.name")),
		},
		resolve: "zorp.space-boot",
		reason:  metav1alpha1.ReasonUnknownParent,
		words:   []string{`"footwear.missing"`, "of zorp.boot"},
	}, {
		desc: "unknown property in a parent",
		classes: []metav1alpha1.Class{
			newClass("zorp.boot", true, nil, opt("zorp.nothing")),
			newClass("zorp.space-boot", false, []string{"zorp.boot"}, opt("footwear.name")),
		},
		resolve: "zorp.space-boot",
		reason:  metav1alpha1.ReasonUnknownProperty,
		words:   []string{`"zorp.nothing"`, "zorp.boot", "does not exist"},
	}, {
		desc:    "property that is not valid",
		classes: []metav1alpha1.Class{newClass("zorp.boot", false, nil, opt("footwear.name"), opt("zorp.broken-ref"))},
		resolve: "zorp.boot",
		reason:  metav1alpha1.ReasonPropertyNotReady,
		words:   []string{`"zorp.broken-ref"`, "zorp.boot", "not usable", "needs a target"},
	}, {
		desc:    "property whose ref target does not exist",
		classes: []metav1alpha1.Class{newClass("zorp.boot", false, nil, opt("zorp.owner"))},
		resolve: "zorp.boot",
		reason:  metav1alpha1.ReasonPropertyNotReady,
		words:   []string{`"zorp.owner"`, `"zorp.gone"`},
	}, {
		desc: "two properties with the same derived field",
		classes: []metav1alpha1.Class{
			footwear,
			newClass("zorp.boot", false, []string{"footwear.footwear"}, opt("zorp.name")),
		},
		resolve: "zorp.boot",
		reason:  metav1alpha1.ReasonDuplicateField,
		words:   []string{`"footwear.name"`, `"zorp.name"`, `field "name"`},
	}, {
		desc:    "two properties with the same field by override",
		classes: []metav1alpha1.Class{newClass("zorp.boot", false, nil, opt("footwear.name"), opt("zorp.label"))},
		resolve: "zorp.boot",
		reason:  metav1alpha1.ReasonDuplicateField,
		words:   []string{`"footwear.name"`, `"zorp.label"`, `field "name"`},
	}, {
		desc:    "a slot whose field is the reserved metadata",
		classes: []metav1alpha1.Class{newClass("zorp.boot", false, nil, opt("zorp.metadata"))},
		resolve: "zorp.boot",
		reason:  metav1alpha1.ReasonReservedField,
		words:   []string{`"zorp.metadata"`, `"metadata"`, "spec.field"},
	}, {
		desc: "cycle A -> B -> A",
		classes: []metav1alpha1.Class{
			newClass("zorp.a", false, []string{"zorp.b"}, opt("footwear.name")),
			newClass("zorp.b", true, []string{"zorp.a"}),
		},
		resolve: "zorp.a",
		reason:  metav1alpha1.ReasonInheritanceCycle,
		words:   []string{"zorp.a -> zorp.b -> zorp.a"},
	}, {
		desc: "inheriting from a cycle shows only the cycle",
		classes: []metav1alpha1.Class{
			newClass("zorp.a", true, []string{"zorp.b"}),
			newClass("zorp.b", true, []string{"zorp.a"}),
			newClass("zorp.c", false, []string{"zorp.a"}, opt("footwear.name")),
		},
		resolve: "zorp.c",
		reason:  metav1alpha1.ReasonInheritanceCycle,
		words:   []string{"inheritance cycle: zorp.a -> zorp.b -> zorp.a"},
	}, {
		desc:    "own parent",
		classes: []metav1alpha1.Class{newClass("zorp.a", false, []string{"zorp.a"}, opt("footwear.name"))},
		resolve: "zorp.a",
		reason:  metav1alpha1.ReasonInheritanceCycle,
		words:   []string{"zorp.a -> zorp.a"},
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			l := lookupOf(tt.classes, append(baseProps(), tt.props...))
			c, ok := l.Class(tt.resolve)
			if !ok {
				t.Fatalf("test case has no class %s", tt.resolve)
			}
			got := ResolveClass(c, l)
			assertProblem(t, got.Problem, tt.reason, tt.words...)
			if got.Name != c.Name || got.Prefix != c.Spec.Prefix || got.Kind != c.Spec.Kind || got.Abstract != c.Spec.Abstract {
				t.Errorf("identity = %s %s/%s abstract=%v, want the Class's", got.Name, got.Prefix, got.Kind, got.Abstract)
			}
			if tt.reason != "" {
				if got.Slots != nil || got.Required != nil {
					t.Errorf("a class with a problem has slots %v, required %v; want none", summarize(got.Slots), got.Required)
				}
				return
			}
			if !reflect.DeepEqual(got.Ancestors, tt.ancestors) {
				t.Errorf("ancestors = %q, want %q", got.Ancestors, tt.ancestors)
			}
			if s := summarize(got.Slots); !reflect.DeepEqual(s, tt.slots) {
				t.Errorf("slots =\n  %+v\nwant\n  %+v", s, tt.slots)
			}
			if !reflect.DeepEqual(got.Required, tt.required) {
				t.Errorf("required = %q, want %q", got.Required, tt.required)
			}
		})
	}
}

func TestResolveClassCarriesPropertyDefinition(t *testing.T) {
	props := []metav1alpha1.Property{
		newProp("zorp.color", metav1alpha1.RangeString, withEnum("red", "blue"), withMaxLen(4), withPattern(`^[a-z]+$`)),
		newProp("zorp.tags", metav1alpha1.RangeKeyword, withMany()),
		newProp("zorp.owner", metav1alpha1.RangeRef, withTarget("zorp.boot")),
		newProp("zorp.count", metav1alpha1.RangeInteger, withRange(0, 8)),
	}
	props[0].Spec.Description = "The colour."
	classes := []metav1alpha1.Class{newClass("zorp.boot", false, nil, opt("zorp.color"), opt("zorp.tags"), opt("zorp.owner"), opt("zorp.count"))}
	l := lookupOf(classes, props)
	got := ResolveClass(&classes[0], l)
	if got.Problem != nil {
		t.Fatalf("problem: %+v", *got.Problem)
	}
	want := []*Slot{
		{Definition: &Definition{Property: "zorp.color", Field: "color", Range: metav1alpha1.RangeString, Cardinality: metav1alpha1.CardinalityOne,
			Description: "The colour.", Enum: []string{"red", "blue"}, MaxLength: ptr(int64(4)), Pattern: `^[a-z]+$`}, From: "zorp.boot"},
		{Definition: &Definition{Property: "zorp.tags", Field: "tags", Range: metav1alpha1.RangeKeyword, Cardinality: metav1alpha1.CardinalityMany},
			From: "zorp.boot"},
		{Definition: &Definition{Property: "zorp.owner", Field: "owner", Range: metav1alpha1.RangeRef, Cardinality: metav1alpha1.CardinalityOne,
			Target: "zorp.boot"}, From: "zorp.boot"},
		{Definition: &Definition{Property: "zorp.count", Field: "count", Range: metav1alpha1.RangeInteger, Cardinality: metav1alpha1.CardinalityOne,
			Minimum: ptr(0.0), Maximum: ptr(8.0)}, From: "zorp.boot"},
	}
	if !reflect.DeepEqual(got.Slots, want) {
		t.Errorf("slots =\n  %+v\nwant\n  %+v", got.Slots, want)
	}
	if s, ok := got.Slot("tags"); !ok || !s.Many() {
		t.Errorf("Slot(tags) = %+v, %v; want a many-valued slot", s, ok)
	}
	if _, ok := got.Slot("nothing"); ok {
		t.Errorf("Slot(nothing) found a slot")
	}
}

// A class being reconciled may be newer than the lookup's copy of it, or missing from
// the lookup (the cache lags): its own spec decides, also when inheritance runs back to
// it through the lookup.
func TestResolveClassUsesGivenVersionOfItself(t *testing.T) {
	cached := []metav1alpha1.Class{
		newClass("zorp.a", false, nil, opt("footwear.name")),
		newClass("zorp.b", true, []string{"zorp.a"}),
		newClass("zorp.c", true, []string{"zorp.new"}),
	}
	l := lookupOf(cached, baseProps())
	tests := []struct {
		desc  string
		class metav1alpha1.Class
		words string
	}{
		{"updated class closes a cycle", newClass("zorp.a", false, []string{"zorp.b"}, opt("footwear.name")), "zorp.a -> zorp.b -> zorp.a"},
		{"new class is its own parent", newClass("zorp.new", false, []string{"zorp.new"}), "zorp.new -> zorp.new"},
		{"new class closes a cycle", newClass("zorp.new", false, []string{"zorp.c"}), "zorp.new -> zorp.c -> zorp.new"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := ResolveClass(&tt.class, l)
			assertProblem(t, got.Problem, metav1alpha1.ReasonInheritanceCycle, tt.words)
		})
	}
}

// ---- ValidateWorkflow -----------------------------------------------------------

func orderFulfillment() *metav1alpha1.WorkflowDefinition {
	return &metav1alpha1.WorkflowDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "shop.order-fulfillment"},
		Spec: metav1alpha1.WorkflowDefinitionSpec{
			SubjectClass: "shop.order",
			Initial:      "pending",
			States: []metav1alpha1.WorkflowState{
				{Name: "pending"},
				{Name: "confirmed"},
				{Name: "shipped"},
				{Name: "delivered", Terminal: metav1alpha1.TerminalSuccess},
				{Name: "cancelled", Terminal: metav1alpha1.TerminalCancelled},
			},
			Transitions: []metav1alpha1.WorkflowTransition{
				{Name: "confirm", From: []string{"pending"}, To: "confirmed"},
				{Name: "ship", From: []string{"confirmed"}, To: "shipped"},
				{Name: "deliver", From: []string{"shipped"}, To: "delivered"},
				{Name: "cancel", From: []string{"pending", "confirmed"}, To: "cancelled"},
			},
		},
	}
}

func TestValidateWorkflow(t *testing.T) {
	l := lookupOf([]metav1alpha1.Class{newClass("shop.order", false, nil)}, nil)
	tests := []struct {
		desc        string
		edit        func(s *metav1alpha1.WorkflowDefinitionSpec)
		reason      string
		words       []string
		terminal    []string
		cancellable []string
	}{{
		desc:        "order fulfillment",
		edit:        func(s *metav1alpha1.WorkflowDefinitionSpec) {},
		terminal:    []string{"delivered", "cancelled"},
		cancellable: []string{"pending", "confirmed"},
	}, {
		desc: "cancellable states come in state order",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.Transitions[3].From = []string{"shipped", "pending"}
		},
		terminal:    []string{"delivered", "cancelled"},
		cancellable: []string{"pending", "shipped"},
	}, {
		desc: "no subject class",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.SubjectClass = ""
		},
		terminal:    []string{"delivered", "cancelled"},
		cancellable: []string{"pending", "confirmed"},
	}, {
		desc: "a failure state is terminal but not a cancel target",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.States = append(s.States, metav1alpha1.WorkflowState{Name: "lost", Terminal: metav1alpha1.TerminalFailure})
			s.Transitions = append(s.Transitions, metav1alpha1.WorkflowTransition{Name: "lose", From: []string{"shipped"}, To: "lost"})
		},
		terminal:    []string{"delivered", "cancelled", "lost"},
		cancellable: []string{"pending", "confirmed"},
	}, {
		desc: "duplicate state",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.States = append(s.States, metav1alpha1.WorkflowState{Name: "shipped"})
		},
		reason: metav1alpha1.ReasonInvalid, words: []string{`state "shipped"`, "declared twice"},
	}, {
		desc: "duplicate transition",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.Transitions = append(s.Transitions, metav1alpha1.WorkflowTransition{Name: "ship", From: []string{"pending"}, To: "shipped"})
		},
		reason: metav1alpha1.ReasonInvalid, words: []string{`transition "ship"`, "declared twice"},
	}, {
		desc:   "initial state missing",
		edit:   func(s *metav1alpha1.WorkflowDefinitionSpec) { s.Initial = "draft" },
		reason: metav1alpha1.ReasonInvalid, words: []string{`initial state "draft"`, "not one of the states"},
	}, {
		desc:   "initial state terminal",
		edit:   func(s *metav1alpha1.WorkflowDefinitionSpec) { s.Initial = "delivered" },
		reason: metav1alpha1.ReasonInvalid, words: []string{`initial state "delivered"`, "is terminal"},
	}, {
		desc: "no terminal state",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			for i := range s.States {
				s.States[i].Terminal = ""
			}
		},
		reason: metav1alpha1.ReasonInvalid, words: []string{"no state is terminal"},
	}, {
		desc: "transition to an unknown state",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.Transitions = append(s.Transitions, metav1alpha1.WorkflowTransition{Name: "return", From: []string{"shipped"}, To: "returned"})
		},
		reason: metav1alpha1.ReasonInvalid, words: []string{`transition "return"`, `"returned"`, "not a state"},
	}, {
		desc: "transition from an unknown state",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.Transitions[1].From = []string{"confirmed", "packed"}
		},
		reason: metav1alpha1.ReasonInvalid, words: []string{`transition "ship"`, `starts from "packed"`, "not a state"},
	}, {
		desc: "transition out of a terminal state",
		edit: func(s *metav1alpha1.WorkflowDefinitionSpec) {
			s.Transitions = append(s.Transitions, metav1alpha1.WorkflowTransition{Name: "reopen", From: []string{"cancelled"}, To: "pending"})
		},
		reason: metav1alpha1.ReasonInvalid, words: []string{`transition "reopen"`, `terminal state "cancelled"`},
	}, {
		desc:        "unknown subject class",
		edit:        func(s *metav1alpha1.WorkflowDefinitionSpec) { s.SubjectClass = "shop.nothing" },
		reason:      metav1alpha1.ReasonUnknownClass,
		words:       []string{`"shop.nothing"`, "does not exist"},
		terminal:    []string{"delivered", "cancelled"},
		cancellable: []string{"pending", "confirmed"},
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			wd := orderFulfillment()
			tt.edit(&wd.Spec)
			got := ValidateWorkflow(wd, l)
			assertProblem(t, got.Problem, tt.reason, tt.words...)
			if got.Name != wd.Name || !reflect.DeepEqual(got.Spec, wd.Spec) {
				t.Errorf("workflow = %s %+v, want the definition's name and spec", got.Name, got.Spec)
			}
			if !reflect.DeepEqual(got.TerminalStates, tt.terminal) {
				t.Errorf("terminal states = %q, want %q", got.TerminalStates, tt.terminal)
			}
			if !reflect.DeepEqual(got.CancellableFrom, tt.cancellable) {
				t.Errorf("cancellable from = %q, want %q", got.CancellableFrom, tt.cancellable)
			}
		})
	}
}

// ---- Build ----------------------------------------------------------------------

func condition(typ string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: "Test"}
}

func account(ns, name, service string, ready bool) metav1alpha1.ServiceAccount {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	return metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{
			ServiceName: service,
			Permissions: metav1alpha1.Permissions{Tools: []string{"*"}},
		},
		Status: metav1alpha1.ServiceAccountStatus{Conditions: []metav1.Condition{condition(metav1alpha1.ConditionReady, status)}},
	}
}

// An account is Unchecked while it is not Ready and its status speaks for an older
// generation than its spec (or for none): the leader has not looked at it yet.
func TestAccountNotCheckedYet(t *testing.T) {
	for _, tc := range []struct {
		name               string
		ready              bool
		conditions         bool
		generation, status int64
		want               bool
	}{
		{name: "just created, no status", generation: 1, want: true},
		{name: "changed since it was found wrong", generation: 2, status: 1, conditions: true, want: true},
		{name: "found wrong as it is", generation: 2, status: 2, conditions: true},
		{name: "ready, changed since", ready: true, generation: 2, status: 1, conditions: true},
		{name: "ready as it is", ready: true, generation: 1, status: 1, conditions: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa := account("team-a", "bot", "robot", tc.ready)
			sa.Generation, sa.Status.ObservedGeneration = tc.generation, tc.status
			if !tc.conditions {
				sa.Status.Conditions = nil
			}
			if a := AccountOf(&sa, ""); a.Unchecked != tc.want || a.Ready != tc.ready {
				t.Errorf("ready %v, unchecked %v; want ready %v, unchecked %v", a.Ready, a.Unchecked, tc.ready, tc.want)
			}
			if got := Build(Inputs{ServiceAccounts: []metav1alpha1.ServiceAccount{sa}}).UncheckedAccounts(); got != tc.want {
				t.Errorf("the snapshot's UncheckedAccounts = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	footwear := newClass("footwear.footwear", true, nil, req("footwear.name"))
	footwear.Status.InstanceAPI = &metav1alpha1.InstanceAPIStatus{Group: "footwear.sandbar.dev", Version: "v1", Kind: "Footwear", Plural: "footwears"}
	footwear.Status.Conditions = []metav1.Condition{condition(metav1alpha1.ConditionReady, metav1.ConditionTrue)}

	boot := newClass("zorp.space-boot", false, []string{"footwear.footwear"}, opt("zorp.tentacle-count"))
	boot.Spec.Kind = "SpaceBoot"
	boot.Status.InstanceAPI = &metav1alpha1.InstanceAPIStatus{
		Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot", Plural: "spaceboots", CRDName: "spaceboots.zorp.sandbar.dev"}
	boot.Status.Conditions = []metav1.Condition{
		condition(metav1alpha1.ConditionReady, metav1.ConditionTrue),
		condition(metav1alpha1.ConditionInstanceAPIEstablished, metav1.ConditionTrue),
	}

	sandal := newClass("zorp.sandal", false, []string{"footwear.footwear"})
	sandal.Status.InstanceAPI = &metav1alpha1.InstanceAPIStatus{Group: "zorp.sandbar.dev", Version: "v1", Kind: "Sandal", Plural: "sandals"}
	sandal.Status.Conditions = []metav1.Condition{
		condition(metav1alpha1.ConditionReady, metav1.ConditionFalse),
		condition(metav1alpha1.ConditionInstanceAPIEstablished, metav1.ConditionFalse),
	}

	broken := newClass("zorp.broken", false, []string{"footwear.missing"}, opt("footwear.name"))
	fresh := newClass("zorp.fresh", false, nil, opt("footwear.size")) // no status yet

	inactive := account("team-b", "bot-c", "cron", true)
	inactive.Spec.Active = ptr(false)
	in := Inputs{
		Classes: []metav1alpha1.Class{footwear, broken, boot, sandal, fresh},
		Properties: []metav1alpha1.Property{
			newProp("footwear.name", metav1alpha1.RangeString),
			newProp("footwear.size", metav1alpha1.RangeInteger),
			newProp("zorp.tentacle-count", metav1alpha1.RangeInteger),
			newProp("zorp.owner", metav1alpha1.RangeRef, withTarget("zorp.gone")),
		},
		Workflows: []metav1alpha1.WorkflowDefinition{*orderFulfillment()},
		ServiceAccounts: []metav1alpha1.ServiceAccount{
			account("team-a", "bot-a", "robot", true),
			account("team-b", "bot-b", "robot", true),
			account("team-a", "bot-d", "helper", true),
			inactive,
		},
	}
	s := Build(in)

	if s.Version != 0 {
		t.Errorf("version = %d, want 0", s.Version)
	}
	if got, want := s.ClassNames(), []string{"footwear.footwear", "zorp.broken", "zorp.fresh", "zorp.sandal", "zorp.space-boot"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("classes = %q, want %q", got, want)
	}

	t.Run("a broken class does not stop the others", func(t *testing.T) {
		assertProblem(t, s.Classes["zorp.broken"].Problem, metav1alpha1.ReasonUnknownParent, `"footwear.missing"`)
		for _, name := range []string{"footwear.footwear", "zorp.space-boot", "zorp.sandal", "zorp.fresh"} {
			c := s.Classes[name]
			if c.Problem != nil {
				t.Errorf("%s: problem %+v", name, *c.Problem)
			}
		}
		if got := summarize(s.Classes["zorp.space-boot"].Slots); !reflect.DeepEqual(got, []slotSum{
			{"footwear.name", "name", "footwear.footwear", true},
			{"zorp.tentacle-count", "tentacleCount", "zorp.space-boot", false},
		}) {
			t.Errorf("zorp.space-boot slots = %+v", got)
		}
		if got := s.Subclasses("footwear.footwear"); !reflect.DeepEqual(got, []string{"zorp.sandal", "zorp.space-boot"}) {
			t.Errorf("subclasses of footwear.footwear = %q", got)
		}
	})

	t.Run("ready and whether the instance API is served come from the Class status", func(t *testing.T) {
		tests := []struct {
			class string
			ready bool
			api   *InstanceAPI
		}{
			{"footwear.footwear", true, nil}, // abstract: no instance API even if status names one
			{"zorp.space-boot", true, &InstanceAPI{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot", Plural: "spaceboots", Established: true}},
			{"zorp.sandal", false, &InstanceAPI{Group: "zorp.sandbar.dev", Version: "v1", Kind: "Sandal", Plural: "sandals", Established: false}},
			{"zorp.fresh", false, nil},
			{"zorp.broken", false, nil},
		}
		for _, tt := range tests {
			c := s.Classes[tt.class]
			if c.Ready != tt.ready {
				t.Errorf("%s: ready = %v, want %v", tt.class, c.Ready, tt.ready)
			}
			if !reflect.DeepEqual(c.InstanceAPI, tt.api) {
				t.Errorf("%s: instance API = %+v, want %+v", tt.class, c.InstanceAPI, tt.api)
			}
		}
	})

	t.Run("properties", func(t *testing.T) {
		if len(s.Properties) != 4 {
			t.Errorf("%d properties, want 4", len(s.Properties))
		}
		if p := s.Properties["zorp.tentacle-count"]; p == nil || p.Problem != nil || p.Slot.Field != "tentacleCount" ||
			p.Slot.Cardinality != metav1alpha1.CardinalityOne {
			t.Errorf("zorp.tentacle-count = %+v", p)
		}
		assertProblem(t, s.Properties["zorp.owner"].Problem, metav1alpha1.ReasonUnknownClass, `"zorp.gone"`)
	})

	t.Run("workflows", func(t *testing.T) {
		w := s.Workflows["shop.order-fulfillment"]
		if w == nil {
			t.Fatalf("workflows = %v", s.WorkflowNames())
		}
		// shop.order is not among the classes.
		assertProblem(t, w.Problem, metav1alpha1.ReasonUnknownClass, `"shop.order"`)
	})

	t.Run("a service name claimed twice belongs to the older account", func(t *testing.T) {
		if len(s.Accounts) != 3 {
			t.Errorf("accounts = %v, want robot, helper and cron", s.Accounts)
		}
		if a := s.Accounts["robot"]; a == nil || a.Namespace != "team-a" || a.Name != "bot-a" {
			t.Errorf("robot = %+v, want team-a/bot-a", a)
		}
		if a := s.Accounts["helper"]; a == nil || !a.Ready || !a.Active || a.Namespace != "team-a" || a.Name != "bot-d" {
			t.Errorf("helper = %+v, want ready, active, team-a/bot-d", a)
		}
		if a := s.Accounts["cron"]; a == nil || a.Active || !a.Ready {
			t.Errorf("cron = %+v, want ready and inactive", a)
		}
	})
}

// A Class's status is written by whoever may update classes/status: pointing it at
// another API (apps/v1 Deployment, or the metamodel's own ServiceAccounts) must not
// make the catalog, and so the manager's instance verbs, act on that API.
func TestStatusPointingAtAnotherAPIDoesNotMoveTheInstanceAPI(t *testing.T) {
	established := []metav1.Condition{
		condition(metav1alpha1.ConditionReady, metav1.ConditionTrue),
		condition(metav1alpha1.ConditionInstanceAPIEstablished, metav1.ConditionTrue),
	}
	want := &InstanceAPI{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot", Plural: "spaceboots", Established: true}
	for _, elsewhere := range []metav1alpha1.InstanceAPIStatus{
		{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", CRDName: "deployments.apps"},
		{Group: "meta.sandbar.dev", Version: "v1alpha1", Kind: "ServiceAccount", Plural: "serviceaccounts",
			CRDName: "serviceaccounts.meta.sandbar.dev"},
		// Only the plural moved: still not the class's own API.
		{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot", Plural: "secrets", CRDName: "secrets.zorp.sandbar.dev"},
	} {
		boot := newClass("zorp.space-boot", false, nil)
		boot.Spec.Kind = "SpaceBoot"
		boot.Status.InstanceAPI = &elsewhere
		boot.Status.Conditions = established
		c := Build(Inputs{Classes: []metav1alpha1.Class{boot}}).Classes["zorp.space-boot"]
		if !reflect.DeepEqual(c.InstanceAPI, want) {
			t.Errorf("status naming %s %s: instance API = %+v, want %+v (derived from the spec)",
				elsewhere.Group, elsewhere.Kind, c.InstanceAPI, want)
		}
		if got := c.GVK(); got.Group != "zorp.sandbar.dev" || got.Kind != "SpaceBoot" {
			t.Errorf("status naming %s %s: GVK = %s", elsewhere.Group, elsewhere.Kind, got)
		}
	}
}

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{
		"SpaceBoot": "spaceboots",
		"Address":   "addresses",
		"Box":       "boxes",
		"Category":  "categories",
		"Day":       "days",
		"Match":     "matches",
		"Wish":      "wishes",
		"Key":       "keys",
	} {
		if got := Plural(kind); got != want {
			t.Errorf("Plural(%q) = %q, want %q", kind, got, want)
		}
	}
}

// Plural makes an ASCII kind's plural in one allocation: it is the plural the
// general rule makes, for every ending the rule tells apart.
func TestPluralOfAnASCIIKindIsThePluralOfTheRule(t *testing.T) {
	var kinds []string
	for _, stem := range []string{"", "A", "b", "Zo", "BOOT", "SpaceBoot"} {
		for _, end := range []string{"", "s", "S", "x", "z", "Z", "h", "ch", "CH", "sh", "Sh", "th", "y", "Y", "ay", "ey",
			"iy", "oy", "uy", "AY", "by", "BY", "Ky", "1y", "_y", "-"} {
			kinds = append(kinds, stem+end)
		}
	}
	for _, kind := range kinds {
		got, ok := asciiPlural(kind)
		if want := unicodePlural(kind); !ok || got != want {
			t.Errorf("Plural(%q) = %q (ok %v), the rule makes %q", kind, got, ok, want)
		}
	}
	if _, ok := asciiPlural("Čaj"); ok {
		t.Error("a kind that is not ASCII was taken for ASCII")
	}
	if got, want := Plural("ČajBox"), "čajboxes"; got != want {
		t.Errorf("Plural(%q) = %q, want %q", "ČajBox", got, want)
	}
}

func TestNamesForDerivesFromPrefixAndKind(t *testing.T) {
	c := &Class{Prefix: "zorp", Kind: "SpaceBoot"}
	want := Names{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot", ListKind: "SpaceBootList",
		Plural: "spaceboots", Singular: "spaceboot", CRDName: "spaceboots.zorp.sandbar.dev"}
	if got := NamesFor(c); got != want {
		t.Errorf("NamesFor = %+v, want %+v", got, want)
	}
	c.InstanceAPIOptions.Plural = "boots"
	if got := NamesFor(c); got.Plural != "boots" || got.CRDName != "boots.zorp.sandbar.dev" {
		t.Errorf("with plural boots: %+v", got)
	}
}

// Prefix meta would generate APIs in meta.sandbar.dev, the metamodel's own group. The
// CRD refuses it; a Class stored before that rule is reported and generates nothing.
func TestReservedPrefixIsAProblem(t *testing.T) {
	for _, prefix := range ReservedPrefixes {
		cls := newClass(prefix+".service-account", false, nil)
		cls.Spec.Kind = "ServiceAccount"
		got := ResolveClass(&cls, lookupOf(nil, nil))
		assertProblem(t, got.Problem, metav1alpha1.ReasonInvalid, `"`+prefix+`"`, "reserved", prefix+".sandbar.dev")
	}
	zorp := newClass("zorp.boot", false, nil)
	if p := ResolveClass(&zorp, lookupOf(nil, nil)).Problem; p != nil {
		t.Errorf("zorp.boot: %+v", *p)
	}
}

// A service name is unique in a namespace: accounts of other namespaces share it,
// oldest first, each found by its namespace; of two in one namespace, the older
// keeps it. Whatever the order of the inputs.
func TestBuildDuplicateServiceNameSameInEitherOrder(t *testing.T) {
	a, b := account("team-a", "bot-a", "robot", true), account("team-b", "bot-b", "robot", true)
	twin := account("team-a", "bot-twin", "robot", true)
	b.CreationTimestamp = metav1.Unix(100, 0)
	a.CreationTimestamp = metav1.Unix(200, 0)
	twin.CreationTimestamp = metav1.Unix(300, 0)
	var snaps []*Snapshot
	for _, order := range [][]metav1alpha1.ServiceAccount{{a, b, twin}, {twin, b, a}, {b, twin, a}} {
		s := Build(Inputs{ServiceAccounts: order})
		if got := s.Accounts["robot"]; got == nil || got.Name != "bot-b" {
			t.Errorf("order %s, %s: robot = %+v, want the older team-b/bot-b", order[0].Name, order[1].Name, got)
		}
		var names []string
		for _, c := range s.Shared["robot"] {
			names = append(names, c.Namespace+"/"+c.Name)
		}
		if want := []string{"team-b/bot-b", "team-a/bot-a"}; !reflect.DeepEqual(names, want) {
			t.Errorf("robot is shared by %q, want %q", names, want)
		}
		for ns, name := range map[string]string{"team-a": "bot-a", "team-b": "bot-b"} {
			if got := s.Account(ns, "robot"); got == nil || got.Name != name {
				t.Errorf("robot of %s = %+v, want %s", ns, got, name)
			}
			if got := s.AccountNamed(ns, name); got == nil || got.ServiceName != "robot" {
				t.Errorf("AccountNamed(%s, %s) = %+v", ns, name, got)
			}
		}
		if got := s.AccountNamed("team-a", "bot-twin"); got != nil {
			t.Errorf("the younger twin of its namespace is in the catalog: %+v", got)
		}
		if got := s.Account("team-c", "robot"); got != nil {
			t.Errorf("robot of team-c = %+v, want none", got)
		}
		snaps = append(snaps, s)
	}
	for _, s := range snaps[1:] {
		if !reflect.DeepEqual(snaps[0], s) {
			t.Error("the snapshot depends on the order of its inputs")
		}
	}
}

// ---- Store ----------------------------------------------------------------------

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStore(t *testing.T) {
	st := NewStore()
	if v := st.Load().Version; v != 0 {
		t.Fatalf("new store has version %d, want 0", v)
	}
	snap0, ch0 := st.Watch()
	if snap0 != st.Load() || snap0.Classes == nil || snap0.Accounts == nil {
		t.Fatalf("Watch returned %+v, want the current, empty snapshot", snap0)
	}
	if v, ok := st.Built(); ok {
		t.Errorf("a new store says it was built (version %d)", v)
	}

	// An empty cluster's build is the empty first snapshot: no change, but built.
	if st.Publish(Build(Inputs{})) {
		t.Errorf("publishing an empty snapshot over the empty one reported a change")
	}
	if v, ok := st.Built(); !ok || v != 0 {
		t.Errorf("after the first, equal, publish: Built() = %d, %v; want 0, true", v, ok)
	}
	if v := st.Load().Version; v != 0 || st.Load() != snap0 {
		t.Errorf("after an equal publish: version %d, snapshot replaced=%v; want 0, not replaced", v, st.Load() != snap0)
	}
	if closed(ch0) {
		t.Fatalf("an equal publish woke watchers")
	}

	in := Inputs{
		Classes:    []metav1alpha1.Class{newClass("zorp.boot", false, nil, opt("zorp.color"))},
		Properties: []metav1alpha1.Property{newProp("zorp.color", metav1alpha1.RangeKeyword)},
	}
	next := Build(in)
	if !st.Publish(next) {
		t.Fatalf("publishing a different snapshot reported no change")
	}
	if st.Load() != next || next.Version != 1 {
		t.Errorf("current = version %d (is next: %v), want next with version 1", st.Load().Version, st.Load() == next)
	}
	if !closed(ch0) {
		t.Errorf("the channel from an earlier Watch is not closed after a change")
	}

	snap1, ch1 := st.Watch()
	if snap1 != next {
		t.Errorf("Watch after publishing returned version %d, want the new snapshot", snap1.Version)
	}
	if closed(ch1) {
		t.Errorf("the channel from a Watch after publishing is already closed")
	}

	// Rebuilding from equal (deep-copied) inputs is no change.
	again := Inputs{Classes: []metav1alpha1.Class{*in.Classes[0].DeepCopy()}, Properties: []metav1alpha1.Property{*in.Properties[0].DeepCopy()}}
	if st.Publish(Build(again)) {
		t.Errorf("publishing a rebuild of equal inputs reported a change")
	}
	if st.Load() != next || st.Load().Version != 1 || closed(ch1) {
		t.Errorf("an equal publish changed the store: version %d, watchers woken %v", st.Load().Version, closed(ch1))
	}

	// A further change numbers one higher again and wakes the second watcher.
	again.Properties[0].Spec.Description = "The colour."
	if !st.Publish(Build(again)) || st.Load().Version != 2 {
		t.Errorf("second change: version %d, want 2", st.Load().Version)
	}
	if !closed(ch1) {
		t.Errorf("the second watcher was not woken")
	}
	if v, ok := st.Built(); !ok || v != 0 {
		t.Errorf("Built() = %d, %v after later publishes; want the first one's version, 0", v, ok)
	}

	// A store whose first build changes its content is built at that build's version.
	st = NewStore()
	if !st.Publish(Build(in)) {
		t.Fatal("publishing a first build with a class reported no change")
	}
	if v, ok := st.Built(); !ok || v != 1 {
		t.Errorf("after a first build with a class: Built() = %d, %v; want 1, true", v, ok)
	}
}

// An enum value of a range that takes any text is not coerced: its coercion must
// indeed take every string as it is.
func TestRangesThatTakeAnyTextTakeEveryString(t *testing.T) {
	for _, info := range Ranges() {
		if !takesAnyText(info.Range) {
			continue
		}
		for _, v := range []string{"", "red", " spaced ", "ünïcode", "{\"json\": true}", "12", "true", "\x00"} {
			got, err := info.coerce(v)
			if err != nil || got != v {
				t.Errorf("%s: %q coerces to %v, %v", info.Range, v, got, err)
			}
		}
	}
}
