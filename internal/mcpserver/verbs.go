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

package mcpserver

import (
	"context"
	"sort"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// verbs is the operational verb catalog, registered from this one place.
func (s *Server) verbs() []verb {
	return []verb{
		{group: "schema", name: "classes", title: "List classes", readOnly: true, idempotent: true,
			description: "List every class of the metamodel: ident, description, abstract, parents, whether it is ready. Start here.",
			run:         func(c *call, _ context.Context) (any, error) { return c.listClasses(), nil }},
		{group: "schema", name: "properties", title: "List properties", readOnly: true, idempotent: true,
			description: "List every Property (slot definition): field, range, cardinality, constraints, and the classes that use it.",
			run:         func(c *call, _ context.Context) (any, error) { return c.listProperties(), nil }},
		{group: "schema", name: "datatypes", title: "List datatypes", readOnly: true, idempotent: true,
			description: "List the ranges a slot can have and the JSON each one takes in tool arguments.",
			run:         func(c *call, _ context.Context) (any, error) { return datatypes(), nil }},
		{group: "schema", name: "entities", title: "Create several instances",
			description: "Create several instances at once: {entities: [{class, attributes, metadata?}]}. Each is reported on its own; one failure does not stop the others.",
			input:       entitiesInput, run: (*call).createEntities},

		{group: "class", name: "describe", title: "Describe a class", readOnly: true, idempotent: true,
			description: "Everything about one class: its slots (field, type, required, constraints, where inherited from), parents, ancestors, subclasses and the Kubernetes API of its instances.",
			input:       classInput(false), run: withClass(func(c *call, cl *catalog.Class) any { return c.describeClass(cl) })},
		{group: "class", name: "slots", title: "Slots of a class", readOnly: true, idempotent: true,
			description: "The effective slots of a class, inherited ones included, with their JSON Schema.",
			input:       classInput(false), run: withClass(func(c *call, cl *catalog.Class) any {
				return map[string]any{"class": cl.Ident(), "slots": slotViews(cl.Slots)}
			})},
		{group: "class", name: "direct-slots", title: "Direct slots of a class", readOnly: true, idempotent: true,
			description: "The slots a class declares itself, without inherited ones.",
			input:       classInput(false), run: withClass(func(c *call, cl *catalog.Class) any {
				return map[string]any{"class": cl.Ident(), "slots": slotViews(directSlots(cl))}
			})},
		{group: "class", name: "required-slots", title: "Required slots of a class", readOnly: true, idempotent: true,
			description: "The slots every instance of a class must have.",
			input:       classInput(false), run: withClass(func(c *call, cl *catalog.Class) any {
				return map[string]any{"class": cl.Ident(), "required": nonNil(cl.Required)}
			})},
		{group: "class", name: "instances", title: "Instances of a class", readOnly: true, idempotent: true,
			description: "List instances of a class and its subclasses (same arguments as sandbar_entity_find).",
			input:       findInput, run: (*call).findEntities},
		{group: "class", name: "subclasses", title: "Subclasses of a class", readOnly: true, idempotent: true,
			description: "Every class that inherits, directly or not, from a class.",
			input:       classInput(false), run: withClass(func(c *call, cl *catalog.Class) any {
				return map[string]any{"class": cl.Ident(), "subclasses": c.idents(c.snap.Subclasses(cl.Name))}
			})},
		{group: "class", name: "parents", title: "Parents of a class", readOnly: true, idempotent: true,
			description: "The direct parents and all ancestors of a class.",
			input:       classInput(false), run: withClass(func(c *call, cl *catalog.Class) any {
				return map[string]any{"class": cl.Ident(), "parents": c.idents(cl.Parents), "ancestors": c.idents(cl.Ancestors)}
			})},

		{group: "types", name: "instance-of", title: "Is an instance of", readOnly: true, idempotent: true,
			description: "Whether an instance (class and name) is an instance of another class, counting inheritance; also lists every class it is an instance of.",
			input:       instanceOfInput, run: (*call).instanceOf},
		{group: "types", name: "subclass-of", title: "Is a subclass of", readOnly: true, idempotent: true,
			description: "Whether a class inherits, directly or not, from another.",
			input:       subclassOfInput, run: (*call).subclassOf},

		{group: "property", name: "domain", title: "Classes with a property", readOnly: true, idempotent: true,
			description: "The classes that declare a Property and the classes that have it by inheritance.",
			input:       propertyInput, run: withProperty(func(c *call, p *catalog.Property) any { return c.domain(p) })},
		{group: "property", name: "range", title: "Range of a property", readOnly: true, idempotent: true,
			description: "The value type of a Property, its constraints and its JSON Schema.",
			input:       propertyInput, run: withProperty(func(c *call, p *catalog.Property) any { return slotView(p.Slot) })},
		{group: "property", name: "cardinality", title: "Cardinality of a property", readOnly: true, idempotent: true,
			description: "Whether a Property holds one value or a list.",
			input:       propertyInput, run: withProperty(func(c *call, p *catalog.Property) any {
				return map[string]any{"property": p.Name, "cardinality": p.Slot.Cardinality}
			})},

		{group: "codec", name: "list", title: "List codecs", readOnly: true, idempotent: true,
			description: "The text formats of instances (json, markdown), how each looks, and which classes use which as their own.",
			run:         func(c *call, _ context.Context) (any, error) { return c.listCodecs(), nil }},

		{group: "entity", name: "create", title: "Create an instance",
			description: "Create an instance of a class: {class, attributes: {slot: value}, metadata?: {name, namespace, labels}}, or {class, format: \"json\", source: \"<JSON text>\"}. Missing or wrong slots are reported by name with the expected type.",
			input:       createInput, run: (*call).create},
		{group: "entity", name: "find", title: "Find instances", readOnly: true, idempotent: true,
			description: "Find instances of a class and its subclasses: {class, where?: {slot: value}, name?, labelSelector?, namespace?, limit?, continue?}. Results are capped; pass the returned continue token for more.",
			input:       findInput, run: (*call).findEntities},
		{group: "entity", name: "update", title: "Update an instance", destructive: true,
			description: "Change slots of an instance with a merge patch: {class, name, attributes: {slot: value or null to remove}, resourceVersion?}. With resourceVersion the update fails if the instance changed since.",
			input:       updateInput, run: (*call).update},
		{group: "entity", name: "validate", title: "Validate attributes", readOnly: true, idempotent: true,
			description: "Check attributes against a class without saving anything (a server-side dry run): {class, attributes, metadata?}.",
			input:       createInput, run: (*call).validate},
	}
}

func withClass(f func(c *call, cl *catalog.Class) any) func(*call, context.Context) (any, error) {
	return func(c *call, _ context.Context) (any, error) {
		cl, err := c.class("class")
		if err != nil {
			return nil, err
		}
		return f(c, cl), nil
	}
}

func withProperty(f func(c *call, p *catalog.Property) any) func(*call, context.Context) (any, error) {
	return func(c *call, _ context.Context) (any, error) {
		name, err := c.str("property", true)
		if err != nil {
			return nil, err
		}
		p, ok := c.snap.Properties[name]
		if !ok {
			return nil, fail("unknown property %q; sandbar_schema_properties lists them", name)
		}
		return f(c, p), nil
	}
}

// --- input schemas ----------------------------------------------------------------

func classArg(snap *catalog.Snapshot, concreteOnly bool) schema {
	desc := "The class, as prefix/Kind (for example zorp/SpaceBoot)."
	out := schema{"type": "string", "description": desc}
	if ids := classIdents(snap, concreteOnly); len(ids) > 0 {
		out["enum"] = ids
	}
	return out
}

func classInput(concreteOnly bool) func(*catalog.Snapshot) schema {
	return func(snap *catalog.Snapshot) schema {
		return schema{"type": "object", "properties": schema{"class": classArg(snap, concreteOnly)}, "required": []string{"class"}}
	}
}

func propertyInput(snap *catalog.Snapshot) schema {
	names := make([]string, 0, len(snap.Properties))
	for n := range snap.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	p := schema{"type": "string", "description": "The name of the Property."}
	if len(names) > 0 {
		p["enum"] = names
	}
	return schema{"type": "object", "properties": schema{"property": p}, "required": []string{"property"}}
}

var namespaceArg = schema{"type": "string", "description": "Namespace; defaults to the account's own."}

func createInput(snap *catalog.Snapshot) schema {
	return schema{
		"type": "object",
		"properties": schema{
			"class":      classArg(snap, true),
			"attributes": schema{"type": "object", "description": "Slot values by field name (see sandbar_class_describe)."},
			"metadata":   metadataSchema(),
			"format":     schema{"type": "string", "enum": []string{"json", "markdown"}, "description": "Format of source (sandbar_codec_list describes them)."},
			"source":     schema{"type": "string", "description": "The instance as text in the given format. json: its attributes, or an object with metadata and spec. markdown: YAML front matter with the slot values (and metadata), then \"# <field>\" sections for the class's section slots."},
		},
		"required": []string{"class"},
	}
}

func entitiesInput(snap *catalog.Snapshot) schema {
	item := createInput(snap)
	return schema{
		"type": "object",
		"properties": schema{
			"entities": schema{"type": "array", "items": item, "maxItems": maxBatch},
		},
		"required": []string{"entities"},
	}
}

func findInput(snap *catalog.Snapshot) schema {
	return schema{
		"type": "object",
		"properties": schema{
			"class":         classArg(snap, false),
			"where":         schema{"type": "object", "description": "Slot values the instances must have (equality; for a list slot, membership)."},
			"name":          schema{"type": "string", "description": "Only the instance with this name."},
			"labelSelector": schema{"type": "string", "description": "A Kubernetes label selector, as app=shop,tier!=test."},
			"namespace":     namespaceArg,
			"limit":         schema{"type": "integer", "minimum": 1, "maximum": maxFindLimit, "description": "At most this many instances (default 20)."},
			"continue":      schema{"type": "string", "description": "The continue token of a previous call, for the next page."},
			"format":        schema{"type": "string", "enum": []string{"json", "markdown"}, "description": "markdown gives each instance as a Markdown document (source) instead of attributes."},
		},
		"required": []string{"class"},
	}
}

func updateInput(snap *catalog.Snapshot) schema {
	return schema{
		"type": "object",
		"properties": schema{
			"class":           classArg(snap, true),
			"name":            schema{"type": "string", "description": "Name of the instance."},
			"namespace":       namespaceArg,
			"attributes":      schema{"type": "object", "description": "Slot values to set; null removes a slot."},
			"resourceVersion": schema{"type": "string", "description": "Fail unless the instance is still at this version (from find or create)."},
		},
		"required": []string{"class", "name", "attributes"},
	}
}

func instanceOfInput(snap *catalog.Snapshot) schema {
	return schema{
		"type": "object",
		"properties": schema{
			"class":     schema{"type": "string", "description": "The class of the instance, as prefix/Kind."},
			"name":      schema{"type": "string", "description": "Name of the instance."},
			"namespace": namespaceArg,
			"of":        classArg(snap, false),
		},
		"required": []string{"class", "name", "of"},
	}
}

func subclassOfInput(snap *catalog.Snapshot) schema {
	return schema{
		"type":       "object",
		"properties": schema{"class": classArg(snap, false), "of": classArg(snap, false)},
		"required":   []string{"class", "of"},
	}
}

// --- introspection ----------------------------------------------------------------

func (c *call) idents(names []string) []string {
	out := []string{}
	for _, n := range names {
		if cl, ok := c.snap.Classes[n]; ok {
			out = append(out, cl.Ident())
		} else {
			out = append(out, n)
		}
	}
	return out
}

func (c *call) listClasses() any {
	var out []map[string]any
	for _, name := range c.snap.ClassNames() {
		cl := c.snap.Classes[name]
		v := map[string]any{
			"class":       cl.Ident(),
			"name":        cl.Name,
			"description": cl.Description,
			"abstract":    cl.Abstract,
			"parents":     c.idents(cl.Parents),
			"slots":       len(cl.Slots),
			"ready":       cl.Ready,
		}
		if cl.Problem != nil {
			v["problem"] = cl.Problem.Message
		}
		out = append(out, v)
	}
	return map[string]any{"classes": nonNil(out)}
}

func (c *call) describeClass(cl *catalog.Class) any {
	v := map[string]any{
		"class":       cl.Ident(),
		"name":        cl.Name,
		"description": cl.Description,
		"abstract":    cl.Abstract,
		"parents":     c.idents(cl.Parents),
		"ancestors":   c.idents(cl.Ancestors),
		"subclasses":  c.idents(c.snap.Subclasses(cl.Name)),
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
		v["concreteSubclasses"] = c.concreteSubclasses(cl)
	}
	return v
}

func (c *call) concreteSubclasses(cl *catalog.Class) []string {
	out := []string{}
	for _, n := range c.snap.Subclasses(cl.Name) {
		if sub := c.snap.Classes[n]; !sub.Abstract {
			out = append(out, sub.Ident())
		}
	}
	return out
}

func directSlots(cl *catalog.Class) []catalog.Slot {
	var out []catalog.Slot
	for _, s := range cl.Slots {
		if s.From == cl.Name {
			out = append(out, s)
		}
	}
	return out
}

func slotViews(slots []catalog.Slot) []map[string]any {
	out := []map[string]any{}
	for _, s := range slots {
		out = append(out, slotView(s))
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

func (c *call) listProperties() any {
	names := make([]string, 0, len(c.snap.Properties))
	for n := range c.snap.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []map[string]any{}
	for _, n := range names {
		p := c.snap.Properties[n]
		v := slotView(p.Slot)
		delete(v, "required")
		if p.Problem != nil {
			v["problem"] = p.Problem.Message
		}
		out = append(out, v)
	}
	return map[string]any{"properties": out}
}

func datatypes() any {
	var out []map[string]any
	for _, r := range []metav1alpha1.PropertyRange{
		metav1alpha1.RangeString, metav1alpha1.RangeInteger, metav1alpha1.RangeNumber, metav1alpha1.RangeBoolean,
		metav1alpha1.RangeDateTime, metav1alpha1.RangeKeyword, metav1alpha1.RangeUUID, metav1alpha1.RangeURI,
		metav1alpha1.RangeRef, metav1alpha1.RangeJSON,
	} {
		out = append(out, map[string]any{"range": r, "schema": SlotJSONSchema(catalog.Slot{Range: r, Target: "<target>"})})
	}
	return map[string]any{"datatypes": out, "cardinality": "many wraps the schema in an array"}
}

func (c *call) domain(p *catalog.Property) any {
	declared, inherited := []string{}, []string{}
	for _, name := range c.snap.ClassNames() {
		cl := c.snap.Classes[name]
		for _, s := range cl.Slots {
			if s.Property != p.Name {
				continue
			}
			if s.From == cl.Name {
				declared = append(declared, cl.Ident())
			} else {
				inherited = append(inherited, cl.Ident())
			}
		}
	}
	return map[string]any{"property": p.Name, "declaredBy": declared, "inheritedBy": inherited}
}

func (c *call) subclassOf(_ context.Context) (any, error) {
	cl, err := c.class("class")
	if err != nil {
		return nil, err
	}
	of, err := c.class("of")
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

func (c *call) listCodecs() any {
	byFormat := map[metav1alpha1.CodecFormat][]string{}
	for _, name := range c.snap.ClassNames() {
		cl := c.snap.Classes[name]
		byFormat[cl.Codec.Format] = append(byFormat[cl.Codec.Format], cl.Ident())
	}
	return map[string]any{"codecs": []map[string]any{
		{"format": "json", "mimeType": "application/json", "classes": nonNil(byFormat[metav1alpha1.CodecJSON]),
			"description": "The attributes as a JSON object, or {\"metadata\": {...}, \"spec\": {...}}."},
		{"format": "markdown", "mimeType": "text/markdown", "classes": nonNil(byFormat[metav1alpha1.CodecMarkdown]),
			"description": "YAML front matter between --- lines with metadata and the slot values, then a \"# <field>\" section for each of the class's section slots (see spec.codec.sections in sandbar_class_describe)."},
	}}
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
