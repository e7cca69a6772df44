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

// Schema evolution over MCP: sandbar_schema_define-class and define-property write
// Class and Property objects as the account's Kubernetes identity (RBAC on the
// metamodel kinds decides), with the API server's validation, the reconcilers'
// conditions and the instance API's breaking-change guard, which is applied here
// before anything is written.

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// defineWait is how long a define call waits for the reconcilers' verdict on what it
// wrote (within the call's own deadline) before it answers that it is still
// reconciling.
const defineWait = 10 * time.Second

type defineClassArgs struct {
	Name string                 `json:"name" jsonschema:"The name of the Class object: lower case, dot-separated, as zorp.spaceboot."`
	Spec metav1alpha1.ClassSpec `json:"spec" jsonschema:"The Class: prefix, kind (UpperCamelCase), description?, abstract?, parents? (names of Classes), slots? ([{property: a Property's name, required?}]), instanceAPI? ({plural?, shortNames?, enabled?, allowBreakingChanges?}), codec?."`
	// DryRun validates and previews without writing.
	DryRun bool `json:"dryRun,omitempty" jsonschema:"true: validate it (the API server's rules, references, breaking changes) and preview the class's create tool, without writing anything."`
}

type definePropertyArgs struct {
	Name   string                    `json:"name" jsonschema:"The name of the Property object: lower case, dot-separated, as footwear.tentacle-count."`
	Spec   metav1alpha1.PropertySpec `json:"spec" jsonschema:"The Property: range (string, integer, number, boolean, date-time, keyword, uuid, uri, ref, json), field?, cardinality? (one or many), description?, target? (the Class a ref points to), enum?, minimum?, maximum?, pattern?, maxLength?."`
	DryRun bool                      `json:"dryRun,omitempty" jsonschema:"true: validate it (the API server's rules, references, breaking changes to the classes that use it) and preview its schema, without writing anything."`
}

// ClassDefinition is what a define-class call found and did: the class resolved,
// the breaking changes, and once written, the Class reconciler's verdict and the
// create tool the class is served.
type ClassDefinition struct {
	Class   string `json:"class"`
	Ident   string `json:"ident"`
	Created bool   `json:"created"`
	Definition
	Tool *ClassToolView `json:"tool,omitempty"`
}

// PropertyDefinition is what a define-property call found and did: the slot's
// field and the JSON Schema of its values, the breaking changes, and once
// written, the Property reconciler's verdict.
type PropertyDefinition struct {
	Property string         `json:"property"`
	Field    string         `json:"field"`
	Created  bool           `json:"created"`
	Schema   map[string]any `json:"schema"`
	Definition
}

// Definition is what the answers of both define verbs share.
type Definition struct {
	Problem *ProblemView `json:"problem,omitempty"`
	// BreakingChanges are the changes that stored instances may not survive, by class.
	BreakingChanges map[string][]string `json:"breakingChanges,omitempty"`
	DryRun          bool                `json:"dryRun,omitempty"`
	// Valid, in a dry run, says whether the change would be written.
	Valid      *bool          `json:"valid,omitempty"`
	Generation int64          `json:"generation,omitempty"`
	Ready      *ConditionView `json:"ready,omitempty"`
	// Pending says what to call once the object is still reconciling.
	Pending string `json:"pending,omitempty"`
}

// ClassToolView is a class's create tool, as tools/list shows it.
type ClassToolView struct {
	Name        string `json:"name"`
	InputSchema any    `json:"inputSchema" jsonschema:"A JSON Schema."`
}

// ProblemView is why an object is not ready.
type ProblemView struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ConditionView is a condition of an object's status.
type ConditionView struct {
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason"`
	Message string                 `json:"message"`
}

