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
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// edit is a change to the benchmark metamodel, as the API server would store it
// (a new resourceVersion).
type edit struct {
	name string
	do   func(in *Inputs)
	// rebuilt are the classes it must resolve again (nil: not checked).
	rebuilt []string
}

func classAt(in *Inputs, name string) *metav1alpha1.Class {
	for i := range in.Classes {
		if in.Classes[i].Name == name {
			return &in.Classes[i]
		}
	}
	return nil
}

func propertyAt(in *Inputs, name string) *metav1alpha1.Property {
	for i := range in.Properties {
		if in.Properties[i].Name == name {
			return &in.Properties[i]
		}
	}
	return nil
}

// leavesOf are the leaves under the mid-level class bench.m<i>.
func leavesOf(mid int) []string {
	var out []string
	for i := mid; i < benchLeaves; i += benchMids {
		out = append(out, fmt.Sprintf("bench.l%d", i))
	}
	return out
}

// An incremental build is the full build of the same inputs, whatever changed; and
// a change to one class resolves that class and its descendants again, and takes
// every other class from the previous snapshot.
func TestIncrementalBuildEqualsAFullBuildAndResolvesOnlyWhatChanged(t *testing.T) {
	in := benchInputs()
	var b Builder
	prev := b.Build(deepCopyInputs(in))
	if !reflect.DeepEqual(prev, Build(deepCopyInputs(in))) {
		t.Fatal("a first build differs from a full build")
	}
	edits := []edit{
		{name: "nothing", do: func(*Inputs) {}, rebuilt: []string{}},
		{name: "a leaf's description", do: func(in *Inputs) {
			c := classAt(in, "bench.l7")
			c.Spec.Description, c.ResourceVersion = "Changed.", "2"
		}, rebuilt: []string{"bench.l7"}},
		{name: "a mid-level class's slots", do: func(in *Inputs) {
			c := classAt(in, "bench.m5")
			c.Spec.Slots = c.Spec.Slots[1:]
			c.ResourceVersion = "3"
		}, rebuilt: append([]string{"bench.m5"}, leavesOf(5)...)},
		{name: "a property of a mid-level class", do: func(in *Inputs) {
			p := propertyAt(in, "bench.m6.p1")
			p.Spec.Description, p.ResourceVersion = "Changed.", "4"
		}, rebuilt: append([]string{"bench.m6"}, leavesOf(6)...)},
		{name: "a property's resourceVersion alone (a status write)", do: func(in *Inputs) {
			propertyAt(in, "bench.m6.p2").ResourceVersion = "41"
		}, rebuilt: []string{}},
		{name: "a leaf's status", do: func(in *Inputs) {
			c := classAt(in, "bench.l8")
			c.Status.Conditions = nil
			c.ResourceVersion = "5"
		}, rebuilt: []string{"bench.l8"}},
		{name: "a property made unusable", do: func(in *Inputs) {
			p := propertyAt(in, "bench.l9.p0")
			p.Spec.Pattern, p.ResourceVersion = "([", "6"
		}, rebuilt: []string{"bench.l9"}},
		{name: "a root deleted (a parent and a ref target)", do: func(in *Inputs) {
			for i := range in.Classes {
				if in.Classes[i].Name == "bench.r3" {
					in.Classes = append(in.Classes[:i:i], in.Classes[i+1:]...)
					return
				}
			}
		}},
		{name: "the root back", do: func(in *Inputs) {
			*in = benchInputs()
		}},
		{name: "a property deleted", do: func(in *Inputs) {
			for i := range in.Properties {
				if in.Properties[i].Name == "bench.l10.p2" {
					in.Properties = append(in.Properties[:i:i], in.Properties[i+1:]...)
					return
				}
			}
		}, rebuilt: []string{"bench.l10"}},
		{name: "a class without a resourceVersion", do: func(in *Inputs) {
			classAt(in, "bench.l11").ResourceVersion = ""
		}, rebuilt: []string{"bench.l11"}},
	}
	for _, e := range edits {
		e.do(&in)
		next := b.Build(deepCopyInputs(in))
		if full := Build(deepCopyInputs(in)); !reflect.DeepEqual(next, full) {
			for name := range full.Classes {
				if !reflect.DeepEqual(next.Classes[name], full.Classes[name]) {
					t.Errorf("after %s, %s: %+v, a full build has %+v", e.name, name, next.Classes[name], full.Classes[name])
				}
			}
			t.Fatalf("after %s the incremental build differs from a full build", e.name)
		}
		if e.rebuilt != nil {
			var rebuilt []string
			for name, c := range next.Classes {
				if prev.Classes[name] != c {
					rebuilt = append(rebuilt, name)
				}
			}
			sort.Strings(rebuilt)
			want := append([]string{}, e.rebuilt...)
			sort.Strings(want)
			if !slices.Equal(rebuilt, want) {
				t.Errorf("after %s the build resolved %d classes again (%v), want %v", e.name, len(rebuilt), rebuilt[:min(len(rebuilt), 12)], want)
			}
		}
		prev = next
	}
}

