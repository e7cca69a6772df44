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

package catalog_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/catalog/catalogtest"
)

// The class builders of package catalogtest, by short names.
var (
	slot      = catalogtest.Slot
	many      = catalogtest.Many
	withEnum  = catalogtest.WithEnum
	spaceBoot = catalogtest.SpaceBoot
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

func TestPureCoerceValue(t *testing.T) {
	ref := slot("v", metav1alpha1.RangeRef)
	ref.Target = "zorp.crew"
	maxLen := slot("v", metav1alpha1.RangeString)
	maxLen.MaxLength = i64(3)
	pattern := slot("v", metav1alpha1.RangeString)
	pattern.Pattern = "^[a-z]+$"
	minInt := slot("v", metav1alpha1.RangeInteger)
	minInt.Minimum = f64(1)
	maxNum := slot("v", metav1alpha1.RangeNumber)
	maxNum.Maximum = f64(10)

	cases := []struct {
		name string
		slot catalog.Slot
		in   any
		want any
		// wantErr are substrings of the one problem expected; none means success.
		wantErr []string
	}{
		// integer
		{"integer from JSON 8", slot("v", metav1alpha1.RangeInteger), float64(8), int64(8), nil},
		{"integer from JSON 8.0", slot("v", metav1alpha1.RangeInteger), 8.0, int64(8), nil},
		{"integer from string", slot("v", metav1alpha1.RangeInteger), "8", int64(8), nil},
		{"integer from padded string", slot("v", metav1alpha1.RangeInteger), " -8 ", int64(-8), nil},
		{"integer from json.Number", slot("v", metav1alpha1.RangeInteger), json.Number("8"), int64(8), nil},
		{"integer from fraction", slot("v", metav1alpha1.RangeInteger), 8.5, nil, []string{`slot "v": expected integer, got number 8.5`}},
		{"integer from word", slot("v", metav1alpha1.RangeInteger), "eight", nil, []string{`expected integer, got string "eight"`}},
		{"integer from boolean", slot("v", metav1alpha1.RangeInteger), true, nil, []string{"expected integer, got boolean true"}},
		{"integer from fractional json.Number", slot("v", metav1alpha1.RangeInteger), json.Number("8.5"), nil, []string{"expected integer"}},
		{"integer beyond 2^53", slot("v", metav1alpha1.RangeInteger), float64(1 << 54), nil, []string{"expected integer"}},
		// number
		{"number from string", slot("v", metav1alpha1.RangeNumber), "12.5", 12.5, nil},
		{"number from number", slot("v", metav1alpha1.RangeNumber), 3.0, 3.0, nil},
		{"number from json.Number", slot("v", metav1alpha1.RangeNumber), json.Number("1e3"), 1000.0, nil},
		{"number from NaN string", slot("v", metav1alpha1.RangeNumber), "NaN", nil, []string{`expected number, got string "NaN"`}},
		{"number from word", slot("v", metav1alpha1.RangeNumber), "twelve", nil, []string{"expected number"}},
		{"number from boolean", slot("v", metav1alpha1.RangeNumber), false, nil, []string{"expected number, got boolean false"}},
		// boolean
		{"boolean from string", slot("v", metav1alpha1.RangeBoolean), "true", true, nil},
		{"boolean from boolean", slot("v", metav1alpha1.RangeBoolean), false, false, nil},
		{"boolean from word", slot("v", metav1alpha1.RangeBoolean), "yes please", nil, []string{"expected boolean"}},
		{"boolean from number", slot("v", metav1alpha1.RangeBoolean), 1.0, nil, []string{"expected boolean, got number 1"}},
		// date-time
		{"date-time from RFC 3339", slot("v", metav1alpha1.RangeDateTime), "2026-11-21T10:30:00+02:00", "2026-11-21T08:30:00Z", nil},
		{"date-time from RFC 3339 UTC", slot("v", metav1alpha1.RangeDateTime), "2026-11-21T10:30:00.250Z", "2026-11-21T10:30:00.25Z", nil},
		{"date-time from date", slot("v", metav1alpha1.RangeDateTime), "2026-11-21", "2026-11-21T00:00:00Z", nil},
		{"date-time without zone", slot("v", metav1alpha1.RangeDateTime), "2026-11-21T10:30:00", "2026-11-21T10:30:00Z", nil},
		{"date-time from epoch ms", slot("v", metav1alpha1.RangeDateTime), float64(1795219200000), "2026-11-21T00:00:00Z", nil},
		{"date-time from epoch ms with ms", slot("v", metav1alpha1.RangeDateTime), float64(1795257000250), "2026-11-21T10:30:00.25Z", nil},
		{"date-time from word", slot("v", metav1alpha1.RangeDateTime), "yesterday", nil, []string{`expected date-time string (RFC 3339), got string "yesterday"`}},
		{"date-time from boolean", slot("v", metav1alpha1.RangeDateTime), true, nil, []string{"expected date-time"}},
		// uuid
		{"uuid lower-cased", slot("v", metav1alpha1.RangeUUID), "6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", nil},
		{"uuid kept", slot("v", metav1alpha1.RangeUUID), "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", nil},
		{"uuid from word", slot("v", metav1alpha1.RangeUUID), "not-a-uuid", nil, []string{`expected uuid, got string "not-a-uuid"`}},
		{"uuid from number", slot("v", metav1alpha1.RangeUUID), 42.0, nil, []string{"expected uuid"}},
		// uri
		{"uri absolute", slot("v", metav1alpha1.RangeURI), "https://x.y/z", "https://x.y/z", nil},
		{"uri relative", slot("v", metav1alpha1.RangeURI), "x/y", nil, []string{`expected an absolute URI, got string "x/y"`}},
		{"uri from number", slot("v", metav1alpha1.RangeURI), 3.0, nil, []string{"expected uri"}},
		// keyword
		{"keyword with colon", slot("v", metav1alpha1.RangeKeyword), ":zorp/red", "zorp/red", nil},
		{"keyword without colon", slot("v", metav1alpha1.RangeKeyword), "zorp/red", "zorp/red", nil},
		{"keyword without namespace", slot("v", metav1alpha1.RangeKeyword), "red", "red", nil},
		{"keyword with space", slot("v", metav1alpha1.RangeKeyword), "two words", nil, []string{`expected a keyword such as "ns/name", got string "two words"`}},
		{"keyword from number", slot("v", metav1alpha1.RangeKeyword), 1.0, nil, []string{"expected keyword string (ns/name)"}},
		// ref
		{"ref from string", ref, "crew-1", "crew-1", nil},
		{"ref from number", ref, 5.0, nil, []string{"expected the name of a zorp.crew instance, got number 5"}},
		// string
		{"string from string", slot("v", metav1alpha1.RangeString), "hello", "hello", nil},
		{"string from number", slot("v", metav1alpha1.RangeString), 5.0, nil, []string{"expected string, got number 5"}},
		{"string from object", slot("v", metav1alpha1.RangeString), map[string]any{"a": 1.0}, nil, []string{`expected string, got object {"a":1}`}},
		// json
		{"json object", slot("v", metav1alpha1.RangeJSON), map[string]any{"a": []any{1.0, "b"}}, map[string]any{"a": []any{1.0, "b"}}, nil},
		{"json string", slot("v", metav1alpha1.RangeJSON), "x", "x", nil},
		{"json number", slot("v", metav1alpha1.RangeJSON), 1.5, 1.5, nil},
		{"json boolean", slot("v", metav1alpha1.RangeJSON), true, true, nil},
		// A list is a JSON value too: the input schema of a single json slot has no
		// type and the generated CRD preserves any value.
		{"json list", slot("v", metav1alpha1.RangeJSON), []any{1.0, "b"}, []any{1.0, "b"}, nil},
		// cardinality
		{"many wraps a single value", many(slot("v", metav1alpha1.RangeString)), "a", []any{"a"}, nil},
		{"many takes a list", many(slot("v", metav1alpha1.RangeString)), []any{"a", "b"}, []any{"a", "b"}, nil},
		{"many coerces each item", many(slot("v", metav1alpha1.RangeInteger)), []any{1.0, "2"}, []any{int64(1), int64(2)}, nil},
		{"many wraps and coerces", many(slot("v", metav1alpha1.RangeKeyword)), ":zorp/red", []any{"zorp/red"}, nil},
		{"many takes an empty list", many(slot("v", metav1alpha1.RangeString)), []any{}, []any{}, nil},
		{"many reports the bad item", many(slot("v", metav1alpha1.RangeInteger)), []any{1.0, "x", 3.0}, nil, []string{`slot "v": item 1: expected integer, got string "x"`}},
		{"many json takes lists", many(slot("v", metav1alpha1.RangeJSON)), []any{[]any{1.0}, "b"}, []any{[]any{1.0}, "b"}, nil},
		{"single refuses a list", slot("v", metav1alpha1.RangeString), []any{"a"}, nil, []string{"expected a single string, got a list"}},
		{"single integer refuses a list", slot("v", metav1alpha1.RangeInteger), []any{1.0}, nil, []string{"expected a single integer, got a list"}},
		// constraints
		{"enum allowed", withEnum(slot("v", metav1alpha1.RangeString), "red", "green"), "red", "red", nil},
		{"enum refused", withEnum(slot("v", metav1alpha1.RangeString), "red", "green"), "blue", nil, []string{`string "blue" is not one of the allowed values: "red", "green"`}},
		{"enum on a keyword after the colon", withEnum(slot("v", metav1alpha1.RangeKeyword), "zorp/red"), ":zorp/red", "zorp/red", nil},
		{"enum on every item", many(withEnum(slot("v", metav1alpha1.RangeString), "red", "green")), []any{"red", "blue"}, nil, []string{"item 1:", `"red", "green"`}},
		{"maxLength allowed", maxLen, "abc", "abc", nil},
		{"maxLength counts characters", maxLen, "ééé", "ééé", nil},
		{"maxLength refused", maxLen, "abcd", nil, []string{"4 characters, at most 3 allowed"}},
		{"pattern allowed", pattern, "abc", "abc", nil},
		{"pattern refused", pattern, "ABC", nil, []string{`string "ABC" does not match the pattern ^[a-z]+$`}},
		{"minimum allowed", minInt, 1.0, int64(1), nil},
		{"minimum refused", minInt, "0", nil, []string{"0 is less than the minimum 1"}},
		{"maximum allowed", maxNum, 10.0, 10.0, nil},
		{"maximum refused", maxNum, 10.5, nil, []string{"10.5 is greater than the maximum 10"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &catalog.Class{Name: "zorp.thing", Prefix: "zorp", Kind: "Thing", Slots: []*catalog.Slot{&tc.slot}}
			spec, problems := catalog.Coerce(c, map[string]any{"v": tc.in})
			if tc.wantErr == nil {
				if len(problems) > 0 {
					t.Fatalf("catalog.Coerce(%#v) problems: %q", tc.in, problems)
				}
				if !reflect.DeepEqual(spec, map[string]any{"v": tc.want}) {
					t.Errorf("catalog.Coerce(%#v) = %#v, want %#v", tc.in, spec["v"], tc.want)
				}
				return
			}
			if len(problems) != 1 {
				t.Fatalf("catalog.Coerce(%#v) problems = %q, want exactly one", tc.in, problems)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(problems[0], w) {
					t.Errorf("problem %q does not contain %q", problems[0], w)
				}
			}
			if _, ok := spec["v"]; ok {
				t.Errorf("a refused value reached the spec: %#v", spec["v"])
			}
		})
	}
}

const spaceBootSlots = "name (string), size (integer), crew (list of the name of a zorp.crew instance), " +
	"colour (keyword string (ns/name)), launched (date-time string (RFC 3339)), tags (list of string), notes (JSON value)"

func TestPureCoerceClass(t *testing.T) {
	missingAll := `missing required slot(s): "size" (integer), "name" (string), "crew" (list of the name of a zorp.crew instance)`
	cases := []struct {
		name         string
		args         map[string]any
		wantSpec     map[string]any
		wantProblems []string
	}{
		{
			name: "all valid",
			args: map[string]any{
				"name": "Apollo", "size": "8", "crew": "ann", "colour": ":zorp/red",
				"launched": "2026-11-21", "tags": []any{"a", "b"}, "notes": map[string]any{"x": 1.0},
			},
			wantSpec: map[string]any{
				"name": "Apollo", "size": int64(8), "crew": []any{"ann"}, "colour": "zorp/red",
				"launched": "2026-11-21T00:00:00Z", "tags": []any{"a", "b"}, "notes": map[string]any{"x": 1.0},
			},
		},
		{
			name:         "nothing given",
			args:         map[string]any{},
			wantSpec:     map[string]any{},
			wantProblems: []string{missingAll},
		},
		{
			name:         "nil arguments",
			args:         nil,
			wantSpec:     map[string]any{},
			wantProblems: []string{missingAll},
		},
		{
			name:     "one missing",
			args:     map[string]any{"name": "Apollo", "crew": []any{"ann"}},
			wantSpec: map[string]any{"name": "Apollo", "crew": []any{"ann"}},
			wantProblems: []string{
				`missing required slot(s): "size" (integer)`,
			},
		},
		{
			name:     "unknown key",
			args:     map[string]any{"name": "Apollo", "size": 8.0, "crew": "ann", "wheels": 4.0},
			wantSpec: map[string]any{"name": "Apollo", "size": int64(8), "crew": []any{"ann"}},
			wantProblems: []string{
				`"wheels" is not a slot of zorp/SpaceBoot; its slots are: ` + spaceBootSlots,
			},
		},
		{
			name: "several problems at once, sorted by slot",
			args: map[string]any{
				"name": "Apollo", "size": 8.0, "crew": "ann",
				"wheels": 4.0, "launched": "yesterday", "colour": "zorp/blue", "tags": []any{"a", 2.0},
			},
			wantSpec: map[string]any{"name": "Apollo", "size": int64(8), "crew": []any{"ann"}},
			wantProblems: []string{
				`slot "colour": string "zorp/blue" is not one of the allowed values: "zorp/red", "zorp/green"`,
				`slot "launched": expected date-time string (RFC 3339), got string "yesterday"`,
				`slot "tags": item 1: expected string, got number 2`,
				`"wheels" is not a slot of zorp/SpaceBoot; its slots are: ` + spaceBootSlots,
			},
		},
		{
			name:     "missing slots come first",
			args:     map[string]any{"wheels": 4.0, "colour": "two words"},
			wantSpec: map[string]any{},
			wantProblems: []string{
				missingAll,
				`slot "colour": expected a keyword such as "ns/name", got string "two words"`,
				`"wheels" is not a slot of zorp/SpaceBoot; its slots are: ` + spaceBootSlots,
			},
		},
		{
			name:     "nulls are dropped",
			args:     map[string]any{"name": "Apollo", "size": 8.0, "crew": "ann", "launched": nil, "notes": nil, "tags": nil},
			wantSpec: map[string]any{"name": "Apollo", "size": int64(8), "crew": []any{"ann"}},
		},
		{
			name:         "a null required slot is missing",
			args:         map[string]any{"name": "Apollo", "size": nil, "crew": "ann"},
			wantSpec:     map[string]any{"name": "Apollo", "crew": []any{"ann"}},
			wantProblems: []string{`missing required slot(s): "size" (integer)`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, problems := catalog.Coerce(spaceBoot(), tc.args)
			if !reflect.DeepEqual(spec, tc.wantSpec) {
				t.Errorf("spec = %#v, want %#v", spec, tc.wantSpec)
			}
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems = %q, want %q", problems, tc.wantProblems)
			}
			for i := range problems {
				if problems[i] != tc.wantProblems[i] {
					t.Errorf("problem %d = %q, want %q", i, problems[i], tc.wantProblems[i])
				}
			}
		})
	}
}

