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

package instanceapi

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

func one(field string, r metav1alpha1.PropertyRange) catalog.Slot {
	return catalog.Slot{Definition: &catalog.Definition{Property: "zorp." + field, Field: field, Range: r, Cardinality: metav1alpha1.CardinalityOne}}
}

func many(field string, r metav1alpha1.PropertyRange) catalog.Slot {
	s := one(field, r)
	s.Cardinality = metav1alpha1.CardinalityMany
	return s
}

func required(s catalog.Slot) catalog.Slot {
	s.Required = true
	return s
}

// classWith resolves nothing: it builds the catalog.Class that ResolveClass would
// return for slots, with Required derived from them.
func classWith(slots ...catalog.Slot) *catalog.Class {
	c := &catalog.Class{
		Name:      "zorp.space-boot",
		Prefix:    "zorp",
		Kind:      "SpaceBoot",
		Ancestors: []string{"footwear.footwear"},
	}
	for _, s := range slots {
		c.Slots = append(c.Slots, &s)
	}
	for _, s := range slots {
		if s.Required {
			c.Required = append(c.Required, s.Field)
		}
	}
	return c
}

func enumJSON(vs ...string) []apiextensionsv1.JSON {
	var out []apiextensionsv1.JSON
	for _, v := range vs {
		raw, _ := json.Marshal(v)
		out = append(out, apiextensionsv1.JSON{Raw: raw})
	}
	return out
}

// ---- SlotSchema -----------------------------------------------------------------

func TestSlotSchema(t *testing.T) {
	withDesc := func(s catalog.Slot, d string) catalog.Slot { s = s.Own(); s.Description = d; return s }
	withTarget := func(s catalog.Slot, target string) catalog.Slot { s = s.Own(); s.Target = target; return s }
	str := func(s catalog.Slot, pattern string, maxLen int64, enum ...string) catalog.Slot {
		s = s.Own()
		s.Pattern, s.MaxLength, s.Enum = pattern, &maxLen, enum
		return s
	}
	num := func(s catalog.Slot, lo, hi float64) catalog.Slot {
		s = s.Own()
		s.Minimum, s.Maximum = &lo, &hi
		return s
	}

	tests := []struct {
		desc string
		slot catalog.Slot
		want apiextensionsv1.JSONSchemaProps
	}{
		{"string", withDesc(one("name", metav1alpha1.RangeString), "The name."),
			apiextensionsv1.JSONSchemaProps{Type: "string", Description: "The name."}},
		{"empty range is a string", one("name", ""),
			apiextensionsv1.JSONSchemaProps{Type: "string", Description: `Unknown range "".`}},
		{"an unknown range is a string and says so", withDesc(one("hue", "colour"), "The hue."),
			apiextensionsv1.JSONSchemaProps{Type: "string", Description: `The hue. Unknown range "colour".`}},
		{"integer", one("count", metav1alpha1.RangeInteger),
			apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}},
		{"number", one("weight", metav1alpha1.RangeNumber),
			apiextensionsv1.JSONSchemaProps{Type: "number", Format: "double"}},
		{"boolean", one("worn", metav1alpha1.RangeBoolean),
			apiextensionsv1.JSONSchemaProps{Type: "boolean"}},
		{"date-time", one("launched", metav1alpha1.RangeDateTime),
			apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}},
		{"uuid", one("id", metav1alpha1.RangeUUID),
			apiextensionsv1.JSONSchemaProps{Type: "string", Format: "uuid"}},
		{"uri", one("home", metav1alpha1.RangeURI),
			apiextensionsv1.JSONSchemaProps{Type: "string", Format: "uri"}},
		{"keyword", withDesc(one("color", metav1alpha1.RangeKeyword), "The colour."),
			apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: `^:?[A-Za-z_*+!?<>=-][A-Za-z0-9_*+!?<>=.-]*(/[A-Za-z_*+!?<>=-][A-Za-z0-9_*+!?<>=.-]*)?$`,
				Description: `The colour. Keyword string, such as "ns/name".`}},
		{"ref", withTarget(one("owner", metav1alpha1.RangeRef), "zorp.alien"),
			apiextensionsv1.JSONSchemaProps{Type: "string",
				Description: "Reference: the name of a zorp.alien instance in the same namespace."}},
		{"json", withDesc(one("extra", metav1alpha1.RangeJSON), "Anything."),
			apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true), Description: "Anything."}},
		{"many integers", withDesc(many("sizes", metav1alpha1.RangeInteger), "Sizes."),
			apiextensionsv1.JSONSchemaProps{Type: "array", Description: "Sizes.",
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}}}},
		{"many refs: the description is on the array", withTarget(many("owners", metav1alpha1.RangeRef), "zorp.alien"),
			apiextensionsv1.JSONSchemaProps{Type: "array",
				Description: "Reference: the name of a zorp.alien instance in the same namespace.",
				Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}},
		{"many json", many("extras", metav1alpha1.RangeJSON),
			apiextensionsv1.JSONSchemaProps{Type: "array",
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}}}},
		{"string constraints", str(one("code", metav1alpha1.RangeString), `^[a-z]+$`, 4, "red", "blue"),
			apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: `^[a-z]+$`, MaxLength: ptr(int64(4)), Enum: enumJSON("red", "blue")}},
		{"enum values are JSON strings", str(one("quote", metav1alpha1.RangeString), "", 32, `say "hi"`, `back\slash`, "ünï", "del\x7fand\vtab"),
			apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr(int64(32)), Enum: enumJSON(`say "hi"`, `back\slash`, "ünï", "del\x7fand\vtab")}},
		{"integer bounds", num(one("count", metav1alpha1.RangeInteger), 0, 8),
			apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64", Minimum: ptr(0.0), Maximum: ptr(8.0)}},
		{"number bounds", num(one("weight", metav1alpha1.RangeNumber), -1.5, 2.5),
			apiextensionsv1.JSONSchemaProps{Type: "number", Format: "double", Minimum: ptr(-1.5), Maximum: ptr(2.5)}},
		{"constraints go on the items of many", str(many("codes", metav1alpha1.RangeString), `^[a-z]+$`, 4, "red"),
			apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "string", Pattern: `^[a-z]+$`, MaxLength: ptr(int64(4)), Enum: enumJSON("red")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := SlotSchema(tt.slot)
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tt.want)
				t.Errorf("SlotSchema =\n  %s\nwant\n  %s", g, w)
			}
			for _, e := range enumValues(got) {
				var s string
				if err := json.Unmarshal(e.Raw, &s); err != nil {
					t.Errorf("enum value %s is not a JSON string: %v", e.Raw, err)
				}
			}
		})
	}
}

