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
	"regexp"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Inputs are the metamodel objects a snapshot is built from.
type Inputs struct {
	Classes         []metav1alpha1.Class
	Properties      []metav1alpha1.Property
	Workflows       []metav1alpha1.WorkflowDefinition
	ServiceAccounts []metav1alpha1.ServiceAccount
	// DefaultServiceAccount is the Kubernetes ServiceAccount an account acts as when
	// it names none (the manager's --default-service-account).
	DefaultServiceAccount string
}

type mapLookup struct {
	classes map[string]*metav1alpha1.Class
	// properties are the Properties by name; a build leaves it nil and finds a
	// Property among inputs, see Property.
	properties map[string]*metav1alpha1.Property
	inputs     []metav1alpha1.Property
	// resolved are the build's Properties, resolved before its classes: a Property
	// used by many classes is checked (and its pattern compiled) once per build.
	resolved map[string]*Property
	// patterns are the patterns compiled in this build: many Properties share one.
	patterns map[string]compiled
	// groups are the API groups of the build's prefixes, one string per prefix.
	groups map[string]string
	// below are, per parent resolved in this build, its children's ancestors: one
	// list that all of them share.
	below map[*Class][]string
	// arena, when set, is where the classes' slots are taken from.
	arena *arena
}

type compiled struct {
	re  *regexp.Regexp
	err error
}

func (m mapLookup) propertyProblem(p *metav1alpha1.Property) *Problem {
	if r, ok := m.resolved[p.Name]; ok {
		return r.Problem
	}
	return ValidateProperty(p, m)
}

// resolves says whether the lookup is a build's, its Properties resolved: then
// it finds no Property it did not resolve.
func (m mapLookup) resolves() bool { return m.resolved != nil && m.properties == nil }

// resolvedProperty is a Property as this build resolved it.
func (m mapLookup) resolvedProperty(name string) (*Property, bool) {
	p, ok := m.resolved[name]
	return p, ok
}

func (m mapLookup) compile(pattern string) (*regexp.Regexp, error) {
	if m.patterns == nil {
		return regexp.Compile(pattern)
	}
	c, ok := m.patterns[pattern]
	if !ok {
		c.re, c.err = regexp.Compile(pattern)
		m.patterns[pattern] = c
	}
	return c.re, c.err
}

// ancestorsBelow are the ancestors of a class whose only parent is parent: the
// parent's and the parent. Every child of a parent shares one list, of length
// equal to its capacity (an append copies it).
func (m mapLookup) ancestorsBelow(parent *Class) []string {
	if a, ok := m.below[parent]; ok {
		return a
	}
	a := make([]string, len(parent.Ancestors)+1)
	a[copy(a, parent.Ancestors)] = parent.Name
	if m.below != nil {
		m.below[parent] = a
	}
	return a
}

// Chunks are how many slots, and how many entries of lists of slots or of names,
// a build's arena allocates at once: 32 KiB each, the largest of the runtime's
// small sizes (a larger one is a fresh span of its own, cleared page by page).
const (
	slotChunk = chunkBytes / int(unsafe.Sizeof(Slot{}))
	listChunk = chunkBytes / int(unsafe.Sizeof((*Slot)(nil)))
	strChunk  = chunkBytes / int(unsafe.Sizeof(""))
)

// chunkBytes is the size of the arena's chunks.
const chunkBytes = 32 << 10

// arena is where a first build takes its classes, their slots and lists of slots
// from. Only a first build, where every class is new, has one: a chunk of it
// stays in memory while one of its classes is in use, so at most one full build's
// classes outlive them.
type arena struct {
	lists   []*Slot
	values  slotValues
	classes []Class
	apis    []InstanceAPI
	memos   []classMemo
	strs    []string
}

// strs is a list of n empty strings, its capacity n: from the arena when there is
// one, else its own.
func (m mapLookup) strs(n int) []string {
	if m.arena == nil {
		return make([]string, n)
	}
	free := m.arena.strs
	if cap(free)-len(free) < n {
		free = make([]string, 0, max(n, strChunk))
	}
	out := free[len(free) : len(free)+n : len(free)+n]
	m.arena.strs = free[:len(free)+n]
	return out
}

