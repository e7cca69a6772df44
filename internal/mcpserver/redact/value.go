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

package redact

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
)

// maxDepth bounds the walk. A value nested deeper (or a cycle, which JSON cannot
// carry anyway) is dropped rather than sent unexamined.
const maxDepth = 10000

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// Value returns v with every credential-looking string in it redacted: string
// values and string map keys at any depth, through pointers, interfaces, structs
// (their exported fields, which are what JSON carries), slices, arrays, maps and
// json.RawMessage. v itself is never modified: where something is redacted, the
// containers on the way to it are copied; where nothing is, v itself is returned.
// The result has v's dynamic type, so a *mcp.CallToolResult stays one.
func Value(v any) any {
	out, _ := value(v, 0)
	return out
}

// value walks the shapes of decoded JSON without reflection (they are most of what
// the server sends: instances, schemas) and everything else with it.
func value(v any, depth int) (any, bool) {
	if depth > maxDepth {
		return nil, true
	}
	var out any
	var changed bool
	switch x := v.(type) {
	case nil, bool, float64, int64, int, json.Number:
		return v, false
	case string:
		if r := String(x); r != x {
			return r, true
		}
		return v, false
	case map[string]any:
		out, changed = jsonMap(x, depth)
	case []any:
		out, changed = each(x, func(e any) (any, bool) { return value(e, depth+1) })
	case []map[string]any:
		out, changed = each(x, func(m map[string]any) (map[string]any, bool) { return jsonMap(m, depth+1) })
	case map[string]string:
		out, changed = eachEntry(x, func(k, e string) (string, string, bool) {
			nk, ne := String(k), String(e)
			if secretName(k) && secretish(ne) {
				ne = Redacted
			}
			return nk, ne, nk != k || ne != e
		})
	case []string:
		out, changed = each(x, func(e string) (string, bool) {
			r := String(e)
			return r, r != e
		})
	default:
		r, changed := walk(reflect.ValueOf(v), depth)
		if !changed {
			return v, false
		}
		return r.Interface(), true
	}
	if !changed {
		return v, false
	}
	return out, true
}

// slot is the value of a secret-named key (secretName) with what looks generated in
// it redacted: a string, or the strings of a list. An instance's slot apiToken or
// a Secret-like map's password is redacted though no key format matches it.
func slot(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if secretish(x) {
			return Redacted, true
		}
	case []any:
		if out, ok := each(x, func(e any) (any, bool) {
			if s, ok := e.(string); ok && secretish(s) {
				return Redacted, true
			}
			return e, false
		}); ok {
			return out, true
		}
	case []string:
		if out, ok := each(x, func(e string) (string, bool) { return Redacted, secretish(e) }); ok {
			return out, true
		}
	}
	return v, false
}

// slotted is slot for a value under the key k: unchanged unless k is a secret name.
func slotted(k string, v any, changed bool) (any, bool) {
	switch v.(type) {
	case string, []any, []string:
		if secretName(k) {
			if r, ok := slot(v); ok {
				return r, true
			}
		}
	}
	return v, changed
}

func jsonMap(m map[string]any, depth int) (map[string]any, bool) {
	return eachEntry(m, func(k string, e any) (string, any, bool) {
		nk := String(k)
		ne, changed := value(e, depth+1)
		ne, changed = slotted(k, ne, changed)
		return nk, ne, changed || nk != k
	})
}

// each is l with f applied to each element, l copied on the first change (nil and
// false when nothing changed).
func each[E any](l []E, f func(E) (E, bool)) ([]E, bool) {
	var out []E
	for i, e := range l {
		if ne, changed := f(e); changed {
			if out == nil {
				out = slices.Clone(l)
			}
			out[i] = ne
		}
	}
	return out, out != nil
}

// eachEntry is m with f applied to each key and value, m copied on the first change
// (nil and false when nothing changed). Two keys that redact to the same string
// become one entry (the credentials in them are gone either way).
func eachEntry[V any](m map[string]V, f func(k string, e V) (string, V, bool)) (map[string]V, bool) {
	var out map[string]V
	for k, e := range m {
		nk, ne, changed := f(k, e)
		if !changed {
			continue
		}
		if out == nil {
			out = maps.Clone(m)
		}
		delete(out, k)
		out[nk] = ne
	}
	return out, out != nil
}

