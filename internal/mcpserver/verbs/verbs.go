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

// Package verbs holds what the MCP server's tools do, grouped by domain: the
// operational verbs (schema, class, types, property, codec, entity, workflow,
// validation, project and the task tools for clients without MCP Tasks), one create
// tool per concrete class, and the views they answer with. Each verb declares its
// arguments as a struct (see package tool); All lists every verb in one place.
package verbs

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/instances"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// Env is what the verbs work with.
type Env struct {
	// Identities give the client that acts as the caller's Kubernetes identity: every
	// read and write of an object goes through it, so RBAC decides.
	Identities *identity.Identities
	// Instances serves finds from the manager's informer cache, and is told of the
	// writes to instances; nil: every find lists through the API server.
	Instances *instances.Cache
	// Processes starts and follows WorkflowProcesses.
	Processes *process.Service
	// Style spells the tool names the verbs mention.
	Style tool.NameStyle
	// Metamodel reads Classes, Properties and generated CRDs as the manager sees them
	// (its cache), and Catalog is the catalog built from them: the define verbs
	// resolve against them and wait on them.
	Metamodel client.Reader
	Catalog   *catalog.Store
	// Served is the newest catalog version whose tools, resources and prompts the
	// server serves (listed and callable); nil: as soon as the catalog has it. A
	// define call answers once its class's tool is served, so the client can call it
	// at once.
	Served func() uint64
}

// as is the client that acts as the caller.
func (e *Env) as(c *tool.Call) (client.Client, error) { return e.Identities.Client(c.Account) }

// All is every operational verb, in the order tools/list shows them.
func (e *Env) All() []*tool.Def {
	all := slices.Concat(
		e.schemaVerbs(),
		e.classVerbs(),
		e.typesVerbs(),
		e.propertyVerbs(),
		e.codecVerbs(),
		e.entityVerbs(),
		e.discoveryVerbs(),
		e.taskVerbs(),
		e.validationVerbs(),
		e.projectVerbs(),
		e.workflowVerbs(),
	)
	for _, d := range all {
		switch core[d.Group+"."+d.Name] {
		case inCore:
			d.Core = true
		case inPlaceOfClasses:
			d.Core, d.InPlaceOfClasses = true, true
		}
	}
	return all
}

// How a verb is in the core toolset.
const (
	inCore = iota + 1
	// inPlaceOfClasses: listed only to accounts not served every per-class tool.
	inPlaceOfClasses
)

// core is the core toolset, the verbs an account that names no toolsets is listed
// beside its per-class tools: find, describe, update and delete instances, start,
// move and see processes, follow tasks; and, where the per-class tools are not all served,
// the generic create with the schema of a class's create arguments. Every client
// README lists takes it with the sample metamodel's per-class tools.
var core = map[string]int{
	"entity.find":            inCore,
	"entity.update":          inCore,
	"entity.delete":          inCore,
	"class.describe":         inCore,
	"workflow.start-process": inCore,
	"workflow.transition":    inCore,
	"workflow.process-state": inCore,
	"tasks.get":              inCore,
	"tasks.result":           inCore,
	"tasks.list":             inCore,
	"tasks.cancel":           inCore,
	"entity.create":          inPlaceOfClasses,
	"entity.schema":          inPlaceOfClasses,
}

// class resolves a class argument: a Class name ("zorp.spaceboot"), an ident
// ("zorp/SpaceBoot" or ":zorp/SpaceBoot") or a kind alone when only one class has it.
func class(c *tool.Call, ref string) (*catalog.Class, error) {
	if cl := c.Snap.FindClass(ref); cl != nil {
		return cl, nil
	}
	return nil, tool.Fail("unknown class %q; known classes: %s", ref, strings.Join(classIdents(c.Snap, false), ", "))
}