// clone is a copy of names, nil when there are none.
func (m mapLookup) clone(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	out := m.strs(len(names))
	copy(out, names)
	return out
}

// class is a zero Class: from the arena when there is one.
func (m mapLookup) class() *Class {
	if m.arena == nil {
		return new(Class)
	}
	return next(&m.arena.classes)
}

// memo is a zero classMemo: from the arena when there is one.
func (m mapLookup) memo() *classMemo {
	if m.arena == nil {
		return new(classMemo)
	}
	return next(&m.arena.memos)
}

// instanceAPI is a zero InstanceAPI: from the arena when there is one.
func (m mapLookup) instanceAPI() *InstanceAPI {
	if m.arena == nil {
		return new(InstanceAPI)
	}
	return next(&m.arena.apis)
}

// next takes the first of free, a chunk of chunkBytes when free is empty.
func next[T any](free *[]T) *T {
	if len(*free) == 0 {
		var zero T
		*free = make([]T, max(1, chunkBytes/int(unsafe.Sizeof(zero))))
	}
	v := &(*free)[0]
	*free = (*free)[1:]
	return v
}

// slots is an empty list with room for n slots, its capacity n: from the arena
// when there is one, else its own.
func (m mapLookup) slots(n int) []*Slot {
	if m.arena == nil {
		return make([]*Slot, 0, n)
	}
	free := m.arena.lists
	if cap(free)-len(free) < n {
		free = make([]*Slot, 0, max(n, listChunk))
	}
	out := free[len(free) : len(free) : len(free)+n]
	m.arena.lists = free[:len(free)+n]
	return out
}

// slotValues are where the slots a class makes are taken from: the arena's when
// there is one, else nil.
func (m mapLookup) slotValues() *slotValues {
	if m.arena == nil {
		return nil
	}
	return &m.arena.values
}

// group is the API group of a prefix's instances.
func (m mapLookup) group(prefix string) string {
	if g, ok := m.groups[prefix]; ok {
		return g
	}
	g := prefix + GroupSuffix
	if m.groups != nil {
		m.groups[prefix] = g
	}
	return g
}

func (m mapLookup) Class(name string) (*metav1alpha1.Class, bool) {
	c, ok := m.classes[name]
	return c, ok
}

// Property finds a Property by name. A build asks it only after its Properties are
// resolved, and only for names it did not resolve (slotOf asks resolvedProperty
// first): those are not among its inputs.
func (m mapLookup) Property(name string) (*metav1alpha1.Property, bool) {
	if m.properties != nil {
		p, ok := m.properties[name]
		return p, ok
	}
	if _, ok := m.resolved[name]; !ok {
		return nil, false
	}
	for i := len(m.inputs) - 1; i >= 0; i-- { // the last of a name, as a map of them would keep
		if m.inputs[i].Name == name {
			return &m.inputs[i], true
		}
	}
	return nil, false
}

// Build resolves the whole metamodel into a snapshot (with Version 0; Store.Publish
// numbers it). A problem with one object stays with that object: the rest resolves.
// A class's instance API is named from its prefix and kind; whether it is served is
// read from the Class's status, which the Class reconciler keeps.
func Build(in Inputs) *Snapshot { return new(Builder).Build(in) }

// Builder builds snapshots one after another, as Build does, resolving again only
// what changed since its previous build: a Class whose resourceVersion differs (or
// that is new, gone, or has none), a Property whose slot differs (or that is new or
// gone, or whose ref target came or went), and the classes whose resolution read
// one of those (their descendants, the classes that use a changed Property, those
// whose unknown parent or ref target appeared). Everything else is the previous
// snapshot's own (the same pointers, which Store.Publish compares at no cost).
// Workflows and accounts, few and cheap, are built anew every time.
type Builder struct {
	mu   sync.Mutex
	last *memo
}

