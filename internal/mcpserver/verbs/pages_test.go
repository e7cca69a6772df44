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

package verbs

import (
	"encoding/json"
	"testing"
)

// A page is cut by the size its items have in the result's text: counted on the
// compact JSON, it is the indented JSON's length, whatever the item holds.
func TestItemBytesIsTheIndentedLength(t *testing.T) {
	for _, v := range []any{
		Entity{Class: "zorp/SpaceBoot", Name: "b-1", Namespace: "default", ResourceVersion: "42",
			Attributes: map[string]any{"name": "Boot", "price": 12.5, "sizes": []any{1, 2, 3}, "none": []any{}, "empty": map[string]any{}},
			Labels:     map[string]string{"team": "a"}, Kubernetes: EntityAPI{APIVersion: "zorp.sandbar.dev/v1", Kind: "SpaceBoot"}},
		map[string]any{"punctuation in strings": `{"a": [1, 2], "b": "c\"d"} \ , : ]`, "html": "<b> & </b>", "unicode": "é ☃ \u2028"},
		[]any{[]any{}, map[string]any{}, []any{map[string]any{"deep": []any{[]any{"x"}}}}, nil, true, -1.5e300},
		"a string", 7, nil, []any{}, map[string]any{},
	} {
		want, err := json.MarshalIndent(v, "    ", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if got := itemBytes(v); got != len(want)+6 {
			t.Errorf("itemBytes(%s) = %d, want %d", want, got, len(want)+6)
		}
	}
}