func (e *Env) defineVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "schema", Name: "define-class", Title: "Define a class", Destructive: true, Idempotent: true, Explicit: true, Waits: defineWait, Confirms: true,
			Description: "Create or change a Class of the metamodel: {name, spec: {prefix, kind, description?, abstract?, parents?, slots?: [{property, required?}], instanceAPI?}, dryRun?}. " +
				"A concrete class becomes an instance API and a create tool; the answer has its Ready condition and the tool's input schema. " +
				"A change that stored instances may not survive (a slot removed, retyped or newly required) is refused with the list, unless spec.instanceAPI.allowBreakingChanges. " +
				"dryRun: true validates and previews without writing. Only the account that created a Class may change it; the Properties come first (sandbar_schema_define-property)."},
			e.defineClass),
		tool.Verb(tool.Spec{Group: "schema", Name: "define-property", Title: "Define a property", Destructive: true, Idempotent: true, Explicit: true, Waits: defineWait, Confirms: true,
			Description: "Create or change a Property (a typed slot Classes use): {name, spec: {range, field?, cardinality?, description?, target?, enum?, minimum?, maximum?, pattern?, maxLength?}, dryRun?}. " +
				"The answer has its Ready condition and the JSON Schema of its values. A change that the instances of a class using it may not survive is refused with the list. " +
				"dryRun: true validates and previews without writing. Only the account that created a Property may change it, and only while no Class of another account (or an admin's) uses it."},
			e.defineProperty),
	}
}

// definer is who writes a definition: the account, as namespace/name.
func definer(c *tool.Call) string { return c.Account.Namespace + "/" + c.Account.Name }

// mayRedefine refuses to change an object that another account, or an admin, made.
func mayRedefine(kind, name string, obj client.Object, me string) error {
	owner := obj.GetAnnotations()[metav1alpha1.AnnotationDefinedBy]
	switch owner {
	case me:
		return nil
	case "":
		return tool.Fail("forbidden: the %s %s was not defined through MCP (an admin made it with kubectl or Helm), so no account may change it here; "+
			"choose another name, or ask a cluster admin to change it", kind, name)
	}
	return tool.Fail("forbidden: the %s %s was defined by the account %s, and only that account may change it; "+
		"choose another name, or ask the owner (or a cluster admin) to change it", kind, name, owner)
}

// othersShown is how many classes of other owners a refusal names.
const othersShown = 10

// mayReshape refuses to change a Property that a Class of another owner (another
// account, or an admin) uses: the change would rewrite that class's create tool and
// instance API, which only its owner may change. Ownership of the Property alone
// guards it from other accounts, not the classes that use it from its author.
func mayReshape(name string, mm metamodel, me string) error {
	others := otherOwners(mm, mm.classesUsing(name), me)
	if len(others) == 0 {
		return nil
	}
	return tool.Fail("forbidden: the Property %s is used by classes of other owners: %s; a change to it would change their create tools and instance APIs, "+
		"which only their owners may change. Nothing was written. Define a new Property for your own classes and use it in place of this one, "+
		"or ask those owners (or a cluster admin) to change it", name, strings.Join(others, ", "))
}

// mayReshapeClass refuses to change a Class that a Class of another owner inherits
// from, for the reason mayReshape refuses a shared Property: the subclass's slots,
// create tool and instance API would change with it.
func mayReshapeClass(name string, mm metamodel, me string) error {
	others := otherOwners(mm, mm.subclassesOf(name), me)
	if len(others) == 0 {
		return nil
	}
	return tool.Fail("forbidden: the Class %s is inherited by classes of other owners: %s; a change to it would change their create tools and instance APIs, "+
		"which only their owners may change. Nothing was written. Define a new Class for your own subclasses to inherit from, "+
		"or ask those owners (or a cluster admin) to change it", name, strings.Join(others, ", "))
}

// otherOwners names the classes of names that another owner than me made, with
// their owners, at most othersShown and how many more.
func otherOwners(mm metamodel, names []string, me string) []string {
	var others []string
	n := 0
	for _, cl := range names {
		owner := mm.classes[cl].GetAnnotations()[metav1alpha1.AnnotationDefinedBy]
		if owner == me {
			continue
		}
		if n++; n > othersShown {
			continue
		}
		if owner == "" {
			others = append(others, cl+" (made by an admin with kubectl or Helm)")
		} else {
			others = append(others, cl+" (the account "+owner+")")
		}
	}
	if n > othersShown {
		others = append(others, fmt.Sprintf("and %d more", n-othersShown))
	}
	return others
}

