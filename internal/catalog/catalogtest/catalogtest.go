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

// Package catalogtest builds catalog classes for tests of the packages that read them.
package catalogtest

import (
	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Slot is a single-valued slot of property zorp.<field>.
func Slot(field string, r metav1alpha1.PropertyRange) catalog.Slot {
	return catalog.Slot{Definition: &catalog.Definition{Property: "zorp." + field, Field: field, Range: r, Cardinality: metav1alpha1.CardinalityOne}}
}

// Many makes a slot many-valued (a copy of it, with a definition of its own).
func Many(s catalog.Slot) catalog.Slot {
	s = s.Own()
	s.Cardinality = metav1alpha1.CardinalityMany
	return s
}

// WithEnum limits a slot to the given values (a copy of it, with a definition of
// its own).
func WithEnum(s catalog.Slot, e ...string) catalog.Slot { s = s.Own(); s.Enum = e; return s }

// Slots is a class's list of copies of the given slots.
func Slots(slots ...catalog.Slot) []*catalog.Slot {
	out := make([]*catalog.Slot, len(slots))
	for i, s := range slots {
		out[i] = &s
	}
	return out
}

// SpaceBoot is a class with required, constrained, many-valued and free-form slots.
func SpaceBoot() *catalog.Class {
	crew := Many(Slot("crew", metav1alpha1.RangeRef))
	crew.Target = "zorp.crew"
	crew.Required = true
	name := Slot("name", metav1alpha1.RangeString)
	name.Required = true
	size := Slot("size", metav1alpha1.RangeInteger)
	size.Required = true
	return &catalog.Class{
		Name: "zorp.spaceboot", Prefix: "zorp", Kind: "SpaceBoot",
		Slots: Slots(
			name, size, crew,
			WithEnum(Slot("colour", metav1alpha1.RangeKeyword), "zorp/red", "zorp/green"),
			Slot("launched", metav1alpha1.RangeDateTime),
			Many(Slot("tags", metav1alpha1.RangeString)),
			Slot("notes", metav1alpha1.RangeJSON),
		),
		Required: []string{"size", "name", "crew"},
	}
}