// memo is what a build leaves for the next one.
type memo struct {
	// classes are pointers: a class that is not resolved again keeps the last
	// build's memo, and a first build takes them from chunks.
	classes map[string]*classMemo
	// properties are the snapshot's Properties: a Property is compared with its
	// input by content (slotIs), which costs less than a map of resourceVersions.
	properties map[string]*Property
}

type classMemo struct {
	resourceVersion string
	out             *Class
	// parent is the resolution of the only parent that out started from (nil: the
	// class was resolved on its own).
	parent *Class
	// classes and properties are the names its resolution looked up, found or not:
	// with a parent, those of its own slots (what the parent read is the parent's).
	classes, properties []string
}

// recorder is a lookup that notes the names looked up, for a class's memo. A
// build has one, its lists reused from class to class.
type recorder struct {
	*mapLookup
	classes, properties []string
}

func (r *recorder) Class(name string) (*metav1alpha1.Class, bool) {
	r.classes = append(r.classes, name)
	return r.mapLookup.Class(name)
}

func (r *recorder) Property(name string) (*metav1alpha1.Property, bool) {
	r.properties = append(r.properties, name)
	p, ok := r.mapLookup.Property(name)
	if ok && p.Spec.Range == metav1alpha1.RangeRef {
		// Whether the property is usable depends on its target's existence.
		r.classes = append(r.classes, p.Spec.Target)
	}
	return p, ok
}

func (r *recorder) resolvedProperty(name string) (*Property, bool) {
	p, ok := r.mapLookup.resolvedProperty(name)
	r.properties = append(r.properties, name)
	if !ok {
		return nil, false
	}
	if p.Slot.Range == metav1alpha1.RangeRef {
		r.classes = append(r.classes, p.Slot.Target)
	}
	return p, true
}

// build is one Build in progress.
type build struct {
	l          *mapLookup
	last, next *memo
	s          *Snapshot
	// changed are the classes and properties that are new, gone or different since
	// the last build (none in a first build, which resolves everything).
	changedClasses, changedProperties map[string]bool
	unchanged                         bool
	// inProgress are the classes whose parents are being resolved, innermost last.
	inProgress []string
	// rec notes what the class being resolved looks up.
	rec recorder
}

// Build builds the snapshot of in, reusing what the previous build resolved from
// the same objects.
func (b *Builder) Build(in Inputs) *Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	last, first := b.last, b.last == nil
	if first {
		last = &memo{}
	}
	s := &Snapshot{
		Classes:    make(map[string]*Class, len(in.Classes)),
		Properties: make(map[string]*Property, len(in.Properties)),
		Workflows:  make(map[string]*Workflow, len(in.Workflows)),
		Accounts:   make(map[string]*Account, len(in.ServiceAccounts)),
		Shared:     map[string][]*Account{},
	}
	next := &memo{
		classes:    make(map[string]*classMemo, len(in.Classes)),
		properties: s.Properties,
	}
	l := &mapLookup{
		classes:  make(map[string]*metav1alpha1.Class, len(in.Classes)),
		inputs:   in.Properties,
		resolved: s.Properties,
		patterns: map[string]compiled{},
		groups:   map[string]string{},
		below:    map[*Class][]string{},
	}
	if first {
		l.arena = &arena{values: slotValues{chunk: slotChunk}}
	}
	for i := range in.Classes {
		l.classes[in.Classes[i].Name] = &in.Classes[i]
	}
	bd := &build{l: l, last: last, next: next, s: s}
	bd.rec.mapLookup = l
	if !first {
		bd.changedClasses = changed(l.classes, last.classes, func(m *classMemo) string { return m.resourceVersion })
		bd.changedProperties = map[string]bool{}
	}
	bd.properties(in.Properties, first)
	bd.unchanged = len(bd.changedClasses) == 0 && len(bd.changedProperties) == 0
	// Inputs with a name twice are resolved as the map of their names has them.
	unique := len(l.classes) == len(in.Classes)
	for i := range in.Classes {
		c := &in.Classes[i]
		if !unique {
			c = l.classes[c.Name]
		}
		bd.class(c)
	}
	for i := range in.Workflows {
		w := ValidateWorkflow(&in.Workflows[i], l)
		s.Workflows[w.Name] = w
	}
	// When two accounts of one namespace use one service name, the older keeps it,
	// as the ServiceAccount reconciler decides; the other is not in the catalog.
	// Accounts of other namespaces share it.
	accounts := make([]*metav1alpha1.ServiceAccount, len(in.ServiceAccounts))
	for i := range in.ServiceAccounts {
		accounts[i] = &in.ServiceAccounts[i]
	}
	sort.Slice(accounts, func(i, j int) bool { return Older(accounts[i], accounts[j]) })
	for _, sa := range accounts {
		service := sa.Spec.ServiceName
		first, taken := s.Accounts[service]
		switch {
		case !taken:
			s.Accounts[service] = AccountOf(sa, in.DefaultServiceAccount)
		case s.Account(sa.Namespace, service) != nil:
		default:
			claimants := s.Shared[service]
			if claimants == nil {
				claimants = []*Account{first}
			}
			s.Shared[service] = append(claimants, AccountOf(sa, in.DefaultServiceAccount))
		}
	}
	b.last = next
	return s
}