// A build resolves a class with one parent from its parent's resolution: the result
// is the class resolved on its own, whatever the parents are (cycles, problems,
// diamonds, slots declared again, fields that clash with an inherited one).
func TestBuildResolvesEveryClassAsResolveClassDoes(t *testing.T) {
	props := append(baseProps(), newProp("zorp.home", metav1alpha1.RangeRef, withTarget("zorp.base")))
	meta := newClass("meta.thing", true, nil, opt("d.a"))
	meta.Spec.Prefix = "meta" // a reserved prefix: a problem of its own
	codec := newClass("zorp.codec", true, nil, opt("footwear.tags"))
	codec.Spec.Codec.Sections = []string{"tags"} // a list slot as a section: a problem of its own
	small := Inputs{Properties: props, Classes: []metav1alpha1.Class{
		newClass("zorp.base", true, nil, req("footwear.name"), opt("zorp.color")),
		newClass("zorp.mid", true, []string{"zorp.base"}, opt("footwear.size"), req("zorp.color")),
		newClass("zorp.leaf", false, []string{"zorp.mid"}, opt("zorp.tentacle-count"), opt("zorp.home")),
		newClass("zorp.again", false, []string{"zorp.mid"}, req("footwear.size"), req("footwear.name")),
		newClass("zorp.clash", false, []string{"zorp.base"}, opt("zorp.name")),
		newClass("zorp.reserved", false, []string{"zorp.base"}, opt("zorp.metadata")),
		newClass("zorp.orphan", false, []string{"zorp.nobody"}, opt("d.a")),
		newClass("zorp.orphan-child", false, []string{"zorp.orphan"}, opt("d.b")),
		newClass("zorp.a", false, []string{"zorp.b"}, opt("d.a")),
		newClass("zorp.b", false, []string{"zorp.a"}, opt("d.b")),
		newClass("zorp.of-cycle", false, []string{"zorp.a"}, opt("d.c")),
		newClass("zorp.self", false, []string{"zorp.self"}, opt("d.c")),
		newClass("zorp.left", true, []string{"zorp.base"}, opt("d.a")),
		newClass("zorp.right", true, []string{"zorp.base"}, opt("d.b")),
		newClass("zorp.diamond", false, []string{"zorp.left", "zorp.right"}, opt("d.c")),
		newClass("zorp.below-diamond", false, []string{"zorp.diamond"}, opt("d.d")),
		newClass("zorp.broken", false, []string{"zorp.base"}, opt("zorp.broken-ref")),
		newClass("zorp.below-broken", false, []string{"zorp.broken"}, opt("d.d")),
		meta,
		newClass("zorp.below-meta", false, []string{"meta.thing"}, opt("d.b")),
		codec,
		newClass("zorp.below-codec", false, []string{"zorp.codec"}, opt("d.b")),
	}}
	for _, in := range []Inputs{small, benchInputs()} {
		// Built after a build of the classes alone, without their Properties: the
		// Properties all new, and every class that lacked one resolved again.
		var b Builder
		b.Build(Inputs{Classes: in.Classes})
		if got, want := b.Build(in), Build(in); !reflect.DeepEqual(got, want) {
			t.Errorf("after a build without Properties, the incremental build differs from a full build")
		}

		s := Build(in)
		alone := lookupOf(in.Classes, in.Properties)
		for i := range in.Classes {
			c := &in.Classes[i]
			want := resolve(c, &recorder{mapLookup: &alone}, nil).out
			if got := s.Classes[c.Name]; !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the build has\n%+v\nresolved alone it is\n%+v", c.Name, got, want)
			}
		}
	}
}

