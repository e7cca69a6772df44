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
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"sort"
	"strings"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
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

// SlotJSONSchema is the JSON Schema of a slot's value in tool arguments, following
// the metamodel's type table: string, integer, number and boolean as themselves;
// date-time, uuid and uri as strings with that format; keyword as a string such as
// "ns/name"; ref as the name of an instance of the target class; json as any value;
// cardinality many as an array. Descriptions and constraints carry through.
func SlotJSONSchema(s catalog.Slot) schema {
	v := schema{}
	var hint string
	switch s.Range {
	case metav1alpha1.RangeInteger:
		v["type"] = "integer"
	case metav1alpha1.RangeNumber:
		v["type"] = "number"
	case metav1alpha1.RangeBoolean:
		v["type"] = "boolean"
	case metav1alpha1.RangeDateTime:
		v["type"], v["format"] = "string", "date-time"
	case metav1alpha1.RangeUUID:
		v["type"], v["format"] = "string", "uuid"
	case metav1alpha1.RangeURI:
		v["type"], v["format"] = "string", "uri"
	case metav1alpha1.RangeKeyword:
		v["type"] = "string"
		hint = "Keyword string, such as \"ns/name\"."
	case metav1alpha1.RangeRef:
		v["type"] = "string"
		hint = fmt.Sprintf("Reference to another entity: the name of a %s instance.", s.Target)
	case metav1alpha1.RangeJSON:
		hint = "Any JSON value."
	default:
		v["type"] = "string"
	}
	if len(s.Enum) > 0 {
		v["enum"] = append([]string(nil), s.Enum...)
	}
	if s.Pattern != "" {
		v["pattern"] = s.Pattern
	}
	if s.MaxLength != nil {
		v["maxLength"] = *s.MaxLength
	}
	if s.Minimum != nil {
		v["minimum"] = *s.Minimum
	}
	if s.Maximum != nil {
		v["maximum"] = *s.Maximum
	}
	desc := strings.TrimSpace(s.Description + " " + hint)
	if s.Many() {
		out := schema{"type": "array", "items": v}
		if desc != "" {
			out["description"] = desc
		}
		return out
	}
	if desc != "" {
		v["description"] = desc
	}
	return v
}

// ClassInputSchema is the input schema of a class's create tool: one property per
// effective slot, the required slots required, and the reserved "metadata".
func ClassInputSchema(c *catalog.Class) schema {
	props := schema{"metadata": metadataSchema}
	for _, s := range c.Slots {
		props[s.Field] = SlotJSONSchema(s)
	}
	out := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(c.Required) > 0 {
		req := append([]string(nil), c.Required...)
		sort.Strings(req)
		out["required"] = req
	}
	return out
}

func exampleValue(s catalog.Slot) any {
	var v any
	switch {
	case len(s.Enum) > 0:
		v = s.Enum[0]
	default:
		switch s.Range {
		case "integer":
			v = 1
		case "number":
			v = 1.5
		case "boolean":
			v = true
		case "date-time":
			v = "2026-01-31T12:00:00Z"
		case "uuid":
			v = "123e4567-e89b-12d3-a456-426614174000"
		case "uri":
			v = "https://example.com/"
		case "keyword":
			v = "ns/name"
		case "ref":
			v = "name-of-" + strings.ToLower(s.Target)
		case "json":
			v = map[string]any{}
		default:
			v = "text"
		}
	}
	if s.Many() {
		return []any{v}
	}
	return v
}