func classIdents(snap *catalog.Snapshot, concreteOnly bool) []string {
	var out []string
	for _, name := range snap.ClassNames() {
		cl := snap.Classes[name]
		if concreteOnly && !cl.Servable() {
			continue
		}
		out = append(out, cl.Ident())
	}
	sort.Strings(out)
	return out
}

// idents are the idents of the named classes.
func idents(snap *catalog.Snapshot, names []string) []string {
	out := []string{}
	for _, n := range names {
		if cl, ok := snap.Classes[n]; ok {
			out = append(out, cl.Ident())
		} else {
			out = append(out, n)
		}
	}
	return out
}

// concrete checks that a class can have instances, and says what to use instead.
func concrete(snap *catalog.Snapshot, cl *catalog.Class) error {
	if cl.Abstract {
		subs := concreteSubclasses(snap, cl)
		if len(subs) == 0 {
			return tool.Fail("cannot instantiate abstract class %s; it has no concrete subclasses", cl.Ident())
		}
		return tool.Fail("cannot instantiate abstract class %s; concrete subclasses: %s", cl.Ident(), strings.Join(subs, ", "))
	}
	if !cl.Servable() {
		msg := "it is not ready"
		if cl.Problem != nil {
			msg = cl.Problem.Message
		}
		return tool.Fail("class %s cannot take instances right now: %s", cl.Ident(), msg)
	}
	return nil
}

func concreteSubclasses(snap *catalog.Snapshot, cl *catalog.Class) []string {
	out := []string{}
	for _, n := range snap.Subclasses(cl.Name) {
		if sub := snap.Classes[n]; !sub.Abstract {
			out = append(out, sub.Ident())
		}
	}
	return out
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// --- catalog enums in input schemas ------------------------------------------------

// enum sets the allowed values of a string argument (at a path such as
// "entities.class" for the items of a list), when there are any.
func enum(path string, values func(*catalog.Snapshot) []string) tool.Enum {
	return tool.Enum{Path: path, Values: values}
}

// openWorkflows narrows the enum of a workflow argument to the workflows open to the
// account that lists the tool (catalog.Workflow.OpenTo).
func openWorkflows(path string) tool.AccountPatch {
	return func(s *jsonschema.Schema, snap *catalog.Snapshot, acct *catalog.Account) {
		if p := tool.Argument(s, path); p != nil {
			// A copy: a clone of a schema shares its enums' arrays with the original.
			p.Enum = slices.DeleteFunc(slices.Clone(p.Enum), func(v any) bool {
				name, _ := v.(string)
				w := snap.Workflows[name]
				return w == nil || !w.OpenTo(acct)
			})
		}
	}
}

// classes are the sorted idents of a snapshot's classes (with concreteOnly, those
// with a create tool): the enum of a class argument. Many verbs take it, for every
// snapshot a server plans; it is worked out once a snapshot, and shared (not to be
// changed).
func classes(concreteOnly bool) func(*catalog.Snapshot) []string {
	last := &lastIdents[0]
	if concreteOnly {
		last = &lastIdents[1]
	}
	return func(snap *catalog.Snapshot) []string {
		if l := last.Load(); l != nil && l.snap == snap {
			return l.idents
		}
		idents := classIdents(snap, concreteOnly)
		last.Store(&snapshotIdents{snap: snap, idents: idents})
		return idents
	}
}

// lastIdents are the idents classes(false) and classes(true) worked out last. Each
// holds its snapshot, so that no other snapshot has its address while it is kept.
var lastIdents [2]atomic.Pointer[snapshotIdents]

type snapshotIdents struct {
	snap   *catalog.Snapshot
	idents []string
}

func propertyNames(snap *catalog.Snapshot) []string { return slices.Sorted(maps.Keys(snap.Properties)) }

// userWorkflowNames are the workflows that sandbar_workflow_start-process starts: all
// but the built-in ones.
func userWorkflowNames(snap *catalog.Snapshot) []string {
	return slices.DeleteFunc(snap.WorkflowNames(), builtin.IsBuiltin)
}