func TestPureCoerceClassWithoutSlots(t *testing.T) {
	c := &catalog.Class{Name: "zorp.empty", Prefix: "zorp", Kind: "Empty"}
	spec, problems := catalog.Coerce(c, map[string]any{"x": 1.0})
	want := []string{`"x" is not a slot of zorp/Empty; its slots are: none`}
	if len(spec) != 0 || !reflect.DeepEqual(problems, want) {
		t.Errorf("Coerce = %#v, %q; want empty spec and %q", spec, problems, want)
	}
}

func TestPureBadRequiredValueIsNotCalledMissing(t *testing.T) {
	c := &catalog.Class{Prefix: "zorp", Kind: "Boot", Required: []string{"size"},
		Slots: []*catalog.Slot{{Definition: &catalog.Definition{Field: "size", Range: metav1alpha1.RangeInteger, Cardinality: metav1alpha1.CardinalityOne}, Required: true}}}
	_, problems := catalog.Coerce(c, map[string]any{"size": "eight"})
	if len(problems) != 1 || !strings.Contains(problems[0], `slot "size": expected integer, got string "eight"`) {
		t.Errorf("problems = %q, want only the type error", problems)
	}
}

func TestPureDescribeKeepsTextReadable(t *testing.T) {
	if got := catalog.DescribeValue("a&b<c>"); got != `string "a&b<c>"` {
		t.Errorf("describe = %s", got)
	}
	long := strings.Repeat("ü", 80)
	got := catalog.DescribeValue(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("catalog.DescribeValue(long) = %q, want valid UTF-8 cut with ...", got)
	}
}