// write creates obj, or updates it when it exists, as the account: with dryRun the
// API server validates it (schema, rules, admission) and stores nothing.
func write(ctx context.Context, kc client.Client, kind string, obj client.Object, exists, dryRun bool) error {
	var opts []client.CreateOption
	var uopts []client.UpdateOption
	if dryRun {
		opts, uopts = append(opts, client.DryRunAll), append(uopts, client.DryRunAll)
	}
	var err error
	if exists {
		err = kc.Update(ctx, obj, uopts...)
	} else {
		err = kc.Create(ctx, obj, opts...)
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return tool.Fail("the API server refused the %s %s: %s; nothing was written", kind, obj.GetName(), apiMessage(err))
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return tool.Fail("conflict: the %s %s changed while this call ran; nothing was written, call again", kind, obj.GetName())
	}
	return err
}

// metamodel is the Classes and Properties as the manager sees them (its cache), with
// the object a call would write in place of its stored version.
type metamodel struct {
	classes    map[string]*metav1alpha1.Class
	properties map[string]*metav1alpha1.Property
}

func (m metamodel) Class(name string) (*metav1alpha1.Class, bool) {
	c, ok := m.classes[name]
	return c, ok
}

func (m metamodel) Property(name string) (*metav1alpha1.Property, bool) {
	p, ok := m.properties[name]
	return p, ok
}

// classesUsing is the names of the classes that have the property as a slot, of
// their own or inherited from an ancestor, sorted.
func (m metamodel) classesUsing(property string) []string {
	var next []string
	for name, cl := range m.classes {
		for _, s := range cl.Spec.Slots {
			if s.Property == property {
				next = append(next, name)
				break
			}
		}
	}
	return m.withDescendants(next)
}

// subclassesOf is the names of the classes that inherit from a class, directly or
// not, sorted (the class itself only through a cycle).
func (m metamodel) subclassesOf(class string) []string {
	var next []string
	for name, cl := range m.classes {
		if slices.Contains(cl.Spec.Parents, class) {
			next = append(next, name)
		}
	}
	return m.withDescendants(next)
}