func enumValues(s apiextensionsv1.JSONSchemaProps) []apiextensionsv1.JSON {
	if s.Items != nil && s.Items.Schema != nil {
		return s.Items.Schema.Enum
	}
	return s.Enum
}

func TestKeywordPattern(t *testing.T) {
	keyword, _ := catalog.RangeOf(metav1alpha1.RangeKeyword)
	re := regexp.MustCompile(keyword.CRDPattern)
	for _, ok := range []string{"zorp/red", ":zorp/red", "red", "a.b/c-d", "ns/name?"} {
		if !re.MatchString(ok) {
			t.Errorf("keyword pattern rejects %q", ok)
		}
	}
	for _, bad := range []string{"", "zorp/red/blue", "zorp/", "/red", "1zorp/red", "zorp red"} {
		if re.MatchString(bad) {
			t.Errorf("keyword pattern accepts %q", bad)
		}
	}
}

// ---- Schema ---------------------------------------------------------------------

func TestSchema(t *testing.T) {
	tests := []struct {
		desc         string
		class        *catalog.Class
		specRequired []string
		rootRequired []string
	}{
		{"some required", classWith(required(one("name", metav1alpha1.RangeString)), one("size", metav1alpha1.RangeInteger),
			required(one("tentacleCount", metav1alpha1.RangeInteger))),
			[]string{"name", "tentacleCount"}, []string{"spec"}},
		{"none required", classWith(one("name", metav1alpha1.RangeString), one("size", metav1alpha1.RangeInteger)),
			nil, nil},
		{"no slots", classWith(), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			root := Schema(tt.class)
			if root.Type != "object" {
				t.Errorf("root type = %q, want object", root.Type)
			}
			if !reflect.DeepEqual(root.Required, tt.rootRequired) {
				t.Errorf("root required = %q, want %q", root.Required, tt.rootRequired)
			}
			for _, f := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
				if _, ok := root.Properties[f]; !ok {
					t.Errorf("root has no %s", f)
				}
			}
			if st := root.Properties["status"]; st.Type != "object" || st.XPreserveUnknownFields == nil || !*st.XPreserveUnknownFields {
				t.Errorf("status = %+v, want a free-form object", st)
			}
			spec := root.Properties["spec"]
			if spec.Type != "object" {
				t.Errorf("spec type = %q, want object", spec.Type)
			}
			if !reflect.DeepEqual(spec.Required, tt.specRequired) {
				t.Errorf("spec required = %q, want %q", spec.Required, tt.specRequired)
			}
			if len(spec.Properties) != len(tt.class.Slots) {
				t.Errorf("spec has %d properties, want %d", len(spec.Properties), len(tt.class.Slots))
			}
			for _, s := range tt.class.Slots {
				if got, want := spec.Properties[s.Field], SlotSchema(*s); !reflect.DeepEqual(got, want) {
					t.Errorf("spec.%s = %+v, want %+v", s.Field, got, want)
				}
			}
			for _, w := range []string{"zorp/SpaceBoot", "footwear.footwear"} {
				if !strings.Contains(root.Description, w) {
					t.Errorf("description %q does not mention %s", root.Description, w)
				}
			}
		})
	}
}

