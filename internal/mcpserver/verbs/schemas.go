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

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// schema is a JSON Schema object as tools/list shows it.
type schema = map[string]any

// metadataSchema is the schema of the metadata argument of create tools.
var metadataSchema = mustSchema[Metadata]("Kubernetes metadata of the new instance. Without a name, one is generated.")

func mustSchema[T any](description string) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // a plain struct of strings: For cannot fail on it, and would stop every binary at start if it did
	}
	s.Description = description
	return s
}

// ClassInputSchema is the input schema of a class's create tool: one property per
// effective slot, the required slots required, and the reserved "metadata".
func ClassInputSchema(c *catalog.Class) schema {
	props := schema{"metadata": metadataSchema}
	for _, s := range c.Slots {
		props[s.Field] = catalog.SlotJSONSchema(*s)
	}
	out := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(c.Required) > 0 {
		req := append([]string(nil), c.Required...)
		sort.Strings(req)
		out["required"] = req
	}
	return out
}
