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
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

func slot(field string, r metav1alpha1.PropertyRange) catalog.Slot {
	return catalog.Slot{Property: "zorp." + field, Field: field, Range: r, Cardinality: metav1alpha1.CardinalityOne}
}

func many(s catalog.Slot) catalog.Slot {
	s.Cardinality = metav1alpha1.CardinalityMany
	return s
}

func withEnum(s catalog.Slot, e ...string) catalog.Slot { s.Enum = e; return s }

// spaceBoot is a class with required, constrained, many-valued and free-form slots.
func spaceBoot() *catalog.Class {
	crew := many(slot("crew", metav1alpha1.RangeRef))
	crew.Target = "zorp.crew"
	crew.Required = true
	name := slot("name", metav1alpha1.RangeString)
	name.Required = true
	size := slot("size", metav1alpha1.RangeInteger)
	size.Required = true
	return &catalog.Class{
		Name: "zorp.spaceboot", Prefix: "zorp", Kind: "SpaceBoot",
		Slots: []catalog.Slot{
			name, size, crew,
			withEnum(slot("colour", metav1alpha1.RangeKeyword), "zorp/red", "zorp/green"),
			slot("launched", metav1alpha1.RangeDateTime),
			many(slot("tags", metav1alpha1.RangeString)),
			slot("notes", metav1alpha1.RangeJSON),
		},
		Required: []string{"size", "name", "crew"},
	}
}

func TestPureSlotJSONSchema(t *testing.T) {
	ref := slot("crew", metav1alpha1.RangeRef)
	ref.Target = "zorp.crew"
	described := slot("name", metav1alpha1.RangeString)
	described.Description = "The boot's name."
	describedKeyword := many(slot("tags", metav1alpha1.RangeKeyword))
	describedKeyword.Description = "Tags."
	constrained := withEnum(slot("colour", metav1alpha1.RangeString), "red", "green")
	constrained.Pattern = "^[a-z]+$"
	constrained.MaxLength = i64(5)
	bounded := slot("size", metav1alpha1.RangeInteger)
	bounded.Minimum, bounded.Maximum = f64(1), f64(10)
	manyEnum := many(withEnum(slot("colours", metav1alpha1.RangeString), "red"))
	manyEnum.Description = "Colours."

	cases := []struct {
		name string
		slot catalog.Slot
		// want is the schema without its description(s).
		want schema
		// wantDesc are substrings of the top-level description; none means no description.
		wantDesc []string
	}{
		{"string", slot("v", metav1alpha1.RangeString), schema{"type": "string"}, nil},
		{"string with description", described, schema{"type": "string"}, []string{"The boot's name."}},
		{"integer", slot("v", metav1alpha1.RangeInteger), schema{"type": "integer"}, nil},
		{"number", slot("v", metav1alpha1.RangeNumber), schema{"type": "number"}, nil},
		{"boolean", slot("v", metav1alpha1.RangeBoolean), schema{"type": "boolean"}, nil},
		{"date-time", slot("v", metav1alpha1.RangeDateTime), schema{"type": "string", "format": "date-time"}, nil},
		{"keyword", slot("v", metav1alpha1.RangeKeyword), schema{"type": "string"}, []string{"ns/name"}},
		{"uuid", slot("v", metav1alpha1.RangeUUID), schema{"type": "string", "format": "uuid"}, nil},
		{"uri", slot("v", metav1alpha1.RangeURI), schema{"type": "string", "format": "uri"}, nil},
		{"ref", ref, schema{"type": "string"}, []string{"zorp.crew"}},
		{"json", slot("v", metav1alpha1.RangeJSON), schema{}, []string{"JSON"}},
		{"many integer", many(slot("v", metav1alpha1.RangeInteger)), schema{"type": "array", "items": schema{"type": "integer"}}, nil},
		{"many keyword, description on the array", describedKeyword, schema{"type": "array", "items": schema{"type": "string"}}, []string{"Tags.", "ns/name"}},
		{"many json", many(slot("v", metav1alpha1.RangeJSON)), schema{"type": "array", "items": schema{}}, []string{"JSON"}},
		{"enum, pattern, maxLength", constrained, schema{"type": "string", "enum": []string{"red", "green"}, "pattern": "^[a-z]+$", "maxLength": int64(5)}, nil},
		{"minimum, maximum", bounded, schema{"type": "integer", "minimum": 1.0, "maximum": 10.0}, nil},
		{"many with enum", manyEnum, schema{"type": "array", "items": schema{"type": "string", "enum": []string{"red"}}}, []string{"Colours."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SlotJSONSchema(tc.slot)
			desc, hasDesc := got["description"]
			rest := schema{}
			for k, v := range got {
				if k != "description" {
					rest[k] = v
				}
			}
			if !reflect.DeepEqual(rest, tc.want) {
				t.Errorf("SlotJSONSchema = %#v, want %#v (plus description)", got, tc.want)
			}
			if items, ok := got["items"].(schema); ok {
				if _, ok := items["description"]; ok {
					t.Errorf("the items of a many-valued slot carry a description: %#v", items)
				}
			}
			if len(tc.wantDesc) == 0 {
				if hasDesc {
					t.Errorf("unexpected description %q", desc)
				}
				return
			}
			s, _ := desc.(string)
			for _, w := range tc.wantDesc {
				if !strings.Contains(s, w) {
					t.Errorf("description %q does not mention %q", s, w)
				}
			}
		})
	}
}

