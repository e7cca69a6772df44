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

package verbs

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
)

// The views: how classes, slots, properties, workflows, instances and processes
// look in tool results and resources.

// ClassView is everything about one class.
func ClassView(snap *catalog.Snapshot, cl *catalog.Class) map[string]any {
	v := map[string]any{
		"class":       cl.Ident(),
		"name":        cl.Name,
		"description": cl.Description,
		"abstract":    cl.Abstract,
		"parents":     idents(snap, cl.Parents),
		"ancestors":   idents(snap, cl.Ancestors),
		"subclasses":  idents(snap, snap.Subclasses(cl.Name)),
		"slots":       slotViews(cl.Slots),
		"required":    nonNil(cl.Required),
		"ready":       cl.Ready,
		"codec":       map[string]any{"format": cl.Codec.Format, "sections": nonNil(cl.Codec.Sections)},
	}
	if cl.Problem != nil {
		v["problem"] = cl.Problem.Message
	}
	if api := cl.InstanceAPI; api != nil {
		v["kubernetes"] = map[string]any{"apiVersion": api.Group + "/" + api.Version, "kind": api.Kind, "resource": api.Plural}
	}
	if cl.Abstract {
		v["concreteSubclasses"] = concreteSubclasses(snap, cl)
	}
	return v
}

func slotViews(slots []*catalog.Slot) []map[string]any {
	out := []map[string]any{}
	for _, s := range slots {
		out = append(out, slotView(*s))
	}
	return out
}

func slotView(s catalog.Slot) map[string]any {
	v := map[string]any{
		"field":       s.Field,
		"property":    s.Property,
		"range":       s.Range,
		"cardinality": s.Cardinality,
		"required":    s.Required,
		"schema":      SlotJSONSchema(s),
	}
	if s.From != "" {
		v["declaredBy"] = s.From
	}
	if s.Description != "" {
		v["description"] = s.Description
	}
	if s.Target != "" {
		v["target"] = s.Target
	}
	return v
}

// PropertyView is a Property: its slot definition and any problem with it.
func PropertyView(p *catalog.Property) map[string]any {
	v := slotView(p.Slot)
	delete(v, "required")
	if p.Problem != nil {
		v["problem"] = p.Problem.Message
	}
	return v
}

func propertyViews(snap *catalog.Snapshot) []map[string]any {
	names := make([]string, 0, len(snap.Properties))
	for n := range snap.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []map[string]any{}
	for _, n := range names {
		out = append(out, PropertyView(snap.Properties[n]))
	}
	return out
}

// WorkflowView is a workflow definition.
func WorkflowView(w *catalog.Workflow) map[string]any {
	v := map[string]any{
		"name":            w.Name,
		"description":     w.Spec.Description,
		"initial":         w.Spec.Initial,
		"states":          w.Spec.States,
		"transitions":     w.Spec.Transitions,
		"terminalStates":  nonNil(w.TerminalStates),
		"cancellableFrom": nonNil(w.CancellableFrom),
	}
	if w.Spec.SubjectClass != "" {
		v["subjectClass"] = w.Spec.SubjectClass
	}
	if w.Problem != nil {
		v["problem"] = w.Problem.Message
	}
	return v
}

// EntityView is an instance: its class, name, namespace, attributes and version.
func EntityView(cl *catalog.Class, u *unstructured.Unstructured) map[string]any {
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	v := map[string]any{
		"class":           cl.Ident(),
		"name":            u.GetName(),
		"namespace":       u.GetNamespace(),
		"attributes":      spec,
		"resourceVersion": u.GetResourceVersion(),
		"kubernetes":      map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()},
	}
	if l := u.GetLabels(); len(l) > 0 {
		v["labels"] = l
	}
	if t := u.GetCreationTimestamp(); !t.IsZero() {
		v["createdAt"] = t.UTC().Format("2006-01-02T15:04:05Z")
	}
	return v
}

// taskView is a process as the task tools show it.
func taskView(p *metav1alpha1.WorkflowProcess) map[string]any {
	v := map[string]any{"task": process.TaskOf(p), "workflow": p.Spec.Definition, "state": p.Status.State}
	if pr := p.Status.Progress; pr != nil {
		v["progress"] = pr
	}
	return v
}

// stateView is a process with the transitions it can take from its state.
func stateView(p *metav1alpha1.WorkflowProcess, w *catalog.Workflow) map[string]any {
	v := taskView(p)
	next := []string{}
	if w != nil && process.Status(p) == process.Working {
		for _, t := range w.Spec.Transitions {
			for _, f := range t.From {
				if f == p.Status.State {
					next = append(next, t.Name)
				}
			}
		}
	}
	v["transitions"] = next
	if p.Status.Cancellation != nil {
		v["cancellation"] = p.Status.Cancellation
	}
	return v
}