// Store.Publish compares snapshots a map at a time; it must see every field of a
// Snapshot, as reflect.DeepEqual would.
func TestPublishComparesEveryFieldOfASnapshot(t *testing.T) {
	compared := map[string]bool{"Version": true, "Classes": true, "Properties": true, "Workflows": true, "Accounts": true, "Shared": true}
	typ := reflect.TypeFor[Snapshot]()
	for i := range typ.NumField() {
		if !compared[typ.Field(i).Name] {
			t.Errorf("Snapshot.%s is not compared by sameContent: add it there and here", typ.Field(i).Name)
		}
	}
	a, b := Build(benchInputs()), Build(benchInputs())
	if !sameContent(a, b) || !reflect.DeepEqual(a, b) {
		t.Fatal("two builds of the same inputs differ")
	}
	b.Classes["bench.l3"].Slots[0].Required = !b.Classes["bench.l3"].Slots[0].Required
	if sameContent(a, b) {
		t.Fatal("a slot's change went unseen")
	}
	if sameContent(&Snapshot{Classes: map[string]*Class{}}, &Snapshot{}) != reflect.DeepEqual(&Snapshot{Classes: map[string]*Class{}}, &Snapshot{}) {
		t.Fatal("an empty and a nil map compare otherwise than reflect.DeepEqual has them")
	}
}

// sharingInputs are classes whose lists a build shares: children without slots of
// their own (their parent's slots and required fields), a child without required
// slots of its own (its parent's required fields), siblings (their ancestors),
// children with slots of their own (the slots they inherit), and a child that
// requires an inherited slot again (the others, not that one).
func sharingInputs() Inputs {
	return Inputs{Properties: baseProps(), Classes: []metav1alpha1.Class{
		newClass("zorp.base", true, nil, req("footwear.name"), opt("zorp.color")),
		newClass("zorp.plain", true, []string{"zorp.base"}),
		newClass("zorp.plain-too", false, []string{"zorp.base"}),
		newClass("zorp.optional", false, []string{"zorp.base"}, opt("footwear.size")),
		newClass("zorp.leaf", false, []string{"zorp.plain"}, opt("zorp.tentacle-count")),
		newClass("zorp.below-leaf", false, []string{"zorp.leaf"}),
		newClass("zorp.again", false, []string{"zorp.base"}, req("zorp.color")),
	}}
}

// A class without slots of its own costs no copy of its parent's slots: it has the
// parent's lists (and siblings share their list of ancestors).
func TestAClassWithoutSlotsOfItsOwnHasItsParentsLists(t *testing.T) {
	s := Build(sharingInputs())
	base, plain, plainToo, optional := s.Classes["zorp.base"], s.Classes["zorp.plain"], s.Classes["zorp.plain-too"], s.Classes["zorp.optional"]
	if len(plain.Slots) != 2 || &plain.Slots[0] != &base.Slots[0] || &plainToo.Slots[0] != &base.Slots[0] {
		t.Error("a class without slots of its own has a copy of its parent's slots")
	}
	if len(optional.Required) != 1 || &optional.Required[0] != &base.Required[0] {
		t.Error("a class without required slots of its own has a copy of its parent's required fields")
	}
	if &plain.Ancestors[0] != &optional.Ancestors[0] {
		t.Error("siblings have copies of one list of ancestors")
	}
}