// withDescendants is the classes named and every class that inherits from one of
// them, sorted.
func (m metamodel) withDescendants(next []string) []string {
	children := map[string][]string{}
	for name, cl := range m.classes {
		for _, p := range cl.Spec.Parents {
			children[p] = append(children[p], name)
		}
	}
	seen := map[string]bool{}
	for len(next) > 0 {
		name := next[len(next)-1]
		next = next[:len(next)-1]
		if !seen[name] {
			seen[name] = true
			next = append(next, children[name]...)
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func (e *Env) metamodel(ctx context.Context) (metamodel, error) {
	var cls metav1alpha1.ClassList
	var props metav1alpha1.PropertyList
	if err := e.Metamodel.List(ctx, &cls); err != nil {
		return metamodel{}, err
	}
	if err := e.Metamodel.List(ctx, &props); err != nil {
		return metamodel{}, err
	}
	m := metamodel{classes: map[string]*metav1alpha1.Class{}, properties: map[string]*metav1alpha1.Property{}}
	for i := range cls.Items {
		m.classes[cls.Items[i].Name] = &cls.Items[i]
	}
	for i := range props.Items {
		m.properties[props.Items[i].Name] = &props.Items[i]
	}
	return m, nil
}

// breakingChanges is what the instance API guard would refuse of a class resolved
// anew: the changes from the schema of its generated CRD, as stored, that stored
// instances may not survive. None when the class has no generated CRD yet.
func (e *Env) breakingChanges(ctx context.Context, cl *metav1alpha1.Class, resolved *catalog.Class) ([]string, error) {
	enabled := cl.Spec.InstanceAPI.Enabled
	if cl.Spec.Abstract || (enabled != nil && !*enabled) || resolved.Problem != nil {
		return nil, nil
	}
	var crd apiextensionsv1.CustomResourceDefinition
	err := e.Metamodel.Get(ctx, client.ObjectKey{Name: catalog.NamesFor(resolved).CRDName}, &crd)
	if apierrors.IsNotFound(err) || (err == nil && crd.Labels[metav1alpha1.LabelClass] != cl.Name) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Schema != nil {
			return instanceapi.BreakingChanges(v.Schema.OpenAPIV3Schema, instanceapi.Schema(resolved)), nil
		}
	}
	return nil, nil
}

// classTool is the create tool a resolved concrete class is served, as tools/list
// shows it.
func (e *Env) classTool(snap *catalog.Snapshot, cl *catalog.Class) *ClassToolView {
	if cl.Abstract || cl.Problem != nil {
		return nil
	}
	t := e.ClassTool(cl).Tool(e.Style, snap)
	return &ClassToolView{Name: t.Name, InputSchema: t.InputSchema}
}

// breakingFor is what the instance API guard would find of the named classes,
// resolved anew against mm: the changes of each (by class), and those it would
// refuse (the classes that do not allow breaking changes), one line a class.
func (e *Env) breakingFor(ctx context.Context, mm metamodel, names []string) (map[string][]string, []string, error) {
	breaking := map[string][]string{}
	var refused []string
	for _, name := range names {
		cl, ok := mm.classes[name]
		if !ok {
			continue
		}
		changes, err := e.breakingChanges(ctx, cl, catalog.ResolveClass(cl, mm))
		if err != nil {
			return nil, nil, err
		}
		if len(changes) == 0 {
			continue
		}
		breaking[name] = changes
		if !cl.Spec.InstanceAPI.AllowBreakingChanges {
			refused = append(refused, fmt.Sprintf("class %s: %s", name, strings.Join(changes, ", ")))
		}
	}
	return breaking, refused, nil
}

func problemView(p *catalog.Problem) *ProblemView {
	return &ProblemView{Reason: p.Reason, Message: p.Message}
}

func refusedBreaking(kind, name string, changes []string) error {
	return tool.Fail("refused: the change to the %s %s is breaking, stored instances may not survive it: %s. Nothing was written. "+
		"Make the change compatible (a new slot optional, a field unchanged), or set spec.instanceAPI.allowBreakingChanges on the class to apply it",
		kind, name, strings.Join(changes, "; "))
}

func (e *Env) defineClass(ctx context.Context, c *tool.Call, in defineClassArgs) (ClassDefinition, error) {
	kc, err := e.as(c)
	if err != nil {
		return ClassDefinition{}, err
	}
	me := definer(c)
	var existing metav1alpha1.Class
	err = kc.Get(ctx, client.ObjectKey{Name: in.Name}, &existing)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ClassDefinition{}, err
	}
	obj := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: in.Name,
		Annotations: map[string]string{metav1alpha1.AnnotationDefinedBy: me}}, Spec: in.Spec}
	if exists {
		if err := mayRedefine("Class", in.Name, &existing, me); err != nil {
			return ClassDefinition{}, err
		}
		obj = existing.DeepCopy()
		obj.Spec = in.Spec
	}
	// The API server validates and defaults first (and RBAC decides), storing nothing.
	dry := obj.DeepCopy()
	if err := write(ctx, kc, "Class", dry, exists, true); err != nil {
		return ClassDefinition{}, err
	}
	mm, err := e.metamodel(ctx)
	if err != nil {
		return ClassDefinition{}, err
	}
	if exists && !reflect.DeepEqual(dry.Spec, existing.Spec) {
		if err := mayReshapeClass(in.Name, mm, me); err != nil {
			return ClassDefinition{}, err
		}
	}
	mm.classes[in.Name] = dry
	resolved := catalog.ResolveClass(dry, mm)
	// The class and its subclasses have new schemas: each one's guard applies.
	breaking, refused, err := e.breakingFor(ctx, mm, append([]string{in.Name}, c.Snap.Subclasses(in.Name)...))
	if err != nil {
		return ClassDefinition{}, err
	}
	out := ClassDefinition{Class: in.Name, Ident: resolved.Ident(), Created: !exists}
	if resolved.Problem != nil {
		out.Problem = problemView(resolved.Problem)
	}
	if len(breaking) > 0 {
		out.BreakingChanges = breaking
	}
	if in.DryRun {
		valid := resolved.Problem == nil && len(refused) == 0
		out.DryRun, out.Valid = true, &valid
		out.Tool = e.classTool(c.Snap, resolved)
		return out, nil
	}
	if len(refused) > 0 {
		return ClassDefinition{}, refusedBreaking("Class", in.Name, refused)
	}
	if err := confirmDefine(c, "Class", in.Name, exists, exists && reflect.DeepEqual(dry.Spec, existing.Spec), len(breaking)); err != nil {
		return ClassDefinition{}, err
	}
	if err := write(ctx, kc, "Class", obj, exists, false); err != nil {
		return ClassDefinition{}, err
	}
	return e.awaitClass(ctx, obj, resolved, out), nil
}

