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
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// The views: how classes, slots, properties, workflows, instances and processes
// look in tool results and resources. Each is a Go type, from which the output
// schema of the tools that answer it is generated (tool.OutputSchema).

// Class is everything about one class.
type Class struct {
	Class              string     `json:"class"`
	Name               string     `json:"name"`
	Description        string     `json:"description"`
	Abstract           bool       `json:"abstract"`
	Parents            []string   `json:"parents"`
	Ancestors          []string   `json:"ancestors"`
	Subclasses         []string   `json:"subclasses"`
	Slots              []Slot     `json:"slots"`
	Required           []string   `json:"required"`
	Ready              bool       `json:"ready"`
	Codec              ClassCodec `json:"codec"`
	Problem            string     `json:"problem,omitempty"`
	Kubernetes         *ClassAPI  `json:"kubernetes,omitempty"`
	ConcreteSubclasses []string   `json:"concreteSubclasses,omitempty"`
}

// ClassCodec is the text format of a class's instances.
type ClassCodec struct {
	Format   metav1alpha1.CodecFormat `json:"format"`
	Sections []string                 `json:"sections"`
}

// ClassAPI is the Kubernetes API of a class's instances.
type ClassAPI struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Resource   string `json:"resource"`
}

// ClassView is everything about one class.
func ClassView(snap *catalog.Snapshot, cl *catalog.Class) Class {
	v := Class{
		Class:       cl.Ident(),
		Name:        cl.Name,
		Description: cl.Description,
		Abstract:    cl.Abstract,
		Parents:     idents(snap, cl.Parents),
		Ancestors:   idents(snap, cl.Ancestors),
		Subclasses:  idents(snap, snap.Subclasses(cl.Name)),
		Slots:       slotViews(cl.Slots),
		Required:    nonNil(cl.Required),
		Ready:       cl.Ready,
		Codec:       ClassCodec{Format: cl.Codec.Format, Sections: nonNil(cl.Codec.Sections)},
		Problem:     problemText(cl.Problem),
	}
	if api := cl.InstanceAPI; api != nil {
		v.Kubernetes = &ClassAPI{APIVersion: api.Group + "/" + api.Version, Kind: api.Kind, Resource: api.Plural}
	}
	if cl.Abstract {
		v.ConcreteSubclasses = concreteSubclasses(snap, cl)
	}
	return v
}

// SlotDef is a slot's definition: what its Property says.
type SlotDef struct {
	Field       string                     `json:"field"`
	Property    string                     `json:"property"`
	Range       metav1alpha1.PropertyRange `json:"range"`
	Cardinality metav1alpha1.Cardinality   `json:"cardinality"`
	// Schema is the JSON Schema of the slot's values in tool arguments.
	Schema      map[string]any `json:"schema"`
	DeclaredBy  string         `json:"declaredBy,omitempty"`
	Description string         `json:"description,omitempty"`
	Target      string         `json:"target,omitempty"`
}

// Slot is a slot of a class: its definition and whether it is required.
type Slot struct {
	SlotDef
	Required bool `json:"required"`
}

func slotViews(slots []*catalog.Slot) []Slot {
	out := []Slot{}
	for _, s := range slots {
		out = append(out, Slot{SlotDef: slotDef(*s), Required: s.Required})
	}
	return out
}

func slotDef(s catalog.Slot) SlotDef {
	return SlotDef{Field: s.Field, Property: s.Property, Range: s.Range, Cardinality: s.Cardinality,
		Schema: catalog.SlotJSONSchema(s), DeclaredBy: s.From, Description: s.Description, Target: s.Target}
}

// Property is a Property: its slot definition and any problem with it.
type Property struct {
	SlotDef
	Problem string `json:"problem,omitempty"`
}

// PropertyView is a Property: its slot definition and any problem with it.
func PropertyView(p *catalog.Property) Property {
	return Property{SlotDef: slotDef(p.Slot), Problem: problemText(p.Problem)}
}

// problemText is what a view says of a problem: its message, "" for none.
func problemText(p *catalog.Problem) string {
	if p == nil {
		return ""
	}
	return p.Message
}

func propertyViews(snap *catalog.Snapshot) []Property {
	out := []Property{}
	for _, n := range propertyNames(snap) {
		out = append(out, PropertyView(snap.Properties[n]))
	}
	return out
}

