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
	"sort"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Ref is one value of a ref slot: the name of an instance of the Class Target (or
// of one of its subclasses) in the instance's own namespace.
type Ref struct {
	Field  string
	Target string
	Name   string
}

// Refs lists the references in an instance's spec (as Coerce gives it, or as
// stored): one Ref per value of each ref slot, in field order.
func Refs(cl *Class, spec map[string]any) []Ref {
	var fields []string
	for f := range spec {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	var out []Ref
	for _, f := range fields {
		s, ok := cl.Slot(f)
		if !ok || s.Range != metav1alpha1.RangeRef {
			continue
		}
		values := []any{spec[f]}
		if list, ok := spec[f].([]any); ok {
			values = list
		} else if list, ok := spec[f].([]string); ok {
			values = values[:0]
			for _, v := range list {
				values = append(values, v)
			}
		}
		for _, v := range values {
			if name, ok := v.(string); ok && name != "" {
				out = append(out, Ref{Field: f, Target: s.Target, Name: name})
			}
		}
	}
	return out
}