// awaitClass waits, within defineWait and the call's deadline, for the Class
// reconciler's verdict on the generation just written, then for the catalog to serve
// the class as resolved, and adds both to the answer.
func (e *Env) awaitClass(ctx context.Context, written *metav1alpha1.Class, resolved *catalog.Class, out ClassDefinition) ClassDefinition {
	ctx, cancel := context.WithTimeout(ctx, defineWait)
	defer cancel()
	out.Generation = written.Generation
	var ready *metav1.Condition
	err := e.await(ctx, func(snap *catalog.Snapshot) bool {
		var now metav1alpha1.Class
		if ready == nil {
			if e.Metamodel.Get(ctx, client.ObjectKey{Name: written.Name}, &now) != nil || now.Status.ObservedGeneration < written.Generation {
				return false
			}
			if ready = meta.FindStatusCondition(now.Status.Conditions, metav1alpha1.ConditionReady); ready == nil {
				return false
			}
			out.Ready = conditionView(ready)
			// A new instance API takes a moment to be served: not a verdict yet.
			if ready.Reason == metav1alpha1.ReasonEstablishing {
				ready = nil
				return false
			}
		}
		if ready.Status != metav1.ConditionTrue {
			return true
		}
		// Ready: the answer has the tool as the catalog now serves it.
		cl := snap.Classes[written.Name]
		if cl == nil || !cl.Ready || !reflect.DeepEqual(cl.Slots, resolved.Slots) {
			return false
		}
		if e.Served != nil && e.Served() < snap.Version {
			return false
		}
		// A concrete class's tool is served once its instance API is established in
		// the catalog, which may come a moment after its Ready condition.
		if cl.Abstract {
			return true
		}
		if cl.Servable() {
			out.Tool = e.classTool(snap, cl)
		}
		return out.Tool != nil
	})
	if err != nil {
		out.Pending = fmt.Sprintf("the Class is still reconciling; %s shows its Ready condition and %s its tool once it is ready",
			tool.Encode(e.Style, "sandbar.schema.classes"), tool.Encode(e.Style, "sandbar.class.describe"))
	}
	return out
}

// await calls done on every new catalog snapshot, and at least every quarter second
// (the reconcilers' status changes need not change the catalog), until it is true or
// ctx ends.
func (e *Env) await(ctx context.Context, done func(*catalog.Snapshot) bool) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		snap, changed := e.Catalog.Watch()
		if done(snap) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-tick.C:
		}
	}
}

func conditionView(c *metav1.Condition) *ConditionView {
	return &ConditionView{Status: c.Status, Reason: c.Reason, Message: c.Message}
}