// Workflow is a workflow definition.
type Workflow struct {
	Name            string                            `json:"name"`
	Description     string                            `json:"description"`
	Initial         string                            `json:"initial"`
	States          []metav1alpha1.WorkflowState      `json:"states"`
	Transitions     []metav1alpha1.WorkflowTransition `json:"transitions"`
	TerminalStates  []string                          `json:"terminalStates"`
	CancellableFrom []string                          `json:"cancellableFrom"`
	SubjectClass    string                            `json:"subjectClass,omitempty"`
	Problem         string                            `json:"problem,omitempty"`
}

// WorkflowView is a workflow definition.
func WorkflowView(w *catalog.Workflow) Workflow {
	return Workflow{
		Name:            w.Name,
		Description:     w.Spec.Description,
		Initial:         w.Spec.Initial,
		States:          nonNil(w.Spec.States),
		Transitions:     nonNil(w.Spec.Transitions),
		TerminalStates:  nonNil(w.TerminalStates),
		CancellableFrom: nonNil(w.CancellableFrom),
		SubjectClass:    w.Spec.SubjectClass,
		Problem:         problemText(w.Problem),
	}
}

// Entity is an instance: its class, name, namespace, attributes and version.
type Entity struct {
	Class     string `json:"class"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Attributes are the slot values; absent when Source holds the instance.
	Attributes      map[string]any    `json:"attributes,omitzero"`
	Source          string            `json:"source,omitempty"`
	ResourceVersion string            `json:"resourceVersion"`
	Kubernetes      EntityAPI         `json:"kubernetes"`
	Labels          map[string]string `json:"labels,omitempty"`
	CreatedAt       string            `json:"createdAt,omitempty"`
	Note            string            `json:"note,omitempty"`
}

// EntityAPI is the Kubernetes type of an instance.
type EntityAPI struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// EntityView is an instance: its class, name, namespace, attributes and version.
func EntityView(cl *catalog.Class, u *unstructured.Unstructured) Entity {
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	v := Entity{
		Class:           cl.Ident(),
		Name:            u.GetName(),
		Namespace:       u.GetNamespace(),
		Attributes:      spec,
		ResourceVersion: u.GetResourceVersion(),
		Kubernetes:      EntityAPI{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
	}
	if l := u.GetLabels(); len(l) > 0 {
		v.Labels = l
	}
	if t := u.GetCreationTimestamp(); !t.IsZero() {
		v.CreatedAt = t.UTC().Format("2006-01-02T15:04:05Z")
	}
	return v
}

// TaskView is a process as the task tools show it.
type TaskView struct {
	Task     process.Task           `json:"task"`
	Workflow string                 `json:"workflow"`
	State    string                 `json:"state"`
	Progress *metav1alpha1.Progress `json:"progress,omitempty"`
}

// taskView is a process as the task tools show it.
func taskView(p *metav1alpha1.WorkflowProcess) TaskView {
	return TaskView{Task: process.TaskOf(p), Workflow: p.Spec.Definition, State: p.Status.State, Progress: p.Status.Progress}
}

// ProcessState is a process with the transitions it can take from its state.
type ProcessState struct {
	TaskView
	Transitions  []string                         `json:"transitions"`
	Cancellation *metav1alpha1.CancellationStatus `json:"cancellation,omitempty"`
	// Next are the calls that follow it.
	Next []tool.Next `json:"next"`
}

// stateView is a process with the transitions it can take from its state, and the
// calls that follow it.
func stateView(c *tool.Call, p *metav1alpha1.WorkflowProcess, w *catalog.Workflow) ProcessState {
	next := []string{}
	for _, t := range moves(p, w) {
		next = append(next, t.Name)
	}
	return ProcessState{TaskView: taskView(p), Transitions: next, Cancellation: p.Status.Cancellation, Next: processNext(c, p, w)}
}

// moves are the transitions a process can take from its state (from the initial
// state, for a process the controller has not started yet).
func moves(p *metav1alpha1.WorkflowProcess, w *catalog.Workflow) []metav1alpha1.WorkflowTransition {
	if w == nil || process.Status(p) != process.Working {
		return nil
	}
	var out []metav1alpha1.WorkflowTransition
	for _, t := range w.Spec.Transitions {
		if slices.Contains(t.From, orDefault(p.Status.State, w.Spec.Initial)) {
			out = append(out, t)
		}
	}
	return out
}
