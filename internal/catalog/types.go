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
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Problem is something wrong with an object of the metamodel, in the words of a
// condition: a CamelCase reason and a message a person can act on.
type Problem struct {
	Reason  string
	Message string
}

// Definition is what a Property defines of the slots that use it. Every slot of a
// Property in a snapshot points to the Property's one: never modify a Definition
// that a snapshot holds, and give a slot a Definition of its own (a copy) before
// changing one of these fields of it.
type Definition struct {
	Property    string
	Field       string
	Range       metav1alpha1.PropertyRange
	Cardinality metav1alpha1.Cardinality
	Description string
	Target      string
	Enum        []string
	Minimum     *float64
	Maximum     *float64
	Pattern     string
	MaxLength   *int64
}

// Slot is one effective slot of a Class: the Property's definition plus whether the
// class requires it and which class declares it. The definition's fields read as
// the slot's own (s.Field); a slot without one (the zero Slot) has none to read.
type Slot struct {
	*Definition
	Required bool
	From     string
}

// Many reports whether the slot holds a list of values.
func (s Slot) Many() bool {
	return s.Definition != nil && s.Cardinality == metav1alpha1.CardinalityMany
}

// Own is the slot with a copy of its definition, which it may change without
// changing any other slot's.
func (s Slot) Own() Slot {
	if s.Definition != nil {
		d := *s.Definition
		s.Definition = &d
	}
	return s
}

// InstanceAPI is where the instances of a concrete Class are served.
type InstanceAPI struct {
	Group   string
	Version string
	Kind    string
	Plural  string
	// Established is true once the generated CRD is served.
	Established bool
}

// Class is a resolved Class.
type Class struct {
	Name        string
	Prefix      string
	Kind        string
	Description string
	Abstract    bool
	Parents     []string
	// Ancestors are every class this one inherits from, in inheritance order (roots first).
	Ancestors []string
	// Slots are the effective slots, in inheritance order (roots first). Classes
	// share them: a class's list holds the very slots of its parent that it
	// inherits unchanged, and siblings share those of their parent. Never modify a
	// slot of a class in a published snapshot; an append to a list copies it.
	Slots []*Slot
	// Required are the fields of the required slots.
	Required []string
	// Problem is set when the class could not be resolved.
	Problem *Problem
	// InstanceAPI is set for concrete classes whose generated CRD has been applied.
	InstanceAPI *InstanceAPI
	// InstanceAPIOptions are the class's wishes for its generated CRD.
	InstanceAPIOptions metav1alpha1.InstanceAPISpec
	// Codec is how instances read as text.
	Codec metav1alpha1.CodecSpec
	// Ready mirrors the Class's Ready condition.
	Ready bool
}

// Ident is the class's name in the seeds' notation, "zorp/SpaceBoot".
func (c *Class) Ident() string { return c.Prefix + "/" + c.Kind }

// Servable reports whether a class can take instances now: concrete, Ready
// (resolved, no name conflict) and with its instance API served.
func (c *Class) Servable() bool {
	return !c.Abstract && c.Ready && c.Problem == nil && c.InstanceAPI != nil && c.InstanceAPI.Established
}

// GVK is the group, version and kind of a class's instances; only for classes with
// an instance API.
func (c *Class) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: c.InstanceAPI.Group, Version: c.InstanceAPI.Version, Kind: c.InstanceAPI.Kind}
}

// Slot returns the effective slot with the given field.
func (c *Class) Slot(field string) (Slot, bool) {
	for _, s := range c.Slots {
		if s.Field == field {
			return *s, true
		}
	}
	// A slot with an empty definition: its fields read as none.
	return Slot{Definition: new(Definition)}, false
}

// Property is a Property as the catalog knows it.
type Property struct {
	Name    string
	Slot    Slot
	Problem *Problem
}

// Workflow is a validated WorkflowDefinition.
type Workflow struct {
	Name            string
	Spec            metav1alpha1.WorkflowDefinitionSpec
	TerminalStates  []string
	CancellableFrom []string
	Problem         *Problem
}