// properties resolves the Properties: those whose slot is the last build's (and
// whose ref target did not come or go) are the last build's. It notes which
// changed, those gone included.
func (bd *build) properties(in []metav1alpha1.Property, first bool) {
	last, s := bd.last, bd.s
	// A first build makes its Properties and their definitions together, from
	// chunks: they are all new. (A chunk stays in memory while one of its
	// Properties is in use: at most one full build's.)
	var fresh []definedProperty
	kept := 0 // names of the last build that are among the inputs
	for i := range in {
		p := &in[i]
		name := p.Name
		out, seen := last.properties[name]
		if seen {
			if _, dup := s.Properties[name]; !dup {
				kept++
			}
		}
		if !first && (!seen || !slotIs(p, &out.Slot)) {
			bd.changedProperties[name] = true
		}
		if !seen || bd.changedProperties[name] || (p.Spec.Range == metav1alpha1.RangeRef && bd.changedClasses[p.Spec.Target]) {
			var dp *definedProperty
			if first {
				dp = next(&fresh)
			} else {
				dp = new(definedProperty)
			}
			// Written in place (the memory is zero): no copy of a Property.
			define(&dp.definition, p)
			out = &dp.Property
			out.Name, out.Slot.Definition, out.Problem = name, &dp.definition, ValidateProperty(p, bd.l)
		}
		s.Properties[name] = out
	}
	if kept != len(last.properties) {
		for name := range last.properties {
			if _, ok := s.Properties[name]; !ok {
				bd.changedProperties[name] = true
			}
		}
	}
}

// definedProperty is a Property and its definition, made together.
type definedProperty struct {
	Property
	definition Definition
}

// class resolves a class, its only parent first, unless the last build's
// resolution of it still holds.
func (bd *build) class(c *metav1alpha1.Class) *classMemo {
	name := c.Name
	if m, ok := bd.next.classes[name]; ok {
		return m
	}
	// A class with one parent starts from its parent's resolution, so parents are
	// resolved first; inProgress stops the walk up at a cycle (whose classes then
	// resolve alone, and report it).
	var parent *Class
	if ps := c.Spec.Parents; len(ps) == 1 && ps[0] != name && !slices.Contains(bd.inProgress, ps[0]) {
		if pc := bd.l.classes[ps[0]]; pc != nil {
			bd.inProgress = append(bd.inProgress, name)
			if pm := bd.class(pc); pm.out.Problem == nil {
				parent = pm.out
			}
			bd.inProgress = bd.inProgress[:len(bd.inProgress)-1]
		}
	}
	m, ok := bd.last.classes[name]
	if !ok || bd.changedClasses[name] || m.parent != parent || (!bd.unchanged && m.dependsOn(bd.changedClasses, bd.changedProperties)) {
		m = resolve(c, &bd.rec, parent)
	}
	bd.s.Classes[name] = m.out
	bd.next.classes[name] = m
	return m
}

