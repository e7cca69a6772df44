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

package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// object reads a tool's arguments as a JSON object; anything else is a protocol
// fault (-32602), as the arguments of tools/call are an object by definition.
func object(raw json.RawMessage, tool string) (map[string]any, error) {
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the arguments of %s must be a JSON object", tool)}
	}
	return args, nil
}

// decode checks arguments against a schema and decodes them into out. Every problem
// is reported at once, each naming the argument: a missing one, an unknown one (with
// the arguments there are), a wrong type (with the expected one), a value out of
// range. null counts as absent.
func decode(raw json.RawMessage, s *jsonschema.Schema, tool string, out any) error {
	args, err := object(raw, tool)
	if err != nil {
		return err
	}
	if problems := check("", args, s, tool); len(problems) > 0 {
		return BadArgs("%s", strings.Join(problems, "; "))
	}
	if len(args) == 0 {
		return nil
	}
	// encoding/json leaves a field alone for null, so null decodes as absent.
	if err := json.Unmarshal(raw, out); err != nil {
		return BadArgs("%v", err) // check accepts only what decodes; this is a safety net
	}
	return nil
}

// check walks a value against a schema and lists what does not fit.
func check(path string, v any, s *jsonschema.Schema, tool string) []string {
	if s == nil || v == nil {
		return nil
	}
	if t := s.Type; t != "" && !isType(v, t) {
		return []string{fmt.Sprintf("argument %q must be %s, got %s", path, article(t), catalog.DescribeValue(v))}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return e == v }) {
		return []string{fmt.Sprintf("argument %q must be one of %s, got %s", path, enumList(s.Enum), catalog.DescribeValue(v))}
	}
	switch x := v.(type) {
	case float64:
		if s.Minimum != nil && x < *s.Minimum {
			return []string{fmt.Sprintf("argument %q must be at least %v, got %v", path, *s.Minimum, x)}
		}
		if s.Maximum != nil && x > *s.Maximum {
			return []string{fmt.Sprintf("argument %q must be at most %v, got %v", path, *s.Maximum, x)}
		}
	case []any:
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			return []string{fmt.Sprintf("argument %q takes at most %d items, got %d", path, *s.MaxItems, len(x))}
		}
		var out []string
		for i, item := range x {
			out = append(out, check(fmt.Sprintf("%s[%d]", path, i), item, s.Items, tool)...)
		}
		return out
	case map[string]any:
		return checkObject(path, x, s, tool)
	}
	return nil
}

func checkObject(path string, obj map[string]any, s *jsonschema.Schema, tool string) []string {
	var out, unknown []string
	for _, name := range s.Required {
		if obj[name] == nil {
			out = append(out, fmt.Sprintf("missing argument %q", join(path, name)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch p, ok := s.Properties[k]; {
		case ok:
			out = append(out, check(join(path, k), obj[k], p, tool)...)
		case closed(s):
			unknown = append(unknown, fmt.Sprintf("%q", join(path, k)))
		default:
			out = append(out, check(join(path, k), obj[k], s.AdditionalProperties, tool)...)
		}
	}
	if len(unknown) > 0 {
		owner := tool
		if path != "" {
			owner = path
		}
		takes := "no arguments"
		if names := propertyNames(s); len(names) > 0 {
			takes = strings.Join(names, ", ")
		}
		noun := "argument"
		if len(unknown) > 1 {
			noun = "arguments"
		}
		out = append(out, fmt.Sprintf("unknown %s %s; %s takes: %s", noun, strings.Join(unknown, ", "), owner, takes))
	}
	return out
}

// closed says whether an object schema refuses properties it does not list.
func closed(s *jsonschema.Schema) bool {
	a := s.AdditionalProperties
	return a != nil && a.Not != nil && a.Not.Type == "" && len(a.Not.Properties) == 0
}

func propertyNames(s *jsonschema.Schema) []string {
	if len(s.PropertyOrder) > 0 {
		return s.PropertyOrder
	}
	return slices.Sorted(maps.Keys(s.Properties))
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func isType(v any, t string) bool {
	switch x := v.(type) {
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case float64:
		return t == "number" || (t == "integer" && x == math.Trunc(x) && math.Abs(x) <= 1<<53)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func article(t string) string {
	switch t {
	case "integer", "object":
		return "an " + t
	case "array":
		return "a list"
	}
	return "a " + t
}

func enumList(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprintf("%q", fmt.Sprint(v))
	}
	return strings.Join(parts, ", ")
}

// DecodeValue checks a value already read from JSON against a schema and decodes it
// into a T; path names the value in messages. nil is the zero T.
func DecodeValue[T any](path string, v any, s *jsonschema.Schema) (T, error) {
	var out T
	if v == nil {
		return out, nil
	}
	if problems := check(path, v, s, path); len(problems) > 0 {
		return out, BadArgs("%s", strings.Join(problems, "; "))
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return out, BadArgs("%s: %v", path, err)
	}
	return out, nil
}
