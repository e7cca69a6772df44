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

package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// RangeInfo is everything the code knows about one slot range: how a value looks in
// tool arguments (JSON Schema), in the generated CRD (OpenAPI), in kubectl's
// columns, in words, as an example, and how a tool argument becomes a stored value.
// Every other place derives from the table below.
type RangeInfo struct {
	Range metav1alpha1.PropertyRange
	// Summary describes the range in the datatypes listing.
	Summary string
	// Words says in error messages what a value is; {target} stands for a ref's target.
	Words string
	// JSONType and JSONFormat are the JSON Schema of a value in tool arguments (no
	// type: any JSON value); JSONHint is added to its description.
	JSONType, JSONFormat, JSONHint string
	// CRDType, CRDFormat and CRDPattern are the OpenAPI schema of a stored value;
	// CRDHint is added to its description.
	CRDType, CRDFormat, CRDPattern string
	CRDHint                        string
	// AnyJSON is a range of any JSON value: the CRD keeps unknown fields
	// (x-kubernetes-preserve-unknown-fields), and a list is one value, not many.
	AnyJSON bool
	// Column is the type of a kubectl printer column ("": not shown as a column).
	Column string
	// Example is a valid value; in a string, {target} stands for a ref's target in
	// lower case, as instance names are.
	Example any
	// coerce turns a tool argument (JSON, or a value read back from the API server)
	// into the stored value; errBad means "expected <Words>, got ...".
	coerce func(v any) (any, error)
}

// errBad is a value of the wrong kind; the caller says what was expected.
var errBad = errors.New("bad value")

// keywordPattern accepts a keyword such as "zorp/red" or ":zorp/red" (and plain "red").
const keywordPattern = `^:?[A-Za-z_*+!?<>=-][A-Za-z0-9_*+!?<>=.-]*(/[A-Za-z_*+!?<>=-][A-Za-z0-9_*+!?<>=.-]*)?$`

var keyword = regexp.MustCompile(`^[A-Za-z_*+!?<>=-][A-Za-z0-9_*+!?<>=.-]*(/[A-Za-z_*+!?<>=-][A-Za-z0-9_*+!?<>=.-]*)?$`)

// ranges is the table of slot ranges, one row per metav1alpha1.PropertyRange.
var ranges = []RangeInfo{
	{Range: metav1alpha1.RangeString, Summary: "Text.", Words: "string",
		JSONType: "string", CRDType: "string", Column: "string", Example: "text", coerce: coerceString},
	{Range: metav1alpha1.RangeInteger, Summary: "A whole number (a JSON number or a numeric string).", Words: "integer",
		JSONType: "integer", CRDType: "integer", CRDFormat: "int64", Column: "integer", Example: int64(1), coerce: coerceInteger},
	{Range: metav1alpha1.RangeNumber, Summary: "A number (a JSON number or a numeric string).", Words: "number",
		JSONType: "number", CRDType: "number", CRDFormat: "double", Column: "number", Example: 1.5, coerce: coerceNumber},
	{Range: metav1alpha1.RangeBoolean, Summary: "true or false (or the strings \"true\" and \"false\").", Words: "boolean",
		JSONType: "boolean", CRDType: "boolean", Column: "boolean", Example: true, coerce: coerceBoolean},
	{Range: metav1alpha1.RangeDateTime, Summary: "A date and time: RFC 3339, a date alone, or epoch milliseconds.", Words: "date-time string (RFC 3339)",
		JSONType: "string", JSONFormat: "date-time", CRDType: "string", CRDFormat: "date-time", Column: "date",
		Example: "2026-01-31T12:00:00Z", coerce: coerceDateTime},
	{Range: metav1alpha1.RangeKeyword, Summary: "A keyword such as \"ns/name\" (a leading colon is dropped).", Words: "keyword string (ns/name)",
		JSONType: "string", JSONHint: "Keyword string, such as \"ns/name\".", CRDType: "string", CRDPattern: keywordPattern,
		CRDHint: "Keyword string, such as \"ns/name\".", Column: "string", Example: "ns/name", coerce: coerceKeyword},
	{Range: metav1alpha1.RangeUUID, Summary: "A UUID.", Words: "uuid",
		JSONType: "string", JSONFormat: "uuid", CRDType: "string", CRDFormat: "uuid", Column: "string",
		Example: "123e4567-e89b-12d3-a456-426614174000", coerce: coerceUUID},
	{Range: metav1alpha1.RangeURI, Summary: "An absolute URI.", Words: "uri",
		JSONType: "string", JSONFormat: "uri", CRDType: "string", CRDFormat: "uri", Column: "string",
		Example: "https://example.com/", coerce: coerceURI},
	{Range: metav1alpha1.RangeRef, Summary: "A reference: the name of an instance of the target class in the same namespace.",
		Words: "the name of a {target} instance", JSONType: "string",
		JSONHint: "Reference to another entity: the name of a {target} instance.", CRDType: "string",
		CRDHint: "Reference: the name of a {target} instance in the same namespace.", Column: "string",
		Example: "name-of-{target}", coerce: coerceString},
	{Range: metav1alpha1.RangeJSON, Summary: "Any JSON value.", Words: "JSON value",
		JSONHint: "Any JSON value.", AnyJSON: true, Example: map[string]any{}, coerce: func(v any) (any, error) { return v, nil }},
}

