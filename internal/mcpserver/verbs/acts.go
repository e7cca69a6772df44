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
	"fmt"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// What the tools that write instances do, as the call policies see it (tool.Acts):
// the class, the namespace, the name and the slot values each call writes, whether
// they come as attributes or as a document, and for an update or a delete the
// stored instance. A call whose arguments do not read here is refused by its tool
// before it does anything.

// The policy verbs of the acts.
const (
	actCreate = "create"
	actUpdate = "update"
	actDelete = "delete"
	actImport = "import"
)

// str is a string argument, "" when it is not one.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// obj is an object argument, nil when it is not one.
func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

// decodeSource reads an instance's document in a format, as sandbar_entity_create
// takes it (cl is needed for Markdown only).
func decodeSource(cl *catalog.Class, format, source string) (*codec.Document, error) {
	switch metav1alpha1.CodecFormat(format) {
	case metav1alpha1.CodecJSON, "":
		return codec.DecodeJSON(source)
	case metav1alpha1.CodecMarkdown:
		if cl == nil {
			return nil, fmt.Errorf("a Markdown document needs a class")
		}
		return codec.DecodeMarkdown(cl, source)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// createAct is what sandbar_entity_create does with its arguments.
func createAct(c *tool.Call, args map[string]any) (tool.Act, error) {
	md := obj(args, "metadata")
	a := tool.Act{Verb: actCreate, Class: str(args, "class"), Namespace: str(md, "namespace"), Name: str(md, "name"),
		Attributes: obj(args, "attributes")}
	if src := str(args, "source"); src != "" {
		doc, err := decodeSource(c.Snap.FindClass(a.Class), str(args, "format"), src)
		if err != nil {
			return a, err
		}
		a.Attributes = doc.Attributes
		if md == nil && doc.Metadata != nil {
			// Where the tool writes it: the document's metadata, as Env.create reads it.
			a.Namespace, a.Name = str(doc.Metadata, "namespace"), str(doc.Metadata, "name")
		}
	}
	return a, nil
}

// createActs is what sandbar_entity_create does. A document that does not read
// is left to the tool, which refuses the call, saying why, before it writes.
func createActs(c *tool.Call, args map[string]any) ([]tool.Act, error) {
	a, err := createAct(c, args)
	if err != nil {
		return nil, nil
	}
	return []tool.Act{a}, nil
}

// entitiesActs are the creates of sandbar_schema_entities, one an instance.
func entitiesActs(c *tool.Call, args map[string]any) ([]tool.Act, error) {
	list, _ := args["entities"].([]any)
	acts := make([]tool.Act, 0, len(list))
	for _, item := range list {
		m, _ := item.(map[string]any)
		a, err := createAct(c, m)
		if err != nil {
			continue // the tool refuses this one, saying why, and writes it not
		}
		acts = append(acts, a)
	}
	return acts, nil
}

// classToolActs is what a class's own create tool does: its arguments are the slots.
func classToolActs(className string) tool.Acts {
	return func(_ *tool.Call, args map[string]any) ([]tool.Act, error) {
		md := obj(args, "metadata")
		attrs := make(map[string]any, len(args))
		for k, v := range args {
			if k != "metadata" {
				attrs[k] = v
			}
		}
		return []tool.Act{{Verb: actCreate, Class: className, Namespace: str(md, "namespace"), Name: str(md, "name"), Attributes: attrs}}, nil
	}
}

// stored reads the instance an act changes, as the account.
func (e *Env) stored(c *tool.Call, className, namespace, name string) func(ctx context.Context) (map[string]any, error) {
	return func(ctx context.Context) (map[string]any, error) {
		cl, err := class(c, className)
		if err != nil {
			return nil, err
		}
		u, err := e.read(ctx, c, cl, orDefault(namespace, c.Account.Namespace), name)
		if err != nil {
			return nil, err
		}
		return u.Object, nil
	}
}

// changeActs are what sandbar_entity_update and sandbar_entity_delete do.
func (e *Env) changeActs(verb string) tool.Acts {
	return func(c *tool.Call, args map[string]any) ([]tool.Act, error) {
		a := tool.Act{Verb: verb, Class: str(args, "class"), Namespace: str(args, "namespace"), Name: str(args, "name"),
			Attributes: obj(args, "attributes")}
		a.Object = e.stored(c, a.Class, a.Namespace, a.Name)
		return []tool.Act{a}, nil
	}
}

// importActs are the import itself, and each item of its bundle: an item writes an
// instance as a create or an update does, so the policies of either verb see it. A
// document is read as the import reads it (builtin.ItemDocument).
func importActs(c *tool.Call, args map[string]any) ([]tool.Act, error) {
	bundle := obj(args, "bundle")
	items, _ := bundle["items"].([]any)
	acts := make([]tool.Act, 0, len(items)+1)
	acts = append(acts, tool.Act{Verb: actImport})
	for _, it := range items {
		m, _ := it.(map[string]any)
		a := tool.Act{Verb: actImport, AlsoVerbs: []string{actCreate, actUpdate}, Class: str(m, "class"), Name: str(m, "name"),
			Attributes: obj(m, "attributes")}
		if src := str(m, "source"); src != "" {
			_, name, attrs, err := builtin.ItemDocument(c.Snap, builtin.BundleItem{Class: a.Class, Name: a.Name, Source: src})
			if err != nil {
				return nil, err
			}
			a.Name, a.Attributes = name, attrs
		}
		acts = append(acts, a)
	}
	return acts, nil
}
