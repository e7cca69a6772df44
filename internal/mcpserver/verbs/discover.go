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
	"maps"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// CreateSchema is a class's create arguments, for the generic create.
type CreateSchema struct {
	Class       string `json:"class" jsonschema:"The class, as prefix/Kind."`
	Tool        string `json:"tool" jsonschema:"The tool that takes these arguments."`
	InputSchema schema `json:"inputSchema" jsonschema:"The JSON Schema of the tool's arguments for this class: its attributes are the class's slots."`
	Next        string `json:"next" jsonschema:"What to call with them."`
}

// discoveryVerbs give, on demand, what a per-class tool would have shown: for an
// account past its clients' tool limit, a class's create arguments are one call away
// instead of out of sight.
func (e *Env) discoveryVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "entity", Name: "schema", Title: "Create schema of a class", ReadOnly: true, Idempotent: true,
			Description: "The arguments sandbar_entity_create takes for one class, as a JSON Schema: {class}. " +
				"Its attributes are the class's slots, with their types and which are required."},
			func(_ context.Context, c *tool.Call, in classArgs) (CreateSchema, error) {
				cl, err := class(c, in.Class)
				if err != nil {
					return CreateSchema{}, err
				}
				if err := concrete(c.Snap, cl); err != nil {
					return CreateSchema{}, err
				}
				attrs := maps.Clone(ClassInputSchema(cl))
				props := maps.Clone(attrs["properties"].(schema))
				delete(props, "metadata")
				attrs["properties"] = props
				create := tool.Encode(c.Style, "sandbar.entity.create")
				args := schema{"type": "object", "additionalProperties": false, "required": []string{"class", "attributes"},
					"properties": schema{
						"class":      schema{"const": cl.Ident()},
						"attributes": attrs,
						"metadata":   metadataSchema,
					}}
				return CreateSchema{Class: cl.Ident(), Tool: create, InputSchema: args,
					Next: "call " + create + " with arguments that match inputSchema"}, nil
			}).Patch(enum("class", classes(true))),
	}
}
