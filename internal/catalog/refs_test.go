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

package catalog_test

import (
	"reflect"
	"testing"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/catalog/catalogtest"
)

// Every value of a ref slot is a reference to check, whether coerced ([]any) or
// not; other slots are not.
func TestPureRefsListsEveryValueOfRefSlots(t *testing.T) {
	cl := catalogtest.SpaceBoot()
	got := catalog.Refs(cl, map[string]any{"crew": []any{"ann", "bo", ""}, "name": "Moon", "size": 3})
	want := []catalog.Ref{{Field: "crew", Target: "zorp.crew", Name: "ann"}, {Field: "crew", Target: "zorp.crew", Name: "bo"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Refs = %+v, want %+v", got, want)
	}
	if got := catalog.Refs(cl, map[string]any{"crew": "solo"}); len(got) != 1 || got[0].Name != "solo" {
		t.Fatalf("a single value is one reference: %+v", got)
	}
	if got := catalog.Refs(cl, map[string]any{"name": "x"}); got != nil {
		t.Fatalf("no ref slots set, no references: %+v", got)
	}
}