// Account is the public part of a ServiceAccount: never its key or the key's hash.
type Account struct {
	Namespace     string
	Name          string
	ServiceName   string
	PrincipalName string
	Active        bool
	Ready         bool
	// Unchecked: the account is not Ready because the leader has not checked it
	// since it was created or its spec changed (its status speaks for an older
	// generation, or for none), not because something is wrong with it.
	Unchecked   bool
	Permissions metav1alpha1.Permissions
	// KubeServiceAccount is the Kubernetes ServiceAccount in Namespace the account acts
	// as (its own or the manager's default); empty: none.
	KubeServiceAccount string
	// User and Groups are the Kubernetes identity of an account made from an access
	// token of a trusted OAuth issuer (no ServiceAccount object): the account acts as
	// this user and these groups. Empty for ServiceAccounts.
	User   string
	Groups []string
	// Clients are the MCP clients it declares, MaxTools the most tools it is served
	// (0: as its clients take).
	Clients  []string
	MaxTools int
	// Toolsets are the groups of verbs tools/list shows it (empty: core).
	Toolsets []string
	// NoConfirm: calls that cannot be undone run without asking the user first
	// (spec.confirm: false).
	NoConfirm bool
	// TasksNamespace is where the account's processes live; empty: Namespace. A
	// person's live apart from any namespace people work in.
	TasksNamespace string
}

// Home is the namespace of the account's processes.
func (a *Account) Home() string {
	if a.TasksNamespace != "" {
		return a.TasksNamespace
	}
	return a.Namespace
}

// Snapshot is one immutable version of the catalog. Never modify a snapshot that has
// been published.
type Snapshot struct {
	// Version grows by one with every published change.
	Version    uint64
	Classes    map[string]*Class
	Properties map[string]*Property
	Workflows  map[string]*Workflow
	// Accounts are keyed by service name: of a name that accounts of several
	// namespaces use, the oldest's.
	Accounts map[string]*Account
	// Shared are, for each service name that accounts of several namespaces use,
	// those accounts, oldest first: one a namespace (in a namespace, the oldest keeps
	// the name). A service name is unique in a namespace only.
	Shared map[string][]*Account
}

// MaxClaimants is the most accounts a token that names a service name without a
// namespace is checked against: the oldest that use the name.
const MaxClaimants = 4

// Account is the account of namespace that uses service name service, or nil.
func (s *Snapshot) Account(namespace, service string) *Account {
	if a := s.Accounts[service]; a != nil && a.Namespace == namespace {
		return a
	}
	for _, a := range s.Shared[service] {
		if a.Namespace == namespace {
			return a
		}
	}
	return nil
}

// AccountNamed is the account of the ServiceAccount namespace/name, or nil.
func (s *Snapshot) AccountNamed(namespace, name string) *Account {
	for _, a := range s.Accounts {
		if a.Namespace == namespace && a.Name == name {
			return a
		}
	}
	for _, claimants := range s.Shared {
		for _, a := range claimants {
			if a.Namespace == namespace && a.Name == name {
				return a
			}
		}
	}
	return nil
}

// UncheckedAccounts reports whether an account of the snapshot is not checked yet
// (Account.Unchecked).
func (s *Snapshot) UncheckedAccounts() bool {
	for _, a := range s.Accounts {
		if a.Unchecked {
			return true
		}
	}
	for _, claimants := range s.Shared {
		for _, a := range claimants {
			if a.Unchecked {
				return true
			}
		}
	}
	return false
}

// ClassNames returns the names of all classes, sorted.
func (s *Snapshot) ClassNames() []string { return sortedKeys(s.Classes) }

// WorkflowNames returns the names of all workflows, sorted.
func (s *Snapshot) WorkflowNames() []string { return sortedKeys(s.Workflows) }

// FindClass finds a class by its name ("zorp.spaceboot"), its ident ("zorp/SpaceBoot"
// or ":zorp/SpaceBoot"), or its kind alone when only one class has it.
func (s *Snapshot) FindClass(ref string) *Class {
	if c, ok := s.Classes[ref]; ok {
		return c
	}
	ref = strings.TrimPrefix(ref, ":")
	var byKind []*Class
	for _, name := range s.ClassNames() {
		c := s.Classes[name]
		if c.Ident() == ref {
			return c
		}
		if strings.EqualFold(c.Kind, ref) {
			byKind = append(byKind, c)
		}
	}
	if len(byKind) == 1 {
		return byKind[0]
	}
	return nil
}

// Subclasses returns the names of the classes that have name among their ancestors,
// sorted: the classes a query for "all <name>" spans besides name itself.
func (s *Snapshot) Subclasses(name string) []string {
	var out []string
	for n, c := range s.Classes {
		for _, a := range c.Ancestors {
			if a == name {
				out = append(out, n)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