func TestSchemaDoesNotShareRequired(t *testing.T) {
	c := classWith(required(one("name", metav1alpha1.RangeString)))
	root := Schema(c)
	root.Properties["spec"].Required[0] = "changed"
	if c.Required[0] != "name" {
		t.Errorf("modifying the schema changed the class's required fields to %q", c.Required)
	}
}

// ---- CRD ------------------------------------------------------------------------

func TestCRD(t *testing.T) {
	c := classWith(
		one("name", metav1alpha1.RangeString),
		one("size", metav1alpha1.RangeInteger),
		required(many("tags", metav1alpha1.RangeKeyword)), // many: no column
		required(one("extra", metav1alpha1.RangeJSON)),    // json: no column
		required(one("tentacleCount", metav1alpha1.RangeInteger)),
		one("launched", metav1alpha1.RangeDateTime),
		one("weight", metav1alpha1.RangeNumber), // fifth candidate: no column
		required(one("worn", metav1alpha1.RangeBoolean)),
	)
	c.InstanceAPIOptions.ShortNames = []string{"sb"}
	crd := CRD(c, []string{"Gear", "Footwear", "footwear"})

	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
		t.Errorf("type = %s %s", crd.APIVersion, crd.Kind)
	}
	if crd.Name != "spaceboots.zorp.sandbar.dev" {
		t.Errorf("name = %q, want spaceboots.zorp.sandbar.dev", crd.Name)
	}
	wantLabels := map[string]string{
		"meta.sandbar.dev/class":       "zorp.space-boot",
		"app.kubernetes.io/managed-by": "sandbar",
	}
	if !reflect.DeepEqual(crd.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", crd.Labels, wantLabels)
	}
	if crd.Spec.Group != "zorp.sandbar.dev" {
		t.Errorf("group = %q", crd.Spec.Group)
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("scope = %q, want Namespaced", crd.Spec.Scope)
	}
	wantNames := apiextensionsv1.CustomResourceDefinitionNames{
		Plural:     "spaceboots",
		Singular:   "spaceboot",
		Kind:       "SpaceBoot",
		ListKind:   "SpaceBootList",
		ShortNames: []string{"sb"},
		Categories: []string{"sandbar-instances", "zorp", "footwear", "gear"},
	}
	if !reflect.DeepEqual(crd.Spec.Names, wantNames) {
		t.Errorf("names =\n  %+v\nwant\n  %+v", crd.Spec.Names, wantNames)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%d versions, want 1", len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != "v1" || !v.Served || !v.Storage {
		t.Errorf("version %s served=%v storage=%v, want v1 served and stored", v.Name, v.Served, v.Storage)
	}
	if v.Subresources == nil || v.Subresources.Status == nil || v.Subresources.Scale != nil {
		t.Errorf("subresources = %+v, want status only", v.Subresources)
	}
	if v.Schema == nil || !reflect.DeepEqual(v.Schema.OpenAPIV3Schema, Schema(c)) {
		t.Errorf("schema is not Schema(class)")
	}
	wantCols := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Tentacle-Count", Type: "integer", JSONPath: ".spec.tentacleCount"},
		{Name: "Worn", Type: "boolean", JSONPath: ".spec.worn"},
		{Name: "Spec-Name", Type: "string", JSONPath: ".spec.name"},
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	if !reflect.DeepEqual(v.AdditionalPrinterColumns, wantCols) {
		t.Errorf("printer columns =\n  %+v\nwant\n  %+v", v.AdditionalPrinterColumns, wantCols)
	}
	if _, err := json.Marshal(crd); err != nil {
		t.Errorf("the CRD does not marshal: %v", err)
	}
}