// Instances read back from the API server carry whole numbers as int64: validating
// stored instances must accept them.
func TestPureCoerceAcceptsWhatTheAPIServerReturns(t *testing.T) {
	c := &catalog.Class{Prefix: "zorp", Kind: "Boot", Slots: []*catalog.Slot{
		{Definition: &catalog.Definition{Field: "count", Range: metav1alpha1.RangeInteger, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &catalog.Definition{Field: "price", Range: metav1alpha1.RangeNumber, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &catalog.Definition{Field: "sizes", Range: metav1alpha1.RangeInteger, Cardinality: metav1alpha1.CardinalityMany}},
	}}
	spec, problems := catalog.Coerce(c, map[string]any{"count": int64(4), "price": int64(3), "sizes": []any{int64(1), int64(2)}})
	if len(problems) > 0 {
		t.Fatalf("problems = %q, want none", problems)
	}
	if spec["count"] != int64(4) || spec["price"] != 3.0 {
		t.Errorf("spec = %#v", spec)
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
		// want is the map[string]any without its description(s).
		want map[string]any
		// wantDesc are substrings of the top-level description; none means no description.
		wantDesc []string
	}{
		{"string", slot("v", metav1alpha1.RangeString), map[string]any{"type": "string"}, nil},
		{"string with description", described, map[string]any{"type": "string"}, []string{"The boot's name."}},
		{"integer", slot("v", metav1alpha1.RangeInteger), map[string]any{"type": "integer"}, nil},
		{"number", slot("v", metav1alpha1.RangeNumber), map[string]any{"type": "number"}, nil},
		{"boolean", slot("v", metav1alpha1.RangeBoolean), map[string]any{"type": "boolean"}, nil},
		{"date-time", slot("v", metav1alpha1.RangeDateTime), map[string]any{"type": "string", "format": "date-time"}, nil},
		{"keyword", slot("v", metav1alpha1.RangeKeyword), map[string]any{"type": "string"}, []string{"ns/name"}},
		{"uuid", slot("v", metav1alpha1.RangeUUID), map[string]any{"type": "string", "format": "uuid"}, nil},
		{"uri", slot("v", metav1alpha1.RangeURI), map[string]any{"type": "string", "format": "uri"}, nil},
		{"ref", ref, map[string]any{"type": "string"}, []string{"zorp.crew"}},
		{"json", slot("v", metav1alpha1.RangeJSON), map[string]any{}, []string{"JSON"}},
		{"many integer", many(slot("v", metav1alpha1.RangeInteger)), map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}, nil},
		{"many keyword, description on the array", describedKeyword, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, []string{"Tags.", "ns/name"}},
		{"many json", many(slot("v", metav1alpha1.RangeJSON)), map[string]any{"type": "array", "items": map[string]any{}}, []string{"JSON"}},
		{"enum, pattern, maxLength", constrained, map[string]any{"type": "string", "enum": []string{"red", "green"}, "pattern": "^[a-z]+$", "maxLength": int64(5)}, nil},
		{"minimum, maximum", bounded, map[string]any{"type": "integer", "minimum": 1.0, "maximum": 10.0}, nil},
		{"many with enum", manyEnum, map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"red"}}}, []string{"Colours."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := catalog.SlotJSONSchema(tc.slot)
			desc, hasDesc := got["description"]
			rest := map[string]any{}
			for k, v := range got {
				if k != "description" {
					rest[k] = v
				}
			}
			if !reflect.DeepEqual(rest, tc.want) {
				t.Errorf("SlotJSONSchema = %#v, want %#v (plus description)", got, tc.want)
			}
			if items, ok := got["items"].(map[string]any); ok {
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
	got := catalog.SlotJSONSchema(s)
	got["enum"].([]string)[0] = "changed"
	if s.Enum[0] != "red" {
		t.Errorf("SlotJSONSchema shares the slot's enum: %q", s.Enum)
	}
}