// Ranges is the table of slot ranges, in the order the API lists them.
func Ranges() []RangeInfo { return ranges }

// RangeOf is the row of a range. For a range the table lacks (the API's enum admits
// none; only CRDs newer than this code could bring one) ok is false, and the row
// says so instead of passing for a known range: coercion refuses every value, both
// schemas say "Unknown range", the CRD stores it as text, it has no printer column
// and no example, and its words are its name.
func RangeOf(r metav1alpha1.PropertyRange) (RangeInfo, bool) {
	for i := range ranges {
		if ranges[i].Range == r {
			return ranges[i], true
		}
	}
	unknown := "Unknown range " + strconv.Quote(string(r)) + "."
	return RangeInfo{Range: r, Summary: unknown, Words: string(r), JSONHint: unknown,
		CRDType: "string", CRDHint: unknown}, false
}

// rangeRow is RangeOf's row, not copied: the table's own, or the unknown range's.
func rangeRow(r metav1alpha1.PropertyRange) *RangeInfo {
	for i := range ranges {
		if ranges[i].Range == r {
			return &ranges[i]
		}
	}
	info, _ := RangeOf(r)
	return &info
}

// SlotRange is the row of a slot's range with the slot's target filled in, see RangeOf.
func SlotRange(s Slot) (RangeInfo, bool) {
	info, known := RangeOf(s.Range)
	fill := func(text string) string { return strings.ReplaceAll(text, "{target}", s.Target) }
	info.Words, info.JSONHint, info.CRDHint = fill(info.Words), fill(info.JSONHint), fill(info.CRDHint)
	if ex, ok := info.Example.(string); ok {
		info.Example = strings.ReplaceAll(ex, "{target}", strings.ToLower(s.Target))
	}
	return info, known
}

// takesAnyText says whether every string is a value of the range as it is (its
// coercion takes any string): an enum value of it needs no coercion to be checked.
func takesAnyText(r metav1alpha1.PropertyRange) bool {
	return r == metav1alpha1.RangeString || r == metav1alpha1.RangeRef || r == metav1alpha1.RangeJSON
}

// errUnknownRange is the problem with every value of a range the table lacks.
func errUnknownRange(r metav1alpha1.PropertyRange) error {
	return fmt.Errorf("the slot's range %q is not one this server knows", r)
}

// ExampleValue is a valid value of a slot, for error messages: its first allowed
// value, or its range's example, or a string its pattern matches where the
// example does not (a list of one for a many-valued slot); nil for an unknown
// range, which has no valid value.
func ExampleValue(s Slot) any {
	info, _ := SlotRange(s)
	v := info.Example
	if text, ok := v.(string); ok && s.Pattern != "" {
		if m, ok := Matching(s.Pattern); ok && !matches(s.Pattern, text) {
			v = m
		}
	}
	if len(s.Enum) > 0 {
		v = s.Enum[0]
	}
	if s.Many() {
		return []any{v}
	}
	return v
}

