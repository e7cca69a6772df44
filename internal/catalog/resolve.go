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
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Lookup finds metamodel objects by name. Reconcilers back it with the informer
// cache; Build backs it with maps.
type Lookup interface {
	Class(name string) (*metav1alpha1.Class, bool)
	Property(name string) (*metav1alpha1.Property, bool)
}

// ReservedField is the one field name a slot cannot have: create tools take the
// instance's name, namespace and labels in an argument of that name.
const ReservedField = "metadata"

// FieldName is a Property's field name in instances: spec.field, or else the last
// dot-separated part of its name in camelCase ("footwear.tentacle-count" gives
// "tentacleCount").
func FieldName(p *metav1alpha1.Property) string {
	if p.Spec.Field != "" {
		return p.Spec.Field
	}
	return string(appendDerivedField(make([]byte, 0, len(p.Name)+1), p.Name))
}

// fieldIs says whether FieldName(p) is field, without making the name.
func fieldIs(p *metav1alpha1.Property, field string) bool {
	if p.Spec.Field != "" {
		return p.Spec.Field == field
	}
	var buf [64]byte
	return string(appendDerivedField(buf[:0], p.Name)) == field
}

// appendDerivedField appends the field name a Property of that name has when its
// spec names none.
func appendDerivedField(b []byte, name string) []byte {
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	start := len(b)
	upper := false
	for _, r := range name {
		if r == '-' || r == '_' {
			upper = len(b) > start
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b = utf8.AppendRune(b, r)
	}
	if len(b) == start || !unicode.IsLetter(rune(b[start])) {
		b = slices.Insert(b, start, 'f')
	}
	return b
}

// ValidateProperty checks what the API server's rules cannot: that a pattern is a valid
// regular expression, that enum values fit the other constraints, and that a ref's
// target Class exists. It returns nil for a usable Property.
func ValidateProperty(p *metav1alpha1.Property, l Lookup) *Problem {
	s := &p.Spec
	invalid := func(format string, args ...any) *Problem {
		return &Problem{Reason: metav1alpha1.ReasonInvalid, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Range == metav1alpha1.RangeRef && s.Target == "":
		return invalid("range ref needs a target Class")
	case s.Range != metav1alpha1.RangeRef && s.Target != "":
		return invalid("target is only for range ref, not %s", s.Range)
	case s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum:
		return invalid("minimum %v is greater than maximum %v", *s.Minimum, *s.Maximum)
	}
	var re *regexp.Regexp
	if s.Pattern != "" {
		var err error
		if re, err = compile(s.Pattern, l); err != nil {
			return invalid("pattern %q is not a valid regular expression: %v", s.Pattern, err)
		}
	}
	info := rangeRow(s.Range)
	for _, v := range s.Enum {
		if info.coerce != nil && !takesAnyText(s.Range) {
			if _, err := info.coerce(v); err != nil {
				return invalid("enum value %q is not a valid %s: no instance could hold it; fix or remove it", v, info.Words)
			}
		}
		if re != nil && !re.MatchString(v) {
			return invalid("enum value %q does not match pattern %q", v, s.Pattern)
		}
		if s.MaxLength != nil && int64(len([]rune(v))) > *s.MaxLength {
			return invalid("enum value %q is longer than maxLength %d", v, *s.MaxLength)
		}
	}
	if s.Range == metav1alpha1.RangeRef {
		if _, ok := l.Class(s.Target); !ok {
			return &Problem{Reason: metav1alpha1.ReasonUnknownClass,
				Message: fmt.Sprintf("target Class %q does not exist", s.Target)}
		}
	}
	return nil
}

// compile compiles a pattern through the lookup's cache when it has one.
func compile(pattern string, l Lookup) (*regexp.Regexp, error) {
	if c, ok := l.(interface {
		compile(string) (*regexp.Regexp, error)
	}); ok {
		return c.compile(pattern)
	}
	return regexp.Compile(pattern)
}

// buildLookup is the lookup of a build: every Property resolved already, and lists
// that classes of the build share.
type buildLookup interface {
	Lookup
	resolvedProperty(name string) (*Property, bool)
	// resolves says whether every Property is resolved already: then every slot
	// of a Property points to the Property's one definition.
	resolves() bool
	ancestorsBelow(parent *Class) []string
	// slots is an empty list with room for n slots.
	slots(n int) []*Slot
	// slotValues are where the slots a class makes are taken from (nil: the
	// class's own).
	slotValues() *slotValues
	// class is a zero Class.
	class() *Class
	// strs is a list of n empty strings, its capacity n.
	strs(n int) []string
}

// slotValues hands out slots from chunks: a class's slots of its own are made
// together, and a build's from chunks of many classes.
type slotValues struct {
	free  []Slot
	chunk int
}

// next is a zero slot.
func (v *slotValues) next() *Slot {
	if len(v.free) == 0 {
		v.free = make([]Slot, v.chunk)
	}
	s := &v.free[0]
	v.free = v.free[1:]
	return s
}

// slotOf looks up the Property of a slot: the slot it makes and what is wrong with
// it (ok false: there is no such Property). A build's lookup has every Property
// resolved already: then the slot is the resolved Property's own, not a copy.
func slotOf(name string, l Lookup, bl buildLookup) (*Slot, *Problem, bool) {
	if bl != nil {
		if p, ok := bl.resolvedProperty(name); ok {
			return &p.Slot, p.Problem, true
		}
	}
	p, ok := l.Property(name)
	if !ok {
		return nil, nil, false
	}
	slot := SlotOf(p)
	return &slot, propertyProblem(p, l), true
}

// propertyProblem validates a Property through the lookup's cache when it has one.
func propertyProblem(p *metav1alpha1.Property, l Lookup) *Problem {
	if c, ok := l.(interface {
		propertyProblem(*metav1alpha1.Property) *Problem
	}); ok {
		return c.propertyProblem(p)
	}
	return ValidateProperty(p, l)
}

// slotIs says whether SlotOf(p) is s, field by field (reflect.DeepEqual's
// equality). What ValidateProperty reads of p is all in its slot: a Property whose
// slot is the same has the same problem, but for its ref target's coming or going.
func slotIs(p *metav1alpha1.Property, s *Slot) bool {
	sp := &p.Spec
	card := sp.Cardinality
	if card == "" {
		card = metav1alpha1.CardinalityOne
	}
	return s.Definition != nil && s.Property == p.Name && s.Range == sp.Range && s.Cardinality == card && !s.Required && s.From == "" &&
		s.Description == sp.Description && s.Target == sp.Target && s.Pattern == sp.Pattern &&
		(s.Enum == nil) == (sp.Enum == nil) && slices.Equal(s.Enum, sp.Enum) &&
		samePointee(s.Minimum, sp.Minimum) && samePointee(s.Maximum, sp.Maximum) && samePointee(s.MaxLength, sp.MaxLength) &&
		fieldIs(p, s.Field)
}

// samePointee says whether a and b are both nil or point to equal values.
func samePointee[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// SlotOf is the catalog's view of a Property: a slot with a definition of its own.
func SlotOf(p *metav1alpha1.Property) Slot {
	d := new(Definition)
	define(d, p)
	return Slot{Definition: d}
}

// define fills d with what p defines.
func define(d *Definition, p *metav1alpha1.Property) {
	card := p.Spec.Cardinality
	if card == "" {
		card = metav1alpha1.CardinalityOne
	}
	d.Property = p.Name
	d.Field = FieldName(p)
	d.Range = p.Spec.Range
	d.Cardinality = card
	d.Description = p.Spec.Description
	d.Target = p.Spec.Target
	d.Enum = p.Spec.Enum
	d.Minimum = p.Spec.Minimum
	d.Maximum = p.Spec.Maximum
	d.Pattern = p.Spec.Pattern
	d.MaxLength = p.Spec.MaxLength
}

// ResolveClass resolves a Class: its ancestors (rejecting unknown parents and
// inheritance cycles) and its effective slots (rejecting unknown or unusable Properties
// and two slots with one field name). Slots come in inheritance order, roots first; a
// slot is required when any class that declares it requires it. On failure the
// returned Class has a Problem and no slots.
func ResolveClass(c *metav1alpha1.Class, l Lookup) *Class { return resolveClass(c, l, nil) }

// resolveClass is ResolveClass; parent, when set, is c's only parent (c.Spec.Parents
// names it alone), resolved without a problem: then c's ancestors are the parent's
// and the parent, and c's slots begin with the parent's, as linearizing c would find
// them (a class whose only parent resolves has no cycle through that parent, or the
// parent would have one too), and only c's own slots are looked up.
func resolveClass(c *metav1alpha1.Class, l Lookup, parent *Class) *Class {
	bl, _ := l.(buildLookup)
	out := ownFields(c, bl)
	if out.Problem = reservedPrefixProblem(c.Spec.Prefix); out.Problem != nil {
		return out
	}
	var order []*metav1alpha1.Class
	n := 0
	if parent != nil {
		if bl != nil {
			out.Ancestors = bl.ancestorsBelow(parent)
		} else {
			out.Ancestors = append(append(make([]string, 0, len(parent.Ancestors)+1), parent.Ancestors...), parent.Name)
		}
		if len(c.Spec.Slots) == 0 {
			// Nothing of its own: the parent's lists are the class's, shared (of
			// length equal to capacity, so that an append copies them).
			out.Slots, out.Required = clip(parent.Slots), clip(parent.Required)
			return checkCodec(out)
		}
		order = []*metav1alpha1.Class{c}
		n = len(parent.Slots)
	} else {
		var problem *Problem
		if order, problem = linearize(c, l); problem != nil {
			out.Problem = problem
			return out
		}
		for _, a := range order[:len(order)-1] {
			out.Ancestors = append(out.Ancestors, a.Name)
		}
	}
	// made is how many slots the class may make: one per slot it declares (or
	// requires again).
	made := 0
	for _, k := range order {
		made += len(k.Spec.Slots)
	}
	n += made
	var values *slotValues
	if bl != nil {
		values = bl.slotValues()
	}
	if values == nil {
		values = &slotValues{chunk: made}
	}
	if n > 0 {
		if bl != nil {
			out.Slots = bl.slots(n)
		} else {
			out.Slots = make([]*Slot, 0, n)
		}
	}
	slots := newSlotIndex(n)
	// In a build, one Property is one definition (its resolved one, which the
	// parent's slots point to as well).
	slots.oneDefinition = bl != nil && bl.resolves()
	adder := slotAdder{out: out, index: slots, values: values, l: l, bl: bl}
	if parent != nil {
		out.Slots = append(out.Slots, parent.Slots...)
		adder.inherited = len(parent.Slots)
		for i, s := range out.Slots {
			slots.add(s, i)
		}
	}
	for _, k := range order {
		for _, ref := range k.Spec.Slots {
			if problem := adder.add(k.Name, ref); problem != nil {
				out.Problem, out.Slots = problem, nil
				return out
			}
		}
	}
	out.Required = requiredFields(out.Slots, parent, adder.requiredAgain, bl)
	return checkCodec(out)
}

// ownFields is the class with what it says of itself, before its ancestors and slots.
func ownFields(c *metav1alpha1.Class, bl buildLookup) *Class {
	var out *Class
	if bl != nil {
		out = bl.class()
	} else {
		out = new(Class)
	}
	out.Name, out.Prefix, out.Kind, out.Description = c.Name, c.Spec.Prefix, c.Spec.Kind, c.Spec.Description
	out.Abstract, out.Parents, out.InstanceAPIOptions, out.Codec = c.Spec.Abstract, c.Spec.Parents, c.Spec.InstanceAPI, c.Spec.Codec
	if out.Codec.Format == "" {
		out.Codec.Format = metav1alpha1.CodecJSON
	}
	return out
}

// slotAdder adds a class's own slots to the list resolveClass makes.
type slotAdder struct {
	out    *Class
	index  slotIndex
	values *slotValues
	// inherited is how many of out.Slots are the parent's (shared), and
	// requiredAgain whether the class requires one of them that the parent does not.
	inherited     int
	requiredAgain bool
	l             Lookup
	bl            buildLookup
}

// add adds the slot ref that class from declares, or reports why the class cannot
// have it.
func (a *slotAdder) add(from string, ref metav1alpha1.SlotRef) *Problem {
	out := a.out
	// The Property is looked up first, then the slots scanned once for it or its
	// field: a slot of the same Property has the same field, and no two slots share one.
	slot, pp, ok := slotOf(ref.Property, a.l, a.bl)
	if !ok {
		return &Problem{Reason: metav1alpha1.ReasonUnknownProperty,
			Message: fmt.Sprintf("Property %q (a slot of %s) does not exist", ref.Property, from)}
	}
	i, same := a.index.find(out.Slots, slot.Definition)
	if same {
		if ref.Required && !out.Slots[i].Required {
			if i < a.inherited {
				// The parent's slot, which its other classes share: this class's is a copy.
				again := a.values.next()
				*again = *out.Slots[i]
				out.Slots[i] = again
				a.requiredAgain = true
			}
			out.Slots[i].Required = true
		}
		return nil
	}
	switch {
	case pp != nil:
		return &Problem{Reason: metav1alpha1.ReasonPropertyNotReady,
			Message: fmt.Sprintf("Property %q (a slot of %s) is not usable: %s", ref.Property, from, pp.Message)}
	case slot.Field == ReservedField:
		return &Problem{Reason: metav1alpha1.ReasonReservedField, Message: fmt.Sprintf(
			"Property %q uses the field %q, which create tools reserve for the instance's metadata; set its spec.field",
			ref.Property, ReservedField)}
	case i >= 0:
		return &Problem{Reason: metav1alpha1.ReasonDuplicateField,
			Message: fmt.Sprintf("Properties %q and %q both use the field %q", out.Slots[i].Property, ref.Property, slot.Field)}
	}
	// The class's slot points to the Property's definition: only whether it is
	// required and where it comes from are the class's.
	added := a.values.next()
	*added = Slot{Definition: slot.Definition, Required: ref.Required, From: from}
	out.Slots = append(out.Slots, added)
	a.index.add(added, len(out.Slots)-1)
	return nil
}

// requiredFields are the fields of the required slots, in slot order. When the
// first inherited slots are the parent's, unchanged, and none of the others is
// required, they are the parent's list, shared.
func requiredFields(slots []*Slot, parent *Class, requiredAgain bool, bl buildLookup) []string {
	required := 0
	for _, s := range slots {
		if s.Required {
			required++
		}
	}
	if parent != nil && !requiredAgain && required == len(parent.Required) {
		return clip(parent.Required)
	}
	if required == 0 {
		return nil
	}
	var out []string
	if bl != nil {
		out = bl.strs(required)[:0]
	} else {
		out = make([]string, 0, required)
	}
	for _, s := range slots {
		if s.Required {
			out = append(out, s.Field)
		}
	}
	return out
}

// checkCodec refuses a class whose codec names a section that is not one of its
// single-valued string slots.
func checkCodec(out *Class) *Class {
	for _, f := range out.Codec.Sections {
		if s, ok := out.Slot(f); !ok || s.Many() || (s.Range != metav1alpha1.RangeString) {
			out.Problem = &Problem{Reason: metav1alpha1.ReasonInvalid, Message: fmt.Sprintf(
				"codec section %q is not a single-valued string slot of the class", f)}
			out.Slots, out.Required = nil, nil
			return out
		}
	}
	return out
}

// clip is s with its capacity cut to its length: a list that classes share, which
// an append copies instead of writing into.
func clip[T any](s []T) []T { return s[:len(s):len(s)] }

// slotIndex finds a class's slots by property and by field while they are
// gathered: by a scan when they are few (most classes: no maps to make), by maps
// when they are many.
type slotIndex struct {
	property, field map[string]int
	// oneDefinition says that the slots of one Property point to one definition.
	oneDefinition bool
}

// slotsScanned is the most slots found by a scan.
const slotsScanned = 32

func newSlotIndex(n int) slotIndex {
	if n <= slotsScanned {
		return slotIndex{}
	}
	return slotIndex{property: make(map[string]int, n), field: make(map[string]int, n)}
}

func (x slotIndex) add(s *Slot, i int) {
	if x.property != nil {
		x.property[s.Property], x.field[s.Field] = i, i
	}
}

// find is the position of the slot of d's Property (same true), else of the slot
// with its field (same false), else -1. When the slots of one Property point to
// one definition, a slot of another definition is of another Property: a scan
// compares its field alone.
func (x slotIndex) find(slots []*Slot, d *Definition) (i int, same bool) {
	property, field := d.Property, d.Field
	if x.property != nil {
		if i, ok := x.property[property]; ok {
			return i, true
		}
		if i, ok := x.field[field]; ok {
			return i, false
		}
		return -1, false
	}
	if x.oneDefinition {
		for i, s := range slots {
			if s.Definition == d {
				return i, true
			}
			if s.Field == field {
				return i, false
			}
		}
		return -1, false
	}
	for i, s := range slots {
		if s.Property == property {
			return i, true
		}
		if s.Field == field {
			return i, false
		}
	}
	return -1, false
}

// linearize returns c's ancestors and c itself in inheritance order: every class comes
// after all of its parents, parents in their declared order.
func linearize(c *metav1alpha1.Class, l Lookup) ([]*metav1alpha1.Class, *Problem) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var order []*metav1alpha1.Class
	var path []string
	var visit func(k *metav1alpha1.Class) *Problem
	visit = func(k *metav1alpha1.Class) *Problem {
		switch state[k.Name] {
		case done:
			return nil
		case visiting:
			cycle := append(path[indexOf(path, k.Name):], k.Name)
			if n := len(cycle); n > 2*cycleShown {
				// A long cycle keeps its ends: a message must stay short enough to be stored.
				cycle = append(append(cycle[:cycleShown:cycleShown], fmt.Sprintf("(%d more)", n-2*cycleShown)), cycle[n-cycleShown:]...)
			}
			return &Problem{Reason: metav1alpha1.ReasonInheritanceCycle,
				Message: "inheritance cycle: " + strings.Join(cycle, " -> ") + "; remove one of these parents"}
		}
		state[k.Name] = visiting
		path = append(path, k.Name)
		for _, pn := range k.Spec.Parents {
			parent, ok := l.Class(pn)
			if pn == c.Name {
				parent, ok = c, true
			}
			if !ok {
				return &Problem{Reason: metav1alpha1.ReasonUnknownParent,
					Message: fmt.Sprintf("parent Class %q (of %s) does not exist", pn, k.Name)}
			}
			if p := visit(parent); p != nil {
				return p
			}
		}
		path = path[:len(path)-1]
		state[k.Name] = done
		order = append(order, k)
		return nil
	}
	if p := visit(c); p != nil {
		return nil, p
	}
	return order, nil
}

// cycleShown is how many classes an inheritance cycle's message names at each end.
const cycleShown = 10

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return 0
}

// ValidateWorkflow checks a WorkflowDefinition's state machine: unique state and
// transition names, an initial state that exists and is not terminal, at least one
// terminal state, and transitions between existing states that do not leave a terminal
// state. The API server enforces most of this too; the operator checks again so that
// objects stored before a rule existed are reported.
func ValidateWorkflow(wd *metav1alpha1.WorkflowDefinition, l Lookup) *Workflow {
	out := &Workflow{Name: wd.Name, Spec: wd.Spec}
	invalid := func(format string, args ...any) *Workflow {
		out.Problem = &Problem{Reason: metav1alpha1.ReasonInvalid, Message: fmt.Sprintf(format, args...)}
		out.TerminalStates, out.CancellableFrom = nil, nil
		return out
	}
	states := map[string]metav1alpha1.TerminalKind{}
	for _, s := range wd.Spec.States {
		if _, dup := states[s.Name]; dup {
			return invalid("state %q is declared twice", s.Name)
		}
		states[s.Name] = s.Terminal
		if s.Terminal != "" {
			out.TerminalStates = append(out.TerminalStates, s.Name)
		}
	}
	kind, ok := states[wd.Spec.Initial]
	switch {
	case !ok:
		return invalid("initial state %q is not one of the states", wd.Spec.Initial)
	case kind != "":
		return invalid("initial state %q is terminal", wd.Spec.Initial)
	case len(out.TerminalStates) == 0:
		return invalid("no state is terminal: mark at least one with terminal: success, failure or cancelled")
	}
	names := map[string]bool{}
	cancellable := map[string]bool{}
	for _, t := range wd.Spec.Transitions {
		if names[t.Name] {
			return invalid("transition %q is declared twice", t.Name)
		}
		names[t.Name] = true
		to, ok := states[t.To]
		if !ok {
			return invalid("transition %q leads to %q, which is not a state", t.Name, t.To)
		}
		for _, f := range t.From {
			fromKind, ok := states[f]
			if !ok {
				return invalid("transition %q starts from %q, which is not a state", t.Name, f)
			}
			if fromKind != "" {
				return invalid("transition %q starts from the terminal state %q", t.Name, f)
			}
			if to == metav1alpha1.TerminalCancelled {
				cancellable[f] = true
			}
		}
	}
	for _, s := range wd.Spec.States {
		if cancellable[s.Name] {
			out.CancellableFrom = append(out.CancellableFrom, s.Name)
		}
	}
	if trapped := trappedState(wd); trapped != "" {
		return invalid("state %q leads to no terminal state, and a process can reach it from the initial state: "+
			"it would never end; add a transition from it towards a terminal state", trapped)
	}
	if wd.Spec.SubjectClass != "" {
		if _, ok := l.Class(wd.Spec.SubjectClass); !ok {
			out.Problem = &Problem{Reason: metav1alpha1.ReasonUnknownClass,
				Message: fmt.Sprintf("subject Class %q does not exist", wd.Spec.SubjectClass)}
		}
	}
	return out
}

// trappedState is the first state, in declaration order, that a process can reach from
// the initial state but from which no transition path leads to a terminal state; ""
// when there is none.
func trappedState(wd *metav1alpha1.WorkflowDefinition) string {
	next := map[string][]string{}
	prev := map[string][]string{}
	for _, t := range wd.Spec.Transitions {
		for _, f := range t.From {
			next[f] = append(next[f], t.To)
			prev[t.To] = append(prev[t.To], f)
		}
	}
	walk := func(start []string, edges map[string][]string) map[string]bool {
		seen := map[string]bool{}
		queue := append([]string(nil), start...)
		for _, s := range start {
			seen[s] = true
		}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			for _, n := range edges[s] {
				if !seen[n] {
					seen[n] = true
					queue = append(queue, n)
				}
			}
		}
		return seen
	}
	var terminals []string
	for _, s := range wd.Spec.States {
		if s.Terminal != "" {
			terminals = append(terminals, s.Name)
		}
	}
	reachable := walk([]string{wd.Spec.Initial}, next)
	canEnd := walk(terminals, prev)
	for _, s := range wd.Spec.States {
		if reachable[s.Name] && !canEnd[s.Name] {
			return s.Name
		}
	}
	return ""
}