// walk returns v redacted, and whether anything changed; the result is assignable
// to v's type.
func walk(v reflect.Value, depth int) (reflect.Value, bool) {
	if depth > maxDepth {
		return reflect.Zero(v.Type()), true
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		r := String(s)
		if r == s {
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		out.SetString(r)
		return out, true
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		e, changed := walk(v.Elem(), depth+1)
		if !changed {
			return v, false
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(e)
		return out, true
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		e, changed := value(v.Elem().Interface(), depth+1)
		if !changed {
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		if e != nil {
			out.Set(reflect.ValueOf(e))
		}
		return out, true
	case reflect.Struct:
		return walkStruct(v, depth)
	case reflect.Slice:
		if v.IsNil() {
			return v, false
		}
		if v.Type() == rawMessageType {
			return walkRaw(v, depth)
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v, false // bytes (a blob), not text
		}
		return walkList(v, depth, func() reflect.Value {
			out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(out, v)
			return out
		})
	case reflect.Array:
		return walkList(v, depth, func() reflect.Value {
			out := reflect.New(v.Type()).Elem()
			out.Set(v)
			return out
		})
	case reflect.Map:
		return walkMap(v, depth)
	}
	return v, false
}

func walkStruct(v reflect.Value, depth int) (reflect.Value, bool) {
	t := v.Type()
	var out reflect.Value
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			continue
		}
		f, changed := walk(v.Field(i), depth+1)
		if !changed {
			continue
		}
		if !out.IsValid() {
			// A copy keeps the unexported fields too.
			out = reflect.New(t).Elem()
			out.Set(v)
		}
		out.Field(i).Set(f)
	}
	if !out.IsValid() {
		return v, false
	}
	return out, true
}

// walkList walks the elements of a slice or an array; clone copies it on the first
// change.
func walkList(v reflect.Value, depth int, clone func() reflect.Value) (reflect.Value, bool) {
	var out reflect.Value
	for i := range v.Len() {
		e, changed := walk(v.Index(i), depth+1)
		if !changed {
			continue
		}
		if !out.IsValid() {
			out = clone()
		}
		out.Index(i).Set(e)
	}
	if !out.IsValid() {
		return v, false
	}
	return out, true
}

// walkMap redacts keys and values. Two keys that redact to the same string become
// one entry (the credentials in them are gone either way).
func walkMap(v reflect.Value, depth int) (reflect.Value, bool) {
	if v.IsNil() {
		return v, false
	}
	type entry struct{ k, e reflect.Value }
	var changes []entry
	var dropped []reflect.Value
	iter := v.MapRange()
	for iter.Next() {
		k, e := iter.Key(), iter.Value()
		nk, kChanged := walk(k, depth+1)
		ne, eChanged := walk(e, depth+1)
		if k.Kind() == reflect.String {
			ne, eChanged = walkSlot(k.String(), ne, eChanged)
		}
		if kChanged {
			dropped = append(dropped, k)
		}
		if kChanged || eChanged {
			changes = append(changes, entry{nk, ne})
		}
	}
	if len(changes) == 0 {
		return v, false
	}
	out := reflect.MakeMapWithSize(v.Type(), v.Len())
	iter = v.MapRange()
	for iter.Next() {
		out.SetMapIndex(iter.Key(), iter.Value())
	}
	for _, k := range dropped {
		out.SetMapIndex(k, reflect.Value{})
	}
	for _, c := range changes {
		out.SetMapIndex(c.k, c.e)
	}
	return out, true
}

// walkSlot is slotted for a map entry reached by reflection: e is a string (of any
// string type), a list, or an interface that holds one.
func walkSlot(k string, e reflect.Value, changed bool) (reflect.Value, bool) {
	if !e.IsValid() {
		return e, changed
	}
	switch e.Kind() {
	case reflect.String:
		if secretName(k) && secretish(e.String()) {
			out := reflect.New(e.Type()).Elem()
			out.SetString(Redacted)
			return out, true
		}
	case reflect.Interface:
		if e.IsNil() {
			return e, changed
		}
		if r, ok := slotted(k, e.Elem().Interface(), false); ok && reflect.TypeOf(r).AssignableTo(e.Type()) {
			out := reflect.New(e.Type()).Elem()
			out.Set(reflect.ValueOf(r))
			return out, true
		}
	case reflect.Slice:
		if e.Type().Elem().Kind() != reflect.String || e.IsNil() || !secretName(k) {
			return e, changed
		}
		var out reflect.Value
		for i := range e.Len() {
			if secretish(e.Index(i).String()) {
				if !out.IsValid() {
					out = reflect.MakeSlice(e.Type(), e.Len(), e.Len())
					reflect.Copy(out, e)
				}
				out.Index(i).SetString(Redacted)
			}
		}
		if out.IsValid() {
			return out, true
		}
	}
	return e, changed
}

// walkRaw redacts the strings of a JSON document. Text that is not JSON is redacted
// as text.
func walkRaw(v reflect.Value, depth int) (reflect.Value, bool) {
	raw := v.Bytes()
	// An escape (\u0041KIA...) can hide a credential from the text: parse then.
	if bytes.IndexByte(raw, '\\') < 0 && String(string(raw)) == string(raw) {
		return v, false
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		red := String(string(raw))
		if red == string(raw) {
			return v, false
		}
		return reflect.ValueOf([]byte(red)).Convert(v.Type()), true
	}
	red, changed := walk(reflect.ValueOf(&doc).Elem(), depth+1)
	if !changed {
		return v, false
	}
	out, err := json.Marshal(red.Interface())
	if err != nil {
		return reflect.Zero(v.Type()), true
	}
	return reflect.ValueOf(out).Convert(v.Type()), true
}
