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
	"context"
	"sort"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// noArgs is the arguments of a verb that takes none.
type noArgs struct{}

type classArgs struct {
	Class string `json:"class" jsonschema:"The class, as prefix/Kind (for example zorp/SpaceBoot)."`
}

type classListArgs struct {
	classArgs
	listArgs
}

type subclassOfArgs struct {
	classArgs
	Of string `json:"of" jsonschema:"The class it may inherit from, as prefix/Kind."`
}

type instanceOfArgs struct {
	Class     string `json:"class" jsonschema:"The class of the instance, as prefix/Kind."`
	Name      string `json:"name" jsonschema:"Name of the instance."`
	Namespace string `json:"namespace,omitempty" jsonschema:"Namespace; defaults to the account's own."`
	Of        string `json:"of" jsonschema:"The class it may be an instance of, as prefix/Kind."`
}

type propertyArgs struct {
	Property string `json:"property" jsonschema:"The name of the Property."`
}

type propertyListArgs struct {
	propertyArgs
	listArgs
}

// ClassList is a page of the classes of the metamodel.
type ClassList struct {
	Classes []ClassSummary `json:"classes"`
	Page
}

// ClassSummary is a class as the list of classes shows it.
type ClassSummary struct {
	Class       string   `json:"class"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Abstract    bool     `json:"abstract"`
	Parents     []string `json:"parents"`
	Slots       int      `json:"slots"`
	Ready       bool     `json:"ready"`
	Problem     string   `json:"problem,omitempty"`
}

// PropertyList is a page of the Properties of the metamodel.
type PropertyList struct {
	Properties []Property `json:"properties"`
	Page
}

// ClassSlots is a page of the slots of a class.
type ClassSlots struct {
	Class string `json:"class"`
	Slots []Slot `json:"slots"`
	Page
}

// RequiredSlots is a page of the fields of a class's required slots.
type RequiredSlots struct {
	Class    string   `json:"class"`
	Required []string `json:"required"`
	Page
}

// Subclasses is a page of the classes that inherit from a class.
type Subclasses struct {
	Class      string   `json:"class"`
	Subclasses []string `json:"subclasses"`
	Page
}

// Parents are the direct parents and all ancestors of a class.
type Parents struct {
	Class     string   `json:"class"`
	Parents   []string `json:"parents"`
	Ancestors []string `json:"ancestors"`
}

// SubclassOf says whether a class inherits from another.
type SubclassOf struct {
	Class      string `json:"class"`
	Of         string `json:"of"`
	SubclassOf bool   `json:"subclassOf"`
}

// Cardinality says whether a Property holds one value or a list.
type Cardinality struct {
	Property    string                   `json:"property"`
	Cardinality metav1alpha1.Cardinality `json:"cardinality"`
}

// Domain is a page of the classes that have a Property.
type Domain struct {
	Property    string   `json:"property"`
	DeclaredBy  []string `json:"declaredBy"`
	InheritedBy []string `json:"inheritedBy"`
	Page
}

// Datatypes are the ranges a slot can have.
type Datatypes struct {
	Datatypes   []Datatype `json:"datatypes"`
	Cardinality string     `json:"cardinality"`
}

// Datatype is a range and the JSON Schema of its values in tool arguments.
type Datatype struct {
	Range       metav1alpha1.PropertyRange `json:"range"`
	Description string                     `json:"description"`
	Schema      map[string]any             `json:"schema"`
}

// Codecs are the text formats of instances.
type Codecs struct {
	Codecs []Codec `json:"codecs"`
}

// Codec is a text format of instances and the classes that use it as their own.
type Codec struct {
	Format      metav1alpha1.CodecFormat `json:"format"`
	MIMEType    string                   `json:"mimeType"`
	Classes     []string                 `json:"classes"`
	Description string                   `json:"description"`
}

func (e *Env) schemaVerbs() []*tool.Def {
	return append([]*tool.Def{
		tool.Verb(tool.Spec{Group: "schema", Name: "classes", Title: "List classes", ReadOnly: true, Idempotent: true,
			Description: "List every class of the metamodel: ident, description, abstract, parents, whether it is ready. Start here. Paged: {limit?, continue?}."},
			func(_ context.Context, c *tool.Call, in listArgs) (ClassList, error) {
				items, pg, err := page(c, classList(c.Snap), in, nil)
				return ClassList{Classes: items, Page: pg}, err
			}),
		tool.Verb(tool.Spec{Group: "schema", Name: "properties", Title: "List properties", ReadOnly: true, Idempotent: true,
			Description: "List every Property (slot definition): field, range, cardinality, constraints, and the classes that use it. Paged: {limit?, continue?}."},
			func(_ context.Context, c *tool.Call, in listArgs) (PropertyList, error) {
				items, pg, err := page(c, propertyViews(c.Snap), in, nil)
				return PropertyList{Properties: items, Page: pg}, err
			}),
		tool.Verb(tool.Spec{Group: "schema", Name: "datatypes", Title: "List datatypes", ReadOnly: true, Idempotent: true,
			Description: "List the ranges a slot can have and the JSON each one takes in tool arguments."},
			func(context.Context, *tool.Call, noArgs) (Datatypes, error) { return datatypes(), nil }),
		tool.Verb(tool.Spec{Group: "schema", Name: "entities", Title: "Create several instances",
			Description: "Create several instances at once: {entities: [{class, attributes, metadata?}]}. Each is reported on its own; one failure does not stop the others. " + idempotencyNote},
			e.createEntities, tool.MaxItems("entities", maxBatch)).Patch(enum("entities.class", classes(true))).WithActs(entitiesActs),
	}, e.defineVerbs()...)
}

// describeVerb is a verb that answers a view of one class; with keep, the view is
// rendered once per snapshot and class.
func describeVerb[T any](name, title, desc string, view func(snap *catalog.Snapshot, cl *catalog.Class) T, keep *rendered) *tool.Def {
	return tool.Verb(tool.Spec{Group: "class", Name: name, Title: title, Description: desc, ReadOnly: true, Idempotent: true},
		func(_ context.Context, c *tool.Call, in classArgs) (tool.Kept[T], error) {
			cl, err := class(c, in.Class)
			if err != nil {
				return tool.Kept[T]{}, err
			}
			if keep != nil {
				return tool.Keep[T](keep.answer(c, cl.Name, func() any { return view(c.Snap, cl) })), nil
			}
			return tool.Keep[T](tool.Render(view(c.Snap, cl), c.Bounds.Scrub)), nil
		}).Patch(enum("class", classes(false)))
}

// classListVerb is a verb that lists something of one class, a page at a time.
func classListVerb[T, Out any](name, title, desc string, items func(snap *catalog.Snapshot, cl *catalog.Class) []T,
	answer func(class string, items []T, pg Page) Out) *tool.Def {
	return tool.Verb(tool.Spec{Group: "class", Name: name, Title: title, Description: desc + " Paged: {class, limit?, continue?}.",
		ReadOnly: true, Idempotent: true},
		func(_ context.Context, c *tool.Call, in classListArgs) (Out, error) {
			var out Out
			cl, err := class(c, in.Class)
			if err != nil {
				return out, err
			}
			list, pg, err := page(c, items(c.Snap, cl), in.listArgs, cl.Ident())
			if err != nil {
				return out, err
			}
			return answer(cl.Ident(), list, pg), nil
		}).Patch(enum("class", classes(false)))
}

func (e *Env) classVerbs() []*tool.Def {
	slots := func(class string, items []Slot, pg Page) ClassSlots {
		return ClassSlots{Class: class, Slots: items, Page: pg}
	}
	return []*tool.Def{
		// A class's description depends on the snapshot alone: rendered once for each.
		describeVerb("describe", "Describe a class",
			"Everything about one class: its slots (field, type, required, constraints, where inherited from), parents, ancestors, subclasses and the Kubernetes API of its instances.",
			ClassView, &rendered{}),
		classListVerb("slots", "Slots of a class", "The effective slots of a class, inherited ones included, with their JSON Schema.",
			func(_ *catalog.Snapshot, cl *catalog.Class) []Slot { return slotViews(cl.Slots) }, slots),
		classListVerb("direct-slots", "Direct slots of a class", "The slots a class declares itself, without inherited ones.",
			func(_ *catalog.Snapshot, cl *catalog.Class) []Slot { return slotViews(directSlots(cl)) }, slots),
		classListVerb("required-slots", "Required slots of a class", "The slots every instance of a class must have.",
			func(_ *catalog.Snapshot, cl *catalog.Class) []string { return cl.Required },
			func(class string, items []string, pg Page) RequiredSlots {
				return RequiredSlots{Class: class, Required: items, Page: pg}
			}),
		tool.Verb(tool.Spec{Group: "class", Name: "instances", Title: "Instances of a class", ReadOnly: true, Idempotent: true,
			Description: "List instances of a class and its subclasses (same arguments as sandbar_entity_find)."},
			e.find, findConstraints...).Patch(enum("class", classes(false))),
		classListVerb("subclasses", "Subclasses of a class", "Every class that inherits, directly or not, from a class.",
			func(snap *catalog.Snapshot, cl *catalog.Class) []string {
				return idents(snap, snap.Subclasses(cl.Name))
			},
			func(class string, items []string, pg Page) Subclasses {
				return Subclasses{Class: class, Subclasses: items, Page: pg}
			}),
		describeVerb("parents", "Parents of a class", "The direct parents and all ancestors of a class.",
			func(snap *catalog.Snapshot, cl *catalog.Class) Parents {
				return Parents{Class: cl.Ident(), Parents: idents(snap, cl.Parents), Ancestors: idents(snap, cl.Ancestors)}
			}, nil),
	}
}

func (e *Env) typesVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "types", Name: "instance-of", Title: "Is an instance of", ReadOnly: true, Idempotent: true,
			Description: "Whether an instance (class and name) is an instance of another class, counting inheritance; also lists every class it is an instance of."},
			e.instanceOf).Patch(enum("of", classes(false))),
		tool.Verb(tool.Spec{Group: "types", Name: "subclass-of", Title: "Is a subclass of", ReadOnly: true, Idempotent: true,
			Description: "Whether a class inherits, directly or not, from another."},
			subclassOf).Patch(enum("class", classes(false))).Patch(enum("of", classes(false))),
	}
}

// propertyVerb is a verb that answers a view of one Property.
func propertyVerb[T any](name, title, desc string, view func(p *catalog.Property) T) *tool.Def {
	return tool.Verb(tool.Spec{Group: "property", Name: name, Title: title, Description: desc, ReadOnly: true, Idempotent: true},
		func(_ context.Context, c *tool.Call, in propertyArgs) (T, error) {
			p, ok := c.Snap.Properties[in.Property]
			if !ok {
				var zero T
				return zero, unknownProperty(c, in.Property)
			}
			return view(p), nil
		}).Patch(enum("property", propertyNames))
}

func unknownProperty(c *tool.Call, name string) error {
	return tool.Fail("unknown property %q; %s", name, tool.Instead(c.Next("sandbar.schema.properties", "list the properties", nil)))
}

func (e *Env) propertyVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "property", Name: "domain", Title: "Classes with a property", ReadOnly: true, Idempotent: true,
			Description: "The classes that declare a Property and the classes that have it by inheritance. Paged: {property, limit?, continue?}."},
			func(_ context.Context, c *tool.Call, in propertyListArgs) (Domain, error) {
				p, ok := c.Snap.Properties[in.Property]
				if !ok {
					return Domain{}, unknownProperty(c, in.Property)
				}
				return domain(c, p, in.listArgs)
			}).Patch(enum("property", propertyNames)),
		propertyVerb("range", "Range of a property", "The value type of a Property, its constraints and its JSON Schema.",
			func(p *catalog.Property) SlotDef { return slotDef(p.Slot) }),
		propertyVerb("cardinality", "Cardinality of a property", "Whether a Property holds one value or a list.",
			func(p *catalog.Property) Cardinality {
				return Cardinality{Property: p.Name, Cardinality: p.Slot.Cardinality}
			}),
	}
}

func (e *Env) codecVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "codec", Name: "list", Title: "List codecs", ReadOnly: true, Idempotent: true,
			Description: "The text formats of instances (json, markdown), how each looks, and which classes use which as their own."},
			func(_ context.Context, c *tool.Call, _ noArgs) (Codecs, error) { return listCodecs(c.Snap), nil }),
	}
}

func classList(snap *catalog.Snapshot) []ClassSummary {
	var out []ClassSummary
	for _, name := range snap.ClassNames() {
		cl := snap.Classes[name]
		out = append(out, ClassSummary{Class: cl.Ident(), Name: cl.Name, Description: cl.Description, Abstract: cl.Abstract,
			Parents: idents(snap, cl.Parents), Slots: len(cl.Slots), Ready: cl.Ready, Problem: problemText(cl.Problem)})
	}
	return out
}

func directSlots(cl *catalog.Class) []*catalog.Slot {
	var out []*catalog.Slot
	for _, s := range cl.Slots {
		if s.From == cl.Name {
			out = append(out, s)
		}
	}
	return out
}

func datatypes() Datatypes {
	var out []Datatype
	for _, r := range catalog.Ranges() {
		out = append(out, Datatype{Range: r.Range, Description: r.Summary,
			Schema: catalog.SlotJSONSchema(catalog.Slot{Definition: &catalog.Definition{Range: r.Range, Target: "<target>"}})})
	}
	return Datatypes{Datatypes: nonNil(out), Cardinality: "many wraps the schema in an array"}
}

// domain is one page of the classes that have a property: those that declare it,
// then those that inherit it.
func domain(c *tool.Call, p *catalog.Property, in listArgs) (Domain, error) {
	type user struct {
		Class     string `json:"class"`
		Inherited bool   `json:"inherited"`
	}
	snap := c.Snap
	var users []user
	for _, name := range snap.ClassNames() {
		cl := snap.Classes[name]
		for _, s := range cl.Slots {
			if s.Property != p.Name {
				continue
			}
			users = append(users, user{cl.Ident(), s.From != cl.Name})
		}
	}
	// Declaring classes first, each group in the catalog's order.
	sort.SliceStable(users, func(i, j int) bool { return !users[i].Inherited && users[j].Inherited })
	list, pg, err := page(c, users, in, p.Name)
	if err != nil {
		return Domain{}, err
	}
	out := Domain{Property: p.Name, DeclaredBy: []string{}, InheritedBy: []string{}, Page: pg}
	for _, u := range list {
		if u.Inherited {
			out.InheritedBy = append(out.InheritedBy, u.Class)
		} else {
			out.DeclaredBy = append(out.DeclaredBy, u.Class)
		}
	}
	return out, nil
}

func subclassOf(_ context.Context, c *tool.Call, in subclassOfArgs) (SubclassOf, error) {
	cl, err := class(c, in.Class)
	if err != nil {
		return SubclassOf{}, err
	}
	of, err := class(c, in.Of)
	if err != nil {
		return SubclassOf{}, err
	}
	return SubclassOf{Class: cl.Ident(), Of: of.Ident(), SubclassOf: isA(cl, of)}, nil
}

func isA(cl, of *catalog.Class) bool {
	if cl.Name == of.Name {
		return true
	}
	for _, a := range cl.Ancestors {
		if a == of.Name {
			return true
		}
	}
	return false
}

func listCodecs(snap *catalog.Snapshot) Codecs {
	byFormat := map[metav1alpha1.CodecFormat][]string{}
	for _, name := range snap.ClassNames() {
		cl := snap.Classes[name]
		byFormat[cl.Codec.Format] = append(byFormat[cl.Codec.Format], cl.Ident())
	}
	codecs := make([]Codec, 0, len(codec.Formats))
	for _, f := range codec.Formats {
		codecs = append(codecs, Codec{Format: f.Name, MIMEType: f.MIMEType, Classes: nonNil(byFormat[f.Name]), Description: f.Description})
	}
	return Codecs{Codecs: codecs}
}
