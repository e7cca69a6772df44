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
	"regexp"
	"strconv"
	"strings"
)

// Coerce turns tool arguments into the spec of an instance of c: every key must be a
// slot, every value is converted to the slot's range where a faithful conversion
// exists ("42" for an integer, ":zorp/red" for a keyword, a single value for a
// many-valued slot, an epoch in milliseconds for a date-time), and every required
// slot must be present. It returns all problems at once, each naming the slot and
// what it expects, so that a client can fix everything in one go.
func Coerce(c *Class, args map[string]any) (map[string]any, []string) {
	spec := map[string]any{}
	var problems []string
	for _, key := range sortedKeys(args) {
		s, ok := c.Slot(key)
		if !ok {
			problems = append(problems, fmt.Sprintf("%q is not a slot of %s; its slots are: %s", key, c.Ident(), SlotList(c)))
			continue
		}
		v, err := coerceSlot(s, args[key])
		if err != nil {
			problems = append(problems, fmt.Sprintf("slot %q: %v", key, err))
			continue
		}
		if v != nil {
			spec[key] = v
		}
	}
	var missing []string
	for _, f := range c.Required {
		// A required slot given a bad value is reported for the value, not as missing.
		if v, given := args[f]; !given || v == nil {
			s, _ := c.Slot(f)
			missing = append(missing, fmt.Sprintf("%q (%s)", f, TypeName(s)))
		}
	}
	if len(missing) > 0 {
		problems = append([]string{"missing required slot(s): " + strings.Join(missing, ", ")}, problems...)
	}
	return spec, problems
}

func coerceSlot(s Slot, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if !s.Many() {
		if info, _ := RangeOf(s.Range); !info.AnyJSON {
			if _, isList := v.([]any); isList {
				return nil, fmt.Errorf("expected a single %s, got a list", TypeName(s))
			}
		}
		return coerceValue(s, v)
	}
	items, isList := v.([]any)
	if !isList {
		items = []any{v}
	}
	out := make([]any, 0, len(items))
	for i, item := range items {
		c, err := coerceValue(s, item)
		if err != nil {
			return nil, fmt.Errorf("item %d: %v", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func coerceValue(s Slot, v any) (any, error) {
	got := DescribeValue(v)
	info, known := SlotRange(s)
	if !known {
		return nil, errUnknownRange(s.Range)
	}
	out, err := info.coerce(v)
	switch {
	case errors.Is(err, errBad):
		return nil, fmt.Errorf("expected %s, got %s", info.Words, got)
	case err != nil:
		return nil, fmt.Errorf("%v, got %s", err, got)
	}
	return out, checkConstraints(s, out, got)
}

// checkConstraints applies a slot's constraints, so that an error names them rather
// than leaving it to the API server's message.
func checkConstraints(s Slot, v any, got string) error {
	if str, ok := v.(string); ok {
		if len(s.Enum) > 0 && !contains(s.Enum, str) {
			return fmt.Errorf("%s is not one of the allowed values: %s", got, strings.Join(quoteAll(s.Enum), ", "))
		}
		if s.MaxLength != nil && int64(len([]rune(str))) > *s.MaxLength {
			return fmt.Errorf("%d characters, at most %d allowed", len([]rune(str)), *s.MaxLength)
		}
		if s.Pattern != "" {
			if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(str) {
				return fmt.Errorf("%s does not match the pattern %s", got, s.Pattern)
			}
		}
	}
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return nil
	}
	if s.Minimum != nil && f < *s.Minimum {
		return fmt.Errorf("%v is less than the minimum %v", v, *s.Minimum)
	}
	if s.Maximum != nil && f > *s.Maximum {
		return fmt.Errorf("%v is greater than the maximum %v", v, *s.Maximum)
	}
	return nil
}

// DescribeValue shows a value in an error message: its JSON type and, briefly, itself.
func DescribeValue(v any) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	s := strings.TrimSuffix(buf.String(), "\n")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	switch v.(type) {
	case string:
		return "string " + s
	case float64, json.Number:
		return "number " + s
	case bool:
		return "boolean " + s
	case []any:
		return "list " + s
	case map[string]any:
		return "object " + s
	case nil:
		return "null"
	}
	return s
}

func SlotList(c *Class) string {
	var out []string
	for _, s := range c.Slots {
		out = append(out, fmt.Sprintf("%s (%s)", s.Field, TypeName(*s)))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

// TypeName says in words what a slot holds, for error messages.
func TypeName(s Slot) string {
	info, _ := SlotRange(s) // an unknown range's words are its name
	one := info.Words
	if s.Many() {
		return "list of " + one
	}
	return one
}
