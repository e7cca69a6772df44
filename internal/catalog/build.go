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
	"sort"

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
	// problems caches ValidateProperty, so that a Property used by many classes is
	// checked (and its pattern compiled) once per build.
	problems map[string]*Problem
}

func (m mapLookup) propertyProblem(p *metav1alpha1.Property) *Problem {
	if m.problems == nil {
		return ValidateProperty(p, m)
	}
	if problem, ok := m.problems[p.Name]; ok {
		return problem
	}
	problem := ValidateProperty(p, m)
	m.problems[p.Name] = problem
	return problem
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
func Build(in Inputs) *Snapshot {
	l := mapLookup{
		classes:    make(map[string]*metav1alpha1.Class, len(in.Classes)),
		properties: make(map[string]*metav1alpha1.Property, len(in.Properties)),
		problems:   make(map[string]*Problem, len(in.Properties)),
	}
	for i := range in.Classes {
		l.classes[in.Classes[i].Name] = &in.Classes[i]
	}
	for i := range in.Properties {
		l.properties[in.Properties[i].Name] = &in.Properties[i]
	}
	s := &Snapshot{
		Classes:    make(map[string]*Class, len(in.Classes)),
		Properties: make(map[string]*Property, len(in.Properties)),
		Workflows:  make(map[string]*Workflow, len(in.Workflows)),
		Accounts:   make(map[string]*Account, len(in.ServiceAccounts)),
	}
	for name, p := range l.properties {
		s.Properties[name] = &Property{Name: name, Slot: SlotOf(p), Problem: l.propertyProblem(p)}
	}
	for name, c := range l.classes {
		rc := ResolveClass(c, l)
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
		s.Classes[name] = rc
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
	return s
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
