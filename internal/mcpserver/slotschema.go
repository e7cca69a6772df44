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
	"fmt"
	"sort"
	"strings"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// schema is a JSON Schema object as tools/list shows it.
type schema = map[string]any

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

// metadataSchema describes the reserved "metadata" argument of create tools.
func metadataSchema() schema {
	return schema{
		"type":        "object",
		"description": "Kubernetes metadata of the new instance. Without a name, one is generated.",
		"properties": schema{
			"name":      schema{"type": "string", "description": "Name of the instance (lower case, digits, '-' and '.')."},
			"namespace": schema{"type": "string", "description": "Namespace; defaults to the account's own."},
			"labels":    schema{"type": "object", "additionalProperties": schema{"type": "string"}},
		},
		"additionalProperties": false,
	}
}

// ClassInputSchema is the input schema of a class's create tool: one property per
// effective slot, the required slots required, and the reserved "metadata".
func ClassInputSchema(c *catalog.Class) schema {
	props := schema{"metadata": metadataSchema()}
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
