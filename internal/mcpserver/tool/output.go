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
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A tool's answer is a Go type: its output schema (the outputSchema of tools/list)
// is generated from that type once, when the tool is declared, and the answer is
// the result's structuredContent (and, as indented JSON, its text). MCP wants
// structuredContent to be a JSON object, so the type must encode as one: a struct,
// or a map with string keys.

// outputTypes are the schemas of types the generator cannot read from their fields.
var outputTypes = map[reflect.Type]*jsonschema.Schema{
	// A time encodes as an RFC 3339 string, not as the struct it is.
	reflect.TypeFor[metav1.Time](): {Type: "string"},
}

// shaped is an answer that stands for another type: Kept[T] is a T.
type shaped interface{ shape() reflect.Type }

// Kept is an answer of type T that was rendered once and kept (see Render): a verb
// that keeps its answers returns one as the T it declares.
type Kept[T any] struct{ r *Rendered }

// Keep is r, an answer of type T rendered with Render.
func Keep[T any](r *Rendered) Kept[T] { return Kept[T]{r: r} }

func (Kept[T]) shape() reflect.Type { return reflect.TypeFor[T]() }

// rendered is what a Kept answer holds: what its result is made of.
func (k Kept[T]) rendered() *Rendered { return k.r }

// OutputSchema is the output schema of answers of type Out: generated from the type
// (json tags name the properties, omitempty makes one optional), its objects open
// to properties a later version may add, and as lean as it says the same: no
// "additionalProperties" that allows anything, no null for a list (answers give
// an empty list) or for a property that is left out when empty. A task-running
// tool answers the process's own result when it runs as an MCP task, so its
// schema requires none of its synchronous answer's properties. A schema is made
// once for each type and shared: nothing changes it after.
func OutputSchema[Out any](longRunning bool) (*jsonschema.Schema, error) {
	o, err := outputOf[Out](longRunning)
	return o.schema, err
}

// output is an output schema and its JSON.
type output struct {
	schema *jsonschema.Schema
	json   json.RawMessage
}

// outputFor is the output schema of answers of type t, made once.
func outputFor(t reflect.Type, longRunning bool) (output, error) {
	k := outputKey{t, longRunning}
	if o, ok := outputs.Load(k); ok {
		return o.(output), nil
	}
	s, err := outputSchema(t, longRunning)
	if err != nil {
		return output{}, err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return output{}, fmt.Errorf("answer %s: %w", t, err)
	}
	o := output{schema: s, json: raw}
	outputs.Store(k, o)
	return o, nil
}

// outputs are the output schemas made, by type: a class's create tool is declared
// anew for each catalog snapshot, and tools/list is rendered for each, so both the
// schema and its JSON are made once.
var outputs sync.Map

type outputKey struct {
	t           reflect.Type
	longRunning bool
}

func outputSchema(t reflect.Type, longRunning bool) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: outputTypes})
	if err != nil {
		return nil, fmt.Errorf("answer %s: %w", t, err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("answer %s is not a JSON object (MCP's structuredContent must be one): declare a struct", t)
	}
	lean(s, true)
	if p := anything(s, ""); p != "" {
		// An empty schema is written as true, which clients that read a property's
		// schema as an object refuse (the TypeScript SDK does, and so every tool).
		return nil, fmt.Errorf("answer %s: the property %q may be any JSON value: describe it with a jsonschema tag", t, p)
	}
	if longRunning {
		s.Required = nil
	}
	return s, nil
}

// anything is the path of a property of s whose schema is empty, if any.
func anything(s *jsonschema.Schema, path string) string {
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		if reflect.ValueOf(*p).IsZero() {
			return path + name
		}
		if got := anything(p, path+name+"."); got != "" {
			return got
		}
	}
	if s.Items != nil {
		return anything(s.Items, path+"[].")
	}
	return ""
}

// lean trims a generated schema (see OutputSchema); required says whether the
// value is always present.
func lean(s *jsonschema.Schema, required bool) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" && (!required || s.Types[1] == "array") {
		s.Type, s.Types = s.Types[1], nil
	}
	if a := s.AdditionalProperties; a != nil && (closed(s) || reflect.ValueOf(*a).IsZero()) {
		s.AdditionalProperties = nil
	}
	for name, p := range s.Properties {
		lean(p, slices.Contains(s.Required, name))
	}
	lean(s.Items, true)
	lean(s.AdditionalProperties, true)
}

// outputOf is the output of answers of type Out (see OutputSchema).
func outputOf[Out any](longRunning bool) (output, error) {
	t := reflect.TypeFor[Out]()
	if s, ok := reflect.Zero(t).Interface().(shaped); ok {
		t = s.shape()
	}
	return outputFor(t, longRunning)
}
