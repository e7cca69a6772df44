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
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/catalog/catalogtest"
)

// The class builders of package catalogtest, by short names.
var (
	slot      = catalogtest.Slot
	spaceBoot = catalogtest.SpaceBoot
)

func TestPureClassInputSchema(t *testing.T) {
	cases := []struct {
		name         string
		class        *catalog.Class
		wantRequired []string
	}{
		{"required sorted", spaceBoot(), []string{"crew", "name", "size"}},
		{"nothing required", &catalog.Class{Name: "zorp.note", Prefix: "zorp", Kind: "Note",
			Slots: catalogtest.Slots(slot("text", metav1alpha1.RangeString))}, nil},
		{"no slots", &catalog.Class{Name: "zorp.empty", Prefix: "zorp", Kind: "Empty"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]string(nil), tc.class.Required...)
			got := ClassInputSchema(tc.class)
			if got["type"] != "object" {
				t.Errorf("type = %#v, want object", got["type"])
			}
			if got["additionalProperties"] != false {
				t.Errorf("additionalProperties = %#v, want false", got["additionalProperties"])
			}
			req, hasReq := got["required"]
			switch {
			case tc.wantRequired == nil && hasReq:
				t.Errorf("required = %#v, want no required key", req)
			case tc.wantRequired != nil && !reflect.DeepEqual(req, tc.wantRequired):
				t.Errorf("required = %#v, want %#v", req, tc.wantRequired)
			}
			if !reflect.DeepEqual(tc.class.Required, before) {
				t.Errorf("ClassInputSchema reordered the class's Required: %q, was %q", tc.class.Required, before)
			}
			props, ok := got["properties"].(schema)
			if !ok {
				t.Fatalf("properties = %#v", got["properties"])
			}
			if len(props) != len(tc.class.Slots)+1 {
				t.Errorf("%d properties, want %d slots and metadata", len(props), len(tc.class.Slots))
			}
			md, ok := props["metadata"].(*jsonschema.Schema)
			if !ok || md.Type != "object" || md.AdditionalProperties == nil || len(md.Properties) != 4 ||
				md.Properties["name"].Type != "string" || md.Properties["labels"].AdditionalProperties.Type != "string" ||
				md.Properties["idempotencyKey"].Type != "string" {
				t.Errorf("metadata = %v, want an object of name, namespace, labels and idempotencyKey and nothing else", props["metadata"])
			}
			for _, s := range tc.class.Slots {
				if !reflect.DeepEqual(props[s.Field], catalog.SlotJSONSchema(*s)) {
					t.Errorf("property %q = %#v, want %#v", s.Field, props[s.Field], catalog.SlotJSONSchema(*s))
				}
			}
		})
	}
}

// Every catalog enum a verb adds to its schema names an argument it has.
func TestEnumPathsNameArguments(t *testing.T) {
	snap := &catalog.Snapshot{Classes: map[string]*catalog.Class{"zorp.boot": {Name: "zorp.boot", Prefix: "zorp", Kind: "Boot", Ready: true, InstanceAPI: &catalog.InstanceAPI{Established: true}}},
		Properties: map[string]*catalog.Property{"boot.size": {Name: "boot.size"}},
		Workflows:  map[string]*catalog.Workflow{"order.flow": {Name: "order.flow"}}}
	e := &Env{}
	for _, d := range e.All() {
		if d.Err() != nil {
			t.Errorf("%s: %v", d.Canonical(), d.Err())
			continue
		}
		before, _ := json.Marshal(d.InputSchema(&catalog.Snapshot{}))
		after, _ := json.Marshal(d.InputSchema(snap))
		if d.Patched() && string(before) == string(after) {
			t.Errorf("%s: its catalog enums changed nothing in its schema (a path that names no argument?)", d.Canonical())
		}
	}
}
