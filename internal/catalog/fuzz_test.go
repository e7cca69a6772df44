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
	"testing"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Any JSON arguments coerce to a spec or give problems: never a panic.
func FuzzCoerce(f *testing.F) {
	c := &Class{Prefix: "zorp", Kind: "Boot", Required: []string{"name"}, Slots: []*Slot{
		{Definition: &Definition{Field: "name", Range: metav1alpha1.RangeString, Cardinality: metav1alpha1.CardinalityOne, Pattern: "^[a-z]+$"}, Required: true},
		{Definition: &Definition{Field: "size", Range: metav1alpha1.RangeInteger, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &Definition{Field: "at", Range: metav1alpha1.RangeDateTime, Cardinality: metav1alpha1.CardinalityMany}},
		{Definition: &Definition{Field: "id", Range: metav1alpha1.RangeUUID, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &Definition{Field: "tag", Range: metav1alpha1.RangeKeyword, Cardinality: metav1alpha1.CardinalityMany}},
		{Definition: &Definition{Field: "link", Range: metav1alpha1.RangeURI, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &Definition{Field: "any", Range: metav1alpha1.RangeJSON, Cardinality: metav1alpha1.CardinalityOne}},
	}}
	for _, s := range []string{`{"name": "a", "size": "3", "at": 1700000000000, "tag": ":a/b"}`, `{"size": 1e308}`, `{"at": [null, "x"]}`, `{"id": {}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var args map[string]any
		if json.Unmarshal([]byte(src), &args) != nil {
			return
		}
		spec, problems := Coerce(c, args)
		if len(problems) == 0 {
			if _, ok := spec["name"]; !ok {
				t.Fatalf("no problems, but the required slot is missing: %v", spec)
			}
		}
	})
}
