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
	"sort"
	"sync"

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
	classes    map[string]*metav1alpha1.Class
	properties map[string]*metav1alpha1.Property
	// resolved are the build's Properties, resolved before its classes: a Property
	// used by many classes is checked (and its pattern compiled) once per build.
	resolved map[string]*Property
	// patterns are the patterns compiled in this build: many Properties share one.
	patterns map[string]compiled
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

func (m mapLookup) Class(name string) (*metav1alpha1.Class, bool) {
	c, ok := m.classes[name]
	return c, ok
}

func (m mapLookup) Property(name string) (*metav1alpha1.Property, bool) {
	p, ok := m.properties[name]
	return p, ok
}

// Build resolves the whole metamodel into a snapshot (with Version 0; Store.Publish
// numbers it). A problem with one object stays with that object: the rest resolves.
// A class's instance API is named from its prefix and kind; whether it is served is
// read from the Class's status, which the Class reconciler keeps.
func Build(in Inputs) *Snapshot { return new(Builder).Build(in) }

// Builder builds snapshots one after another, as Build does, resolving again only
// what changed since its previous build: a Class or Property whose resourceVersion
// differs (or that is new, gone, or has none), and the classes whose resolution read
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
	classes    map[string]classMemo
	properties map[string]propertyMemo
}

type classMemo struct {
	resourceVersion string
	out             *Class
	// classes and properties are the names its resolution looked up, found or not.
	classes, properties []string
}

type propertyMemo struct {
	resourceVersion string
	out             *Property
}