func (e *Env) defineProperty(ctx context.Context, c *tool.Call, in definePropertyArgs) (PropertyDefinition, error) {
	kc, err := e.as(c)
	if err != nil {
		return PropertyDefinition{}, err
	}
	me := definer(c)
	var existing metav1alpha1.Property
	err = kc.Get(ctx, client.ObjectKey{Name: in.Name}, &existing)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return PropertyDefinition{}, err
	}
	obj := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: in.Name,
		Annotations: map[string]string{metav1alpha1.AnnotationDefinedBy: me}}, Spec: in.Spec}
	if exists {
		if err := mayRedefine("Property", in.Name, &existing, me); err != nil {
			return PropertyDefinition{}, err
		}
		obj = existing.DeepCopy()
		obj.Spec = in.Spec
	}
	// The API server validates and defaults (cardinality), and RBAC decides.
	dry := obj.DeepCopy()
	if err := write(ctx, kc, "Property", dry, exists, true); err != nil {
		return PropertyDefinition{}, err
	}
	mm, err := e.metamodel(ctx)
	if err != nil {
		return PropertyDefinition{}, err
	}
	if exists && !reflect.DeepEqual(dry.Spec, existing.Spec) {
		if err := mayReshape(in.Name, mm, me); err != nil {
			return PropertyDefinition{}, err
		}
	}
	mm.properties[in.Name] = dry
	slot := catalog.SlotOf(dry)
	out := PropertyDefinition{Property: in.Name, Field: slot.Field, Created: !exists, Schema: catalog.SlotJSONSchema(slot)}
	if p := catalog.ValidateProperty(dry, mm); p != nil {
		out.Problem = problemView(p)
	}
	// Every class that has the property, and so whose instance API changes with it.
	var users []string
	for _, name := range c.Snap.ClassNames() {
		if hasSlot(c.Snap.Classes[name], in.Name) {
			users = append(users, name)
		}
	}
	breaking, refused, err := e.breakingFor(ctx, mm, users)
	if err != nil {
		return PropertyDefinition{}, err
	}
	if len(breaking) > 0 {
		out.BreakingChanges = breaking
	}
	if in.DryRun {
		valid := out.Problem == nil && len(refused) == 0
		out.DryRun, out.Valid = true, &valid
		return out, nil
	}
	if len(refused) > 0 {
		return PropertyDefinition{}, refusedBreaking("Property", in.Name, refused)
	}
	if err := confirmDefine(c, "Property", in.Name, exists, exists && reflect.DeepEqual(dry.Spec, existing.Spec), len(breaking)); err != nil {
		return PropertyDefinition{}, err
	}
	if err := write(ctx, kc, "Property", obj, exists, false); err != nil {
		return PropertyDefinition{}, err
	}
	return e.awaitProperty(ctx, obj, out), nil
}

// confirmDefine asks the user to confirm a change of the metamodel (a new Class or
// Property, or a changed one: every account's tools and instances follow it); a
// define that changes nothing asks nothing.
func confirmDefine(c *tool.Call, kind, name string, exists, unchanged bool, breaking int) error {
	switch {
	case unchanged:
		return nil
	case !exists:
		return c.Confirm(fmt.Sprintf("Add the %s %q to the metamodel?", kind, name))
	case breaking > 0:
		return c.Confirm(fmt.Sprintf("Change the %s %q of the metamodel, with %d breaking changes?", kind, name, breaking))
	}
	return c.Confirm(fmt.Sprintf("Change the %s %q of the metamodel?", kind, name))
}

func hasSlot(cl *catalog.Class, property string) bool {
	if cl == nil {
		return false
	}
	for _, s := range cl.Slots {
		if s.Property == property {
			return true
		}
	}
	return false
}

// awaitProperty waits, within defineWait and the call's deadline, for the Property
// reconciler's verdict on the generation just written.
func (e *Env) awaitProperty(ctx context.Context, written *metav1alpha1.Property, out PropertyDefinition) PropertyDefinition {
	ctx, cancel := context.WithTimeout(ctx, defineWait)
	defer cancel()
	out.Generation = written.Generation
	err := e.await(ctx, func(*catalog.Snapshot) bool {
		var now metav1alpha1.Property
		if e.Metamodel.Get(ctx, client.ObjectKey{Name: written.Name}, &now) != nil || now.Status.ObservedGeneration < written.Generation {
			return false
		}
		ready := meta.FindStatusCondition(now.Status.Conditions, metav1alpha1.ConditionReady)
		if ready == nil {
			return false
		}
		out.Ready = conditionView(ready)
		return true
	})
	if err != nil {
		out.Pending = fmt.Sprintf("the Property is still reconciling; %s shows it once it is ready",
			tool.Encode(e.Style, "sandbar.schema.properties"))
	}
	return out
}