func TestPureSlotJSONSchemaCopiesEnum(t *testing.T) {
	s := withEnum(slot("v", metav1alpha1.RangeString), "red", "green")
	got := SlotJSONSchema(s)
	got["enum"].([]string)[0] = "changed"
	if s.Enum[0] != "red" {
		t.Errorf("SlotJSONSchema shares the slot's enum: %q", s.Enum)
	}
}

func TestPureClassInputSchema(t *testing.T) {
	cases := []struct {
		name         string
		class        *catalog.Class
		wantRequired []string
	}{
		{"required sorted", spaceBoot(), []string{"crew", "name", "size"}},
		{"nothing required", &catalog.Class{Name: "zorp.note", Prefix: "zorp", Kind: "Note",
			Slots: []catalog.Slot{slot("text", metav1alpha1.RangeString)}}, nil},
		{"no slots", &catalog.Class{Name: "zorp.empty", Prefix: "zorp", Kind: "Empty"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]string(nil), tc.class.Required...)
			got := ClassInputSchema(tc.class)
			if got["type"] != "object" {
				t.Errorf("type = %#v, want object", got["type"])
			}
			if got["additionalProperties"] != false {
				t.Errorf("additionalProperties = %#v, want false", got["additionalProperties"])
			}
			req, hasReq := got["required"]
			switch {
			case tc.wantRequired == nil && hasReq:
				t.Errorf("required = %#v, want no required key", req)
			case tc.wantRequired != nil && !reflect.DeepEqual(req, tc.wantRequired):
				t.Errorf("required = %#v, want %#v", req, tc.wantRequired)
			}
			if !reflect.DeepEqual(tc.class.Required, before) {
				t.Errorf("ClassInputSchema reordered the class's Required: %q, was %q", tc.class.Required, before)
			}
			props, ok := got["properties"].(schema)
			if !ok {
				t.Fatalf("properties = %#v", got["properties"])
			}
			if len(props) != len(tc.class.Slots)+1 {
				t.Errorf("%d properties, want %d slots and metadata", len(props), len(tc.class.Slots))
			}
			md, ok := props["metadata"].(*jsonschema.Schema)
			if !ok || md.Type != "object" || md.AdditionalProperties == nil || len(md.Properties) != 3 ||
				md.Properties["name"].Type != "string" || md.Properties["labels"].AdditionalProperties.Type != "string" {
				t.Errorf("metadata = %v, want an object of name, namespace and labels and nothing else", props["metadata"])
			}
			for _, s := range tc.class.Slots {
				if !reflect.DeepEqual(props[s.Field], SlotJSONSchema(s)) {
					t.Errorf("property %q = %#v, want %#v", s.Field, props[s.Field], SlotJSONSchema(s))
				}
			}
		})
	}
}
