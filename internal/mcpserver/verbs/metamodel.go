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
	Class    string `json:"class" jsonschema:"The class, as prefix/Kind (for example zorp/SpaceBoot)."`
	Limit    int64  `json:"limit,omitempty" jsonschema:"At most this many items (default and most: the server's page size)."`
	Continue string `json:"continue,omitempty" jsonschema:"The continue token of a previous call, for the next page."`
}

type subclassOfArgs struct {
	Class string `json:"class" jsonschema:"The class, as prefix/Kind (for example zorp/SpaceBoot)."`
	Of    string `json:"of" jsonschema:"The class it may inherit from, as prefix/Kind."`
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
	Property string `json:"property" jsonschema:"The name of the Property."`
	Limit    int64  `json:"limit,omitempty" jsonschema:"At most this many items (default and most: the server's page size)."`
	Continue string `json:"continue,omitempty" jsonschema:"The continue token of a previous call, for the next page."`
}

func (e *Env) schemaVerbs() []*tool.Def {
	return append([]*tool.Def{
		tool.Verb(tool.Spec{Group: "schema", Name: "classes", Title: "List classes", ReadOnly: true, Idempotent: true,
			Description: "List every class of the metamodel: ident, description, abstract, parents, whether it is ready. Start here. Paged: {limit?, continue?}."},
			func(_ context.Context, c *tool.Call, in listArgs) (any, error) {
				out := map[string]any{}
				return out, page(c, classList(c.Snap), in, nil, "classes", out)
			}),
		tool.Verb(tool.Spec{Group: "schema", Name: "properties", Title: "List properties", ReadOnly: true, Idempotent: true,
			Description: "List every Property (slot definition): field, range, cardinality, constraints, and the classes that use it. Paged: {limit?, continue?}."},
			func(_ context.Context, c *tool.Call, in listArgs) (any, error) {
				out := map[string]any{}
				return out, page(c, propertyViews(c.Snap), in, nil, "properties", out)
			}),
		tool.Verb(tool.Spec{Group: "schema", Name: "datatypes", Title: "List datatypes", ReadOnly: true, Idempotent: true,
			Description: "List the ranges a slot can have and the JSON each one takes in tool arguments."},
			func(context.Context, *tool.Call, noArgs) (any, error) { return datatypes(), nil }),
		tool.Verb(tool.Spec{Group: "schema", Name: "entities", Title: "Create several instances",
			Description: "Create several instances at once: {entities: [{class, attributes, metadata?}]}. Each is reported on its own; one failure does not stop the others. " + idempotencyNote},
			e.createEntities, tool.MaxItems("entities", maxBatch)).Patch(enum("entities.class", classes(true))),
	}, e.defineVerbs()...)
}

func (e *Env) classVerbs() []*tool.Def {
	// describe is a verb that answers a view of one class; with keep, the view is
	// rendered once per snapshot and class.
	describe := func(name, title, desc string, view func(snap *catalog.Snapshot, cl *catalog.Class) any, keep *rendered) *tool.Def {
		return tool.Verb(tool.Spec{Group: "class", Name: name, Title: title, Description: desc, ReadOnly: true, Idempotent: true},
			func(_ context.Context, c *tool.Call, in classArgs) (any, error) {
				cl, err := class(c, in.Class)
				if err != nil {
					return nil, err
				}
				if keep != nil {
					return keep.answer(c, cl.Name, func() any { return view(c.Snap, cl) }), nil
				}
				return view(c.Snap, cl), nil
			}).Patch(enum("class", classes(false)))
	}
	// list is a verb that lists something of one class, a page at a time.
	list := func(name, title, desc, key string, items func(snap *catalog.Snapshot, cl *catalog.Class) []any) *tool.Def {
		return tool.Verb(tool.Spec{Group: "class", Name: name, Title: title, Description: desc + " Paged: {class, limit?, continue?}.",
			ReadOnly: true, Idempotent: true},
			func(_ context.Context, c *tool.Call, in classListArgs) (any, error) {
				cl, err := class(c, in.Class)
				if err != nil {
					return nil, err
				}
				out := map[string]any{"class": cl.Ident()}
				return out, page(c, items(c.Snap, cl), listArgs{Limit: in.Limit, Continue: in.Continue}, cl.Ident(), key, out)
			}).Patch(enum("class", classes(false)))
	}
	// A class's description depends on the snapshot alone: rendered once for each.
	descriptions := &rendered{}
	return []*tool.Def{
		describe("describe", "Describe a class",
			"Everything about one class: its slots (field, type, required, constraints, where inherited from), parents, ancestors, subclasses and the Kubernetes API of its instances.",
			func(snap *catalog.Snapshot, cl *catalog.Class) any { return ClassView(snap, cl) }, descriptions),
		list("slots", "Slots of a class", "The effective slots of a class, inherited ones included, with their JSON Schema.", "slots",
			func(_ *catalog.Snapshot, cl *catalog.Class) []any { return anys(slotViews(cl.Slots)) }),
		list("direct-slots", "Direct slots of a class", "The slots a class declares itself, without inherited ones.", "slots",
			func(_ *catalog.Snapshot, cl *catalog.Class) []any { return anys(slotViews(directSlots(cl))) }),
		list("required-slots", "Required slots of a class", "The slots every instance of a class must have.", "required",
			func(_ *catalog.Snapshot, cl *catalog.Class) []any { return anys(cl.Required) }),
		tool.Verb(tool.Spec{Group: "class", Name: "instances", Title: "Instances of a class", ReadOnly: true, Idempotent: true,
			Description: "List instances of a class and its subclasses (same arguments as sandbar_entity_find)."},
			e.find, findConstraints...).Patch(enum("class", classes(false))),
		list("subclasses", "Subclasses of a class", "Every class that inherits, directly or not, from a class.", "subclasses",
			func(snap *catalog.Snapshot, cl *catalog.Class) []any {
				return anys(idents(snap, snap.Subclasses(cl.Name)))
			}),
		describe("parents", "Parents of a class", "The direct parents and all ancestors of a class.",
			func(snap *catalog.Snapshot, cl *catalog.Class) any {
				return map[string]any{"class": cl.Ident(), "parents": idents(snap, cl.Parents), "ancestors": idents(snap, cl.Ancestors)}
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

func (e *Env) propertyVerbs() []*tool.Def {
	prop := func(name, title, desc string, view func(snap *catalog.Snapshot, p *catalog.Property) any) *tool.Def {
		return tool.Verb(tool.Spec{Group: "property", Name: name, Title: title, Description: desc, ReadOnly: true, Idempotent: true},
			func(_ context.Context, c *tool.Call, in propertyArgs) (any, error) {
				p, ok := c.Snap.Properties[in.Property]
				if !ok {
					return nil, tool.Fail("unknown property %q; sandbar_schema_properties lists them", in.Property)
				}
				return view(c.Snap, p), nil
			}).Patch(enum("property", propertyNames))
	}
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "property", Name: "domain", Title: "Classes with a property", ReadOnly: true, Idempotent: true,
			Description: "The classes that declare a Property and the classes that have it by inheritance. Paged: {property, limit?, continue?}."},
			func(_ context.Context, c *tool.Call, in propertyListArgs) (any, error) {
				p, ok := c.Snap.Properties[in.Property]
				if !ok {
					return nil, tool.Fail("unknown property %q; sandbar_schema_properties lists them", in.Property)
				}
				return domain(c, p, listArgs{Limit: in.Limit, Continue: in.Continue})
			}).Patch(enum("property", propertyNames)),
		prop("range", "Range of a property", "The value type of a Property, its constraints and its JSON Schema.",
			func(_ *catalog.Snapshot, p *catalog.Property) any { return slotView(p.Slot) }),
		prop("cardinality", "Cardinality of a property", "Whether a Property holds one value or a list.",
			func(_ *catalog.Snapshot, p *catalog.Property) any {
				return map[string]any{"property": p.Name, "cardinality": p.Slot.Cardinality}
			}),
	}
}

func (e *Env) codecVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "codec", Name: "list", Title: "List codecs", ReadOnly: true, Idempotent: true,
			Description: "The text formats of instances (json, markdown), how each looks, and which classes use which as their own."},
			func(_ context.Context, c *tool.Call, _ noArgs) (any, error) { return listCodecs(c.Snap), nil }),
	}
}