// recorder is a lookup that notes the names looked up, for a class's memo.
type recorder struct {
	mapLookup
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

// Build builds the snapshot of in, reusing what the previous build resolved from
// the same objects.
func (b *Builder) Build(in Inputs) *Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	last, first := b.last, b.last == nil
	if first {
		last = &memo{}
	}
	next := &memo{
		classes:    make(map[string]classMemo, len(in.Classes)),
		properties: make(map[string]propertyMemo, len(in.Properties)),
	}
	s := &Snapshot{
		Classes:    make(map[string]*Class, len(in.Classes)),
		Properties: make(map[string]*Property, len(in.Properties)),
		Workflows:  make(map[string]*Workflow, len(in.Workflows)),
		Accounts:   make(map[string]*Account, len(in.ServiceAccounts)),
	}
	l := mapLookup{
		classes:    make(map[string]*metav1alpha1.Class, len(in.Classes)),
		properties: make(map[string]*metav1alpha1.Property, len(in.Properties)),
		resolved:   s.Properties,
		patterns:   map[string]compiled{},
	}
	for i := range in.Classes {
		l.classes[in.Classes[i].Name] = &in.Classes[i]
	}
	for i := range in.Properties {
		l.properties[in.Properties[i].Name] = &in.Properties[i]
	}
	// changed are the classes and properties that are new, gone or different since
	// the last build (none in a first build, which resolves everything).
	var changedClasses, changedProperties map[string]bool
	if !first {
		changedClasses = changed(l.classes, last.classes, func(m classMemo) string { return m.resourceVersion })
		changedProperties = changed(l.properties, last.properties, func(m propertyMemo) string { return m.resourceVersion })
	}

	for name, p := range l.properties {
		m, ok := last.properties[name]
		if !ok || changedProperties[name] || (p.Spec.Range == metav1alpha1.RangeRef && changedClasses[p.Spec.Target]) {
			m = propertyMemo{resourceVersion: p.ResourceVersion,
				out: &Property{Name: name, Slot: SlotOf(p), Problem: ValidateProperty(p, l)}}
		}
		s.Properties[name] = m.out
		next.properties[name] = m
	}
	unchanged := len(changedClasses) == 0 && len(changedProperties) == 0
	// A class with one parent starts from its parent's resolution, so parents are
	// resolved first; inProgress stops the walk up at a cycle (whose classes then
	// resolve alone, and report it).
	inProgress := map[string]bool{}
	var get func(name string) classMemo
	get = func(name string) classMemo {
		if m, ok := next.classes[name]; ok {
			return m
		}
		c := l.classes[name]
		m, ok := last.classes[name]
		if !ok || changedClasses[name] || (!unchanged && m.dependsOn(changedClasses, changedProperties)) {
			var parent *classMemo
			if ps := c.Spec.Parents; len(ps) == 1 && l.classes[ps[0]] != nil && !inProgress[ps[0]] && ps[0] != name {
				inProgress[name] = true
				if pm := get(ps[0]); pm.out.Problem == nil {
					parent = &pm
				}
				delete(inProgress, name)
			}
			m = resolve(c, l, parent)
		}
		s.Classes[name] = m.out
		next.classes[name] = m
		return m
	}
	for name := range l.classes {
		get(name)
	}
	for i := range in.Workflows {
		w := ValidateWorkflow(&in.Workflows[i], l)
		s.Workflows[w.Name] = w
	}
	// When two accounts claim one service name, the older keeps it, as the
	// ServiceAccount reconciler decides; the other is not in the catalog.
	accounts := make([]*metav1alpha1.ServiceAccount, len(in.ServiceAccounts))
	for i := range in.ServiceAccounts {
		accounts[i] = &in.ServiceAccounts[i]
	}
	sort.Slice(accounts, func(i, j int) bool { return Older(accounts[i], accounts[j]) })
	for _, sa := range accounts {
		if _, taken := s.Accounts[sa.Spec.ServiceName]; taken {
			continue
		}
		s.Accounts[sa.Spec.ServiceName] = AccountOf(sa, in.DefaultServiceAccount)
	}
	b.last = next
	return s
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
func (m classMemo) dependsOn(classes, properties map[string]bool) bool {
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

// resolve resolves one class of a build, from its only parent's resolution when
// that is given, and notes what it read (what the parent read, too).
func resolve(c *metav1alpha1.Class, l mapLookup, parent *classMemo) classMemo {
	r := &recorder{mapLookup: l, classes: make([]string, 0, 4), properties: make([]string, 0, 32)}
	var rc *Class
	if parent != nil {
		r.classes = append(append(r.classes, parent.out.Name), parent.classes...)
		r.properties = append(r.properties, parent.properties...)
		rc = resolveClass(c, r, parent.out)
	} else {
		rc = ResolveClass(c, r)
	}
	rc.Ready = meta.IsStatusConditionTrue(c.Status.Conditions, metav1alpha1.ConditionReady)
	if api := c.Status.InstanceAPI; api != nil && !c.Spec.Abstract {
		// The names derive from the spec; status only says whether the API is
		// served. Whoever may write classes/status cannot point the class's
		// instances at another API.
		n := NamesFor(rc)
		rc.InstanceAPI = &InstanceAPI{
			Group: n.Group, Version: n.Version, Kind: n.Kind, Plural: n.Plural,
			Established: meta.IsStatusConditionTrue(c.Status.Conditions, metav1alpha1.ConditionInstanceAPIEstablished),
		}
	}
	return classMemo{resourceVersion: c.ResourceVersion, out: rc, classes: r.classes, properties: r.properties}
}

// AccountOf is the public part of a ServiceAccount; an account that names no
// Kubernetes ServiceAccount acts as defaultServiceAccount.
func AccountOf(sa *metav1alpha1.ServiceAccount, defaultServiceAccount string) *Account {
	kubeSA := sa.Spec.ServiceAccountName
	if kubeSA == "" {
		kubeSA = defaultServiceAccount
	}
	a := &Account{
		KubeServiceAccount: kubeSA,
		Namespace:          sa.Namespace,
		Name:               sa.Name,
		ServiceName:        sa.Spec.ServiceName,
		PrincipalName:      sa.Spec.PrincipalName,
		Active:             sa.Spec.Active == nil || *sa.Spec.Active,
		Ready:              meta.IsStatusConditionTrue(sa.Status.Conditions, metav1alpha1.ConditionReady),
		Permissions:        sa.Spec.Permissions,
		Clients:            sa.Spec.Clients,
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