// A class with slots of its own holds the slots it inherits unchanged as its
// parent's very slots, not copies; a slot it requires again is a copy of its own,
// and the parent's (and every sibling's) stays optional.
func TestAClassSharesTheSlotsItInheritsUnchanged(t *testing.T) {
	s := Build(sharingInputs())
	base, optional, leaf, again := s.Classes["zorp.base"], s.Classes["zorp.optional"], s.Classes["zorp.leaf"], s.Classes["zorp.again"]
	if len(optional.Slots) != 3 || optional.Slots[0] != base.Slots[0] || optional.Slots[1] != base.Slots[1] {
		t.Error("a class with slots of its own has copies of the slots it inherits")
	}
	if len(leaf.Slots) != 3 || leaf.Slots[0] != base.Slots[0] || leaf.Slots[1] != base.Slots[1] {
		t.Error("a grandchild has copies of the slots it inherits")
	}
	if len(again.Slots) != 2 || again.Slots[0] != base.Slots[0] || again.Slots[1] == base.Slots[1] {
		t.Fatal("a class that requires an inherited slot again does not have a slot of its own for it")
	}
	if !again.Slots[1].Required || base.Slots[1].Required || optional.Slots[1].Required || leaf.Slots[1].Required {
		t.Errorf("requiring zorp.color again in zorp.again: required in zorp.again %v, in zorp.base %v, zorp.optional %v, zorp.leaf %v; want only the first",
			again.Slots[1].Required, base.Slots[1].Required, optional.Slots[1].Required, leaf.Slots[1].Required)
	}
	if want := []string{"name", "color"}; !reflect.DeepEqual(again.Required, want) || !reflect.DeepEqual(base.Required, []string{"name"}) {
		t.Errorf("required fields: zorp.again %q (want %q), zorp.base %q (want [name])", again.Required, want, base.Required)
	}
	// The benchmark's leaves: their first 16 slots are their mid-level class's.
	b := Build(benchInputs())
	for name, c := range b.Classes {
		if c.Abstract || len(c.Parents) != 1 {
			continue
		}
		parent := b.Classes[c.Parents[0]]
		for i, p := range parent.Slots {
			if c.Slots[i] != p {
				t.Fatalf("%s: slot %d is a copy of its parent's", name, i)
			}
		}
	}
}

// Every slot of a Property points to the Property's definition, in a first build
// and in the incremental builds after it: a class's slot holds only whether it is
// required and which class declares it. A changed Property's classes point to its
// new definition, and a slot required again shares the definition too.
func TestEverySlotOfAPropertyPointsToThePropertysDefinition(t *testing.T) {
	check := func(t *testing.T, when string, s *Snapshot) {
		t.Helper()
		slots := 0
		for name, c := range s.Classes {
			for _, sl := range c.Slots {
				p := s.Properties[sl.Property]
				if p == nil || sl.Definition != p.Slot.Definition {
					t.Fatalf("%s: %s's slot %q has a definition of its own, not its Property's", when, name, sl.Field)
				}
				slots++
			}
		}
		if slots == 0 {
			t.Fatalf("%s: no slots", when)
		}
	}
	check(t, "sharing", Build(sharingInputs()))
	in := benchInputs()
	var b Builder
	check(t, "a first build", b.Build(deepCopyInputs(in)))
	p := propertyAt(&in, "bench.m6.p1")
	p.Spec.Description, p.ResourceVersion = "Changed.", "2"
	s := b.Build(deepCopyInputs(in))
	check(t, "a Property changed", s)
	if d := s.Classes["bench.l6"].Slots[9].Definition; d.Property != "bench.m6.p1" || d.Description != "Changed." {
		t.Errorf("bench.l6's slot of bench.m6.p1 after the change: %+v", *d)
	}
	c := classAt(&in, "bench.l7")
	c.Spec.Description, c.ResourceVersion = "Changed.", "3"
	check(t, "a class changed", b.Build(deepCopyInputs(in)))
}