func TestCRDPluralOverride(t *testing.T) {
	c := classWith()
	c.InstanceAPIOptions.Plural = "boots"
	crd := CRD(c, nil)
	if crd.Name != "boots.zorp.sandbar.dev" || crd.Spec.Names.Plural != "boots" {
		t.Errorf("name %q plural %q, want boots.zorp.sandbar.dev and boots", crd.Name, crd.Spec.Names.Plural)
	}
	if got, want := crd.Spec.Names.Categories, []string{"sandbar-instances", "zorp"}; !reflect.DeepEqual(got, want) {
		t.Errorf("categories = %q, want %q", got, want)
	}
}

func TestPrinterColumns(t *testing.T) {
	col := func(name, typ, field string) apiextensionsv1.CustomResourceColumnDefinition {
		return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: typ, JSONPath: ".spec." + field}
	}
	age := apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}
	tests := []struct {
		desc  string
		slots []catalog.Slot
		want  []apiextensionsv1.CustomResourceColumnDefinition
	}{
		{"no slots: age only", nil, []apiextensionsv1.CustomResourceColumnDefinition{age}},
		{"only many and json slots: age only",
			[]catalog.Slot{many("tags", metav1alpha1.RangeString), one("extra", metav1alpha1.RangeJSON)},
			[]apiextensionsv1.CustomResourceColumnDefinition{age}},
		{"an unknown range has no column",
			[]catalog.Slot{one("hue", "colour"), one("name", metav1alpha1.RangeString)},
			[]apiextensionsv1.CustomResourceColumnDefinition{col("Spec-Name", "string", "name"), age}},
		{"types by range", []catalog.Slot{
			one("id", metav1alpha1.RangeUUID), one("weight", metav1alpha1.RangeNumber),
			one("launched", metav1alpha1.RangeDateTime), one("owner", metav1alpha1.RangeRef)},
			[]apiextensionsv1.CustomResourceColumnDefinition{
				col("Id", "string", "id"), col("Weight", "number", "weight"),
				col("Launched", "date", "launched"), col("Owner", "string", "owner"), age}},
		{"required first, then slot order, at most four", []catalog.Slot{
			one("a", metav1alpha1.RangeString), required(one("b", metav1alpha1.RangeString)),
			one("c", metav1alpha1.RangeString), required(one("d", metav1alpha1.RangeString)),
			one("e", metav1alpha1.RangeString)},
			[]apiextensionsv1.CustomResourceColumnDefinition{
				col("B", "string", "b"), col("D", "string", "d"), col("A", "string", "a"), col("C", "string", "c"), age}},
		{"slots named like kubectl's own columns are prefixed", []catalog.Slot{
			one("name", metav1alpha1.RangeString), one("namespace", metav1alpha1.RangeString),
			one("age", metav1alpha1.RangeInteger), one("nameTag", metav1alpha1.RangeString)},
			[]apiextensionsv1.CustomResourceColumnDefinition{
				col("Spec-Name", "string", "name"), col("Spec-Namespace", "string", "namespace"),
				col("Spec-Age", "integer", "age"), col("Name-Tag", "string", "nameTag"), age}},
		{"more than four required", []catalog.Slot{
			required(one("a", metav1alpha1.RangeString)), required(one("b", metav1alpha1.RangeString)),
			required(one("c", metav1alpha1.RangeString)), one("x", metav1alpha1.RangeString),
			required(one("d", metav1alpha1.RangeString)), required(one("e", metav1alpha1.RangeString))},
			[]apiextensionsv1.CustomResourceColumnDefinition{
				col("A", "string", "a"), col("B", "string", "b"), col("C", "string", "c"), col("D", "string", "d"), age}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := PrinterColumns(classWith(tt.slots...))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("columns =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

func TestSelectableSlots(t *testing.T) {
	tests := []struct {
		desc  string
		slots []catalog.Slot
		want  []string
	}{
		{"no slots", nil, nil},
		{"strings, integers and booleans of every string range; no numbers, lists, JSON or unknown ranges", []catalog.Slot{
			one("name", metav1alpha1.RangeString), one("count", metav1alpha1.RangeInteger), one("on", metav1alpha1.RangeBoolean),
			one("at", metav1alpha1.RangeDateTime), one("kw", metav1alpha1.RangeKeyword), one("id", metav1alpha1.RangeUUID),
			one("price", metav1alpha1.RangeNumber), many("tags", metav1alpha1.RangeString), one("extra", metav1alpha1.RangeJSON),
			one("hue", "colour")},
			[]string{"name", "count", "on", "at", "kw", "id"}},
		{"required first, then slot order, at most eight", []catalog.Slot{
			one("a", metav1alpha1.RangeString), one("b", metav1alpha1.RangeString), one("c", metav1alpha1.RangeString),
			one("d", metav1alpha1.RangeString), one("e", metav1alpha1.RangeString), one("f", metav1alpha1.RangeString),
			one("g", metav1alpha1.RangeString), one("h", metav1alpha1.RangeString), required(one("r", metav1alpha1.RangeRef))},
			[]string{"r", "a", "b", "c", "d", "e", "f", "g"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := SelectableSlots(classWith(tt.slots...)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("selectable slots = %v, want %v", got, tt.want)
			}
			fields := CRD(classWith(tt.slots...), nil).Spec.Versions[0].SelectableFields
			if len(fields) != len(tt.want) {
				t.Fatalf("CRD selectable fields = %+v, want one per slot %v", fields, tt.want)
			}
			for i, f := range fields {
				if f.JSONPath != ".spec."+tt.want[i] {
					t.Errorf("CRD selectable field %d = %q, want .spec.%s", i, f.JSONPath, tt.want[i])
				}
			}
		})
	}
}

// ---- BreakingChanges ------------------------------------------------------------

func TestBreakingChanges(t *testing.T) {
	base := []catalog.Slot{
		required(one("name", metav1alpha1.RangeString)),
		one("size", metav1alpha1.RangeInteger),
		one("launched", metav1alpha1.RangeString),
		one("tag", metav1alpha1.RangeString),
	}
	// Each edit changes copies of base's slots, with definitions of their own.
	edit := func(f func(slots []catalog.Slot) []catalog.Slot) *catalog.Class {
		slots := make([]catalog.Slot, len(base))
		for i, s := range base {
			slots[i] = s.Own()
		}
		return classWith(f(slots)...)
	}
	tests := []struct {
		desc  string
		next  *catalog.Class
		words [][]string // one entry per expected change
	}{
		{"no change", edit(func(s []catalog.Slot) []catalog.Slot { return s }), nil},
		{"new optional slot", edit(func(s []catalog.Slot) []catalog.Slot {
			return append(s, one("color", metav1alpha1.RangeKeyword))
		}), nil},
		{"no longer required", edit(func(s []catalog.Slot) []catalog.Slot {
			s[0].Required = false
			return s
		}), nil},
		{"constraint and description changes are not type changes", edit(func(s []catalog.Slot) []catalog.Slot {
			s[0].Description, s[0].MaxLength, s[1].Minimum = "The name.", ptr(int64(8)), ptr(0.0)
			return s
		}), nil},
		{"slot removed", edit(func(s []catalog.Slot) []catalog.Slot {
			return slices.Delete(s, 1, 2)
		}), [][]string{{`"size"`, "removed"}}},
		{"string to integer", edit(func(s []catalog.Slot) []catalog.Slot {
			s[3].Range = metav1alpha1.RangeInteger
			return s
		}), [][]string{{`"tag"`, "from string to integer"}}},
		{"integer to number", edit(func(s []catalog.Slot) []catalog.Slot {
			s[1].Range = metav1alpha1.RangeNumber
			return s
		}), [][]string{{`"size"`, "from integer to number"}}},
		{"one to many", edit(func(s []catalog.Slot) []catalog.Slot {
			s[3].Cardinality = metav1alpha1.CardinalityMany
			return s
		}), [][]string{{`"tag"`, "from string to array of string"}}},
		{"string to date-time", edit(func(s []catalog.Slot) []catalog.Slot {
			s[2].Range = metav1alpha1.RangeDateTime
			return s
		}), [][]string{{`"launched"`, "from string to string/date-time"}}},
		{"string to json", edit(func(s []catalog.Slot) []catalog.Slot {
			s[3].Range = metav1alpha1.RangeJSON
			return s
		}), [][]string{{`"tag"`, "from string to any"}}},
		{"newly required", edit(func(s []catalog.Slot) []catalog.Slot {
			s[1].Required = true
			return s
		}), [][]string{{`"size"`, "becomes required"}}},
		{"new required slot", edit(func(s []catalog.Slot) []catalog.Slot {
			return append(s, required(one("color", metav1alpha1.RangeKeyword)))
		}), [][]string{{`"color"`, "becomes required"}}},
		{"several changes, removed and retyped in field order, then required", edit(func(s []catalog.Slot) []catalog.Slot {
			s[3].Range = metav1alpha1.RangeBoolean
			s[1].Required = true
			return slices.Delete(s, 2, 3)
		}), [][]string{{`"launched"`, "removed"}, {`"tag"`, "from string to boolean"}, {`"size"`, "becomes required"}}},
	}
	old := Schema(classWith(base...))
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := BreakingChanges(old, Schema(tt.next))
			if len(got) != len(tt.words) {
				t.Fatalf("changes = %q, want %d", got, len(tt.words))
			}
			for i, words := range tt.words {
				for _, w := range words {
					if !strings.Contains(got[i], w) {
						t.Errorf("change %d %q does not contain %q", i, got[i], w)
					}
				}
			}
		})
	}
}