// SlotJSONSchema is the JSON Schema of a slot's value in tool arguments: the range's
// type and format, its constraints, its description and hint, and cardinality many
// as an array.
func SlotJSONSchema(s Slot) map[string]any {
	v := map[string]any{}
	info, _ := SlotRange(s) // an unknown range: no type, and the hint says so
	if info.JSONType != "" {
		v["type"] = info.JSONType
	}
	if info.JSONFormat != "" {
		v["format"] = info.JSONFormat
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
	desc := strings.TrimSpace(s.Description + " " + info.JSONHint)
	if s.Many() {
		out := map[string]any{"type": "array", "items": v}
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

// orBad is a parse result, its error as errBad.
func orBad[T any](v T, err error) (any, error) {
	if err != nil {
		return nil, errBad
	}
	return v, nil
}

func coerceString(v any) (any, error) {
	x, ok := v.(string)
	if !ok {
		return nil, errBad
	}
	return x, nil
}

func coerceInteger(v any) (any, error) {
	switch x := v.(type) {
	case int64: // as read back from the API server
		return x, nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return nil, errBad
		}
		return int64(x), nil
	case json.Number:
		return orBad(x.Int64())
	case string:
		return orBad(strconv.ParseInt(strings.TrimSpace(x), 10, 64))
	}
	return nil, errBad
}

func coerceNumber(v any) (any, error) {
	switch x := v.(type) {
	case int64: // a whole number, as read back from the API server
		return float64(x), nil
	case float64:
		return x, nil
	case json.Number:
		return orBad(x.Float64())
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errBad
		}
		return f, nil
	}
	return nil, errBad
}

func coerceBoolean(v any) (any, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		return orBad(strconv.ParseBool(strings.TrimSpace(x)))
	}
	return nil, errBad
}

func coerceDateTime(v any) (any, error) {
	switch x := v.(type) {
	case string:
		t, err := parseTime(strings.TrimSpace(x))
		if err != nil {
			return nil, errBad
		}
		return t.UTC().Format(time.RFC3339Nano), nil
	case float64:
		return time.UnixMilli(int64(x)).UTC().Format(time.RFC3339Nano), nil
	}
	return nil, errBad
}

func coerceUUID(v any) (any, error) {
	x, ok := v.(string)
	if !ok {
		return nil, errBad
	}
	u, err := uuid.Parse(strings.TrimSpace(x))
	if err != nil {
		return nil, errBad
	}
	return u.String(), nil
}

func coerceURI(v any) (any, error) {
	x, ok := v.(string)
	if !ok {
		return nil, errBad
	}
	u, err := url.Parse(strings.TrimSpace(x))
	if err != nil || !u.IsAbs() {
		return nil, errors.New("expected an absolute URI")
	}
	return u.String(), nil
}

func coerceKeyword(v any) (any, error) {
	x, ok := v.(string)
	if !ok {
		return nil, errBad
	}
	k := strings.TrimPrefix(strings.TrimSpace(x), ":")
	if !keyword.MatchString(k) {
		return nil, errors.New(`expected a keyword such as "ns/name"`)
	}
	return k, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a date-time")
}

// Matching is a short string that the regular expression pattern matches, when
// one can be made from it: the least of each repetition, the first of each class
// and alternative.
func Matching(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	out, ok := shortest(re.Simplify())
	return out, ok && matches(pattern, out)
}

func matches(pattern, s string) bool {
	ok, err := regexp.MatchString(pattern, s)
	return err == nil && ok
}

// shortest is a short string re matches.
func shortest(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpStar, syntax.OpQuest, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return "", true
	case syntax.OpLiteral:
		return string(re.Rune), true
	case syntax.OpCharClass:
		return string(re.Rune[:min(len(re.Rune), 1)]), len(re.Rune) > 0
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return "a", true
	case syntax.OpCapture, syntax.OpPlus:
		return shortest(re.Sub[0])
	case syntax.OpRepeat:
		one, ok := shortest(re.Sub[0])
		return strings.Repeat(one, re.Min), ok
	case syntax.OpConcat:
		var b strings.Builder
		for _, sub := range re.Sub {
			part, ok := shortest(sub)
			if !ok {
				return "", false
			}
			b.WriteString(part)
		}
		return b.String(), true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if out, ok := shortest(sub); ok {
				return out, true
			}
		}
	}
	return "", false
}