// anys is a list as items of a page.
func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func classList(snap *catalog.Snapshot) []map[string]any {
	var out []map[string]any
	for _, name := range snap.ClassNames() {
		cl := snap.Classes[name]
		v := map[string]any{
			"class":       cl.Ident(),
			"name":        cl.Name,
			"description": cl.Description,
			"abstract":    cl.Abstract,
			"parents":     idents(snap, cl.Parents),
			"slots":       len(cl.Slots),
			"ready":       cl.Ready,
		}
		if cl.Problem != nil {
			v["problem"] = cl.Problem.Message
		}
		out = append(out, v)
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

func datatypes() any {
	var out []map[string]any
	for _, r := range catalog.Ranges() {
		out = append(out, map[string]any{"range": r.Range, "description": r.Summary,
			"schema": SlotJSONSchema(catalog.Slot{Definition: &catalog.Definition{Range: r.Range, Target: "<target>"}})})
	}
	return map[string]any{"datatypes": out, "cardinality": "many wraps the schema in an array"}
}

// domain is one page of the classes that have a property: those that declare it,
// then those that inherit it.
func domain(c *tool.Call, p *catalog.Property, in listArgs) (any, error) {
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
	out := map[string]any{"property": p.Name}
	if err := page(c, users, in, p.Name, "classes", out); err != nil {
		return nil, err
	}
	declared, inherited := []string{}, []string{}
	for _, u := range out["classes"].([]user) {
		if u.Inherited {
			inherited = append(inherited, u.Class)
		} else {
			declared = append(declared, u.Class)
		}
	}
	delete(out, "classes")
	out["declaredBy"], out["inheritedBy"] = declared, inherited
	return out, nil
}

func subclassOf(_ context.Context, c *tool.Call, in subclassOfArgs) (any, error) {
	cl, err := class(c, in.Class)
	if err != nil {
		return nil, err
	}
	of, err := class(c, in.Of)
	if err != nil {
		return nil, err
	}
	return map[string]any{"class": cl.Ident(), "of": of.Ident(), "subclassOf": isA(cl, of)}, nil
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

func listCodecs(snap *catalog.Snapshot) any {
	byFormat := map[metav1alpha1.CodecFormat][]string{}
	for _, name := range snap.ClassNames() {
		cl := snap.Classes[name]
		byFormat[cl.Codec.Format] = append(byFormat[cl.Codec.Format], cl.Ident())
	}
	codecs := make([]map[string]any, 0, len(codec.Formats))
	for _, f := range codec.Formats {
		codecs = append(codecs, map[string]any{"format": f.Name, "mimeType": f.MIMEType, "classes": nonNil(byFormat[f.Name]),
			"description": f.Description})
	}
	return map[string]any{"codecs": codecs}
}