func TestBreakingChangesAcrossJSONRoundTrip(t *testing.T) {
	// The old schema comes back from the API server; a schema that went through JSON
	// compares equal to the one generated.
	c := classWith(required(one("name", metav1alpha1.RangeString)), many("sizes", metav1alpha1.RangeInteger),
		one("extra", metav1alpha1.RangeJSON), one("launched", metav1alpha1.RangeDateTime))
	raw, err := json.Marshal(Schema(c))
	if err != nil {
		t.Fatal(err)
	}
	var stored apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if got := BreakingChanges(&stored, Schema(c)); len(got) != 0 {
		t.Errorf("changes after a JSON round trip = %q, want none", got)
	}
}

// The CRDs generated before the schemas were trimmed update in place: the trimmed
// schema drops only descriptions, which the breaking-change guard does not look at.
func TestTrimmedSchemaIsNotABreakingChange(t *testing.T) {
	c, kinds := benchClass()
	before := crdBefore(c, kinds).Spec.Versions[0].Schema.OpenAPIV3Schema
	if got := BreakingChanges(before, Schema(c)); len(got) != 0 {
		t.Errorf("trimming the schema is seen as breaking: %q", got)
	}
	if a, b := before.Properties["apiVersion"].Description, Schema(c).Properties["apiVersion"].Description; a == "" || b != "" {
		t.Errorf("apiVersion description before %q, after %q: want the boilerplate dropped", a, b)
	}
}