// A snapshot's lists may be shared between classes (a class's slots are its
// parent's own, and a first build cuts the lists of every class from chunks they
// share); whatever a reader appends to one class's list never shows in another
// class, nor in what another reader appended to another class's list; and a later
// build never changes a snapshot built before it. What the builder keeps for its
// next build is cut from the same chunks: the appends leave it as it was too.
func TestAppendingToOneClassListLeavesEveryOtherClassAsItWas(t *testing.T) {
	base := sharingInputs()
	// The base declares a slot twice: its list of slots is shorter than the room
	// made for it.
	base.Classes[0].Spec.Slots = append(base.Classes[0].Spec.Slots, opt("footwear.name"))
	for _, in := range []Inputs{base, benchInputs()} {
		var b Builder
		s, want := b.Build(in), Build(deepCopyInputs(in))
		type lists struct {
			slots                        []*Slot
			required, ancestors, parents []string
		}
		appended := map[string]lists{}
		for name, c := range s.Classes {
			appended[name] = lists{
				slots:     append(c.Slots, &Slot{Definition: &Definition{Property: name, Field: "appended", Range: metav1alpha1.RangeString}}),
				required:  append(c.Required, name),
				ancestors: append(c.Ancestors, name),
				parents:   append(c.Parents, name),
			}
		}
		for name, c := range s.Classes {
			if !reflect.DeepEqual(c, want.Classes[name]) {
				t.Errorf("after appending to every class's lists, %s is\n%+v\nwant\n%+v", name, c, want.Classes[name])
			}
			a := appended[name]
			if a.slots[len(a.slots)-1].Property != name || a.required[len(a.required)-1] != name ||
				a.ancestors[len(a.ancestors)-1] != name || a.parents[len(a.parents)-1] != name {
				t.Errorf("what was appended to the lists of %s was overwritten by an append to another class's", name)
			}
		}
		// The first class's first Property changes: the builder's next build
		// resolves again what read it, as a full build does.
		changed := deepCopyInputs(in)
		for i := range changed.Properties {
			if p := &changed.Properties[i]; p.Name == in.Classes[0].Spec.Slots[0].Property {
				p.Spec.Description, p.ResourceVersion = "Changed.", "changed"
			}
		}
		if got, want := b.Build(changed), Build(changed); !reflect.DeepEqual(got, want) {
			t.Errorf("after appending to every class's lists, the builder's next build differs from a full build")
		}
	}
}

func TestABuildLeavesTheSnapshotBuiltBeforeItAsItWas(t *testing.T) {
	for _, in := range []Inputs{sharingInputs(), benchInputs()} {
		var b Builder
		first := b.Build(in)
		want := Build(deepCopyInputs(in))
		next := deepCopyInputs(in)
		for i := range next.Classes {
			c := &next.Classes[i]
			// Every class requires all of its slots, and declares one more.
			for j := range c.Spec.Slots {
				c.Spec.Slots[j].Required = true
			}
			c.Spec.Slots = append(c.Spec.Slots, opt("zorp.extra"))
			c.ResourceVersion = "7"
		}
		next.Properties = append(next.Properties, newProp("zorp.extra", metav1alpha1.RangeString))
		for _, s := range []*Snapshot{b.Build(next), b.Build(in)} {
			if s == first {
				t.Fatal("a build returned the snapshot built before it")
			}
		}
		if !reflect.DeepEqual(first, want) {
			for name, c := range first.Classes {
				if !reflect.DeepEqual(c, want.Classes[name]) {
					t.Errorf("after later builds, %s of the first snapshot is\n%+v\nwant\n%+v", name, c, want.Classes[name])
				}
			}
			t.Fatal("later builds changed the first snapshot")
		}
	}
}