// changed are the names of objects that differ from the last build's: new, gone,
// of another resourceVersion, or without one.
func changed[T metav1.Object, M any](now map[string]T, last map[string]M, version func(M) string) map[string]bool {
	out := map[string]bool{}
	for name, o := range now {
		if m, ok := last[name]; !ok || version(m) != o.GetResourceVersion() || o.GetResourceVersion() == "" {
			out[name] = true
		}
	}
	if len(now)-len(out) != len(last) {
		for name := range last {
			if _, ok := now[name]; !ok {
				out[name] = true
			}
		}
	}
	return out
}

// dependsOn says whether a class's resolution read one of the changed objects.
func (m *classMemo) dependsOn(classes, properties map[string]bool) bool {
	for _, n := range m.classes {
		if classes[n] {
			return true
		}
	}
	for _, n := range m.properties {
		if properties[n] {
			return true
		}
	}
	return false
}

// resolve resolves one class of a build with r, from its only parent's resolution
// when that is given, and notes what it read.
func resolve(c *metav1alpha1.Class, r *recorder, parent *Class) *classMemo {
	l := r.mapLookup
	r.classes, r.properties = r.classes[:0], r.properties[:0]
	var rc *Class
	if parent != nil {
		rc = resolveClass(c, r, parent)
	} else {
		rc = ResolveClass(c, r)
	}
	rc.Ready = meta.IsStatusConditionTrue(c.Status.Conditions, metav1alpha1.ConditionReady)
	if api := c.Status.InstanceAPI; api != nil && !c.Spec.Abstract {
		// The names derive from the spec; status only says whether the API is
		// served. Whoever may write classes/status cannot point the class's
		// instances at another API.
		plural := rc.InstanceAPIOptions.Plural
		if plural == "" {
			plural = Plural(rc.Kind)
		}
		api := l.instanceAPI()
		api.Group, api.Version, api.Kind, api.Plural = l.group(rc.Prefix), InstanceVersion, rc.Kind, plural
		api.Established = meta.IsStatusConditionTrue(c.Status.Conditions, metav1alpha1.ConditionInstanceAPIEstablished)
		rc.InstanceAPI = api
	}
	m := l.memo()
	m.resourceVersion, m.out, m.parent, m.classes, m.properties = c.ResourceVersion, rc, parent, l.clone(r.classes), l.clone(r.properties)
	return m
}

// AccountOf is the public part of a ServiceAccount; an account that names no
// Kubernetes ServiceAccount acts as defaultServiceAccount.
func AccountOf(sa *metav1alpha1.ServiceAccount, defaultServiceAccount string) *Account {
	kubeSA := sa.Spec.ServiceAccountName
	if kubeSA == "" {
		kubeSA = defaultServiceAccount
	}
	ready := meta.IsStatusConditionTrue(sa.Status.Conditions, metav1alpha1.ConditionReady)
	a := &Account{
		KubeServiceAccount: kubeSA,
		Namespace:          sa.Namespace,
		Name:               sa.Name,
		ServiceName:        sa.Spec.ServiceName,
		PrincipalName:      sa.Spec.PrincipalName,
		Active:             sa.Spec.Active == nil || *sa.Spec.Active,
		Ready:              ready,
		Unchecked:          !ready && sa.Status.ObservedGeneration < sa.Generation,
		Permissions:        sa.Spec.Permissions,
		Clients:            sa.Spec.Clients,
		Toolsets:           sa.Spec.Toolsets,
		NoConfirm:          sa.Spec.Confirm != nil && !*sa.Spec.Confirm,
	}
	if sa.Spec.MaxTools != nil {
		a.MaxTools = int(*sa.Spec.MaxTools)
	}
	return a
}

// Older orders objects that claim the same name: the one created first keeps it, ties
// broken by namespace and name so that every replica decides alike.
func Older(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	if a.GetNamespace() != b.GetNamespace() {
		return a.GetNamespace() < b.GetNamespace()
	}
	return a.GetName() < b.GetName()
}