// A Property is compared with the last build's by its slot: slotIs must tell every
// field of a Slot and of its Definition apart, as reflect.DeepEqual would.
func TestSlotIsSeesEveryFieldOfASlot(t *testing.T) {
	props := []metav1alpha1.Property{
		newProp("zorp.tentacle-count", metav1alpha1.RangeInteger, withRange(0, 10)),
		newProp("footwear.color", metav1alpha1.RangeString, withPattern("^[a-z]+$"), withMaxLen(8), withEnum("red", "blue"), withMany()),
		newProp("zorp.home", metav1alpha1.RangeRef, withTarget("zorp.base"), withField("house")),
	}
	for i := range props {
		p := &props[i]
		slot := SlotOf(p)
		if !slotIs(p, &slot) {
			t.Fatalf("%s: its own slot is not the same", p.Name)
		}
		// changes are the ways of changing one field: of the slot's own (the
		// definition's pointer among them: none) or of its definition's.
		type change struct {
			name string
			make func() Slot
		}
		var changes []change
		sv := reflect.ValueOf(slot)
		for f := range sv.NumField() {
			name := sv.Type().Field(f).Name
			if name == "Definition" {
				changes = append(changes, change{"Definition (none)", func() Slot { changed := slot; changed.Definition = nil; return changed }})
				continue
			}
			changes = append(changes, change{name, func() Slot {
				changed := slot
				changeField(t, reflect.ValueOf(&changed).Elem().Field(f), name)
				return changed
			}})
		}
		dv := reflect.ValueOf(*slot.Definition)
		for f := range dv.NumField() {
			name := dv.Type().Field(f).Name
			changes = append(changes, change{"Definition." + name, func() Slot {
				changed := slot.Own()
				changeField(t, reflect.ValueOf(changed.Definition).Elem().Field(f), name)
				return changed
			}})
		}
		for _, c := range changes {
			changed := c.make()
			if reflect.DeepEqual(changed, slot) {
				t.Fatalf("Slot.%s: the change made no difference", c.name)
			}
			if slotIs(p, &changed) {
				t.Errorf("%s: a slot of another %s is taken for the Property's", p.Name, c.name)
			}
			if !slotIs(p, &slot) {
				t.Fatalf("%s: changing a copy's %s changed the slot", p.Name, c.name)
			}
		}
	}
}

// changeField gives a field of a slot or definition another value.
func changeField(t *testing.T, cv reflect.Value, name string) {
	t.Helper()
	switch cv.Kind() {
	case reflect.String:
		cv.SetString(cv.String() + "x")
	case reflect.Bool:
		cv.SetBool(!cv.Bool())
	case reflect.Slice:
		if cv.IsNil() {
			cv.Set(reflect.MakeSlice(cv.Type(), 0, 0))
		} else {
			cv.Set(reflect.Append(cv, reflect.ValueOf("x")))
		}
	case reflect.Pointer:
		if cv.IsNil() {
			cv.Set(reflect.New(cv.Type().Elem()))
		} else {
			n := reflect.New(cv.Type().Elem())
			n.Elem().Set(cv.Elem())
			if n.Elem().CanFloat() {
				n.Elem().SetFloat(n.Elem().Float() + 1)
			} else {
				n.Elem().SetInt(n.Elem().Int() + 1)
			}
			cv.Set(n)
		}
	default:
		t.Fatalf("%s is a %s: teach this test (and slotIs) to change it", name, cv.Kind())
	}
}

// fieldIs is FieldName compared, without making the name.
func TestFieldIsFieldName(t *testing.T) {
	for _, name := range []string{"footwear.tentacle-count", "x", "footwear.shoe_size", "footwear.lace_tip-color", "a.b.release-date",
		"footwear.3d-model", "footwear.4", "zorp.-lead", "zorp._", "zorp.", "zorp.ünï-côdé", "zorp.ßig-ǆ", "zorp.\xff-bad", "zorp.a--b__c",
		"zorp." + strings.Repeat("long-name", 20)} {
		for _, field := range []string{"", "legs"} {
			p := newProp(name, metav1alpha1.RangeString, withField(field))
			want := FieldName(&p)
			if !fieldIs(&p, want) {
				t.Errorf("fieldIs(%q, field %q) refuses its own field name %q", name, field, want)
			}
			for _, other := range []string{want + "x", strings.TrimSuffix(want, want[len(want)-1:]), "", "f" + want} {
				if other != want && fieldIs(&p, other) {
					t.Errorf("fieldIs(%q, field %q) takes %q for %q", name, field, other, want)
				}
			}
		}
	}
}
