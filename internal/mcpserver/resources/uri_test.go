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

package resources

import (
	"testing"
)

func TestPureResourceURIs(t *testing.T) {
	for _, ref := range []ResourceRef{
		{Prefix: "zorp", Kind: "SpaceBoot", Namespace: "default", Name: "moonwalker"},
		{Prefix: "zorp", Kind: "SpaceBoot", Namespace: "default", Name: "moonwalker", Format: "markdown"},
		{Prefix: "meta", Kind: "Class", Namespace: "team-a", Name: "a.b-c"},
		{MetaKind: MetaClass, Name: "zorp.spaceboot"},
		{MetaKind: MetaProperty, Name: "footwear.tentacle-count"},
		{MetaKind: MetaWorkflow, Name: "order.fulfillment"},
	} {
		got, err := ParseURI(ref.String())
		if err != nil || got != ref {
			t.Errorf("ParseURI(%q) = %+v, %v; want %+v", ref.String(), got, err, ref)
		}
	}
	for _, bad := range []string{
		"", "mcp://other/zorp/SpaceBoot/default/x", "mcp://sandbar/", "mcp://sandbar/zorp/SpaceBoot/default",
		"mcp://sandbar/zorp/SpaceBoot/default/x/y", "mcp://sandbar/Zorp/SpaceBoot/default/x", "mcp://sandbar/zorp/spaceBoot/default/x",
		"mcp://sandbar/zorp/SpaceBoot/Default/x", "mcp://sandbar/zorp/SpaceBoot/default/X", "mcp://sandbar/meta/Thing/x",
		"mcp://sandbar/meta/Class/", "mcp://sandbar/zorp/SpaceBoot/default/../x",
		"mcp://sandbar/zorp/SpaceBoot/default/x?format=yaml", "mcp://sandbar/zorp/SpaceBoot/default/x?fmt=json", "mcp://sandbar/meta/Class/x?format=json",
	} {
		if ref, err := ParseURI(bad); err == nil {
			t.Errorf("ParseURI(%q) = %+v, want an error", bad, ref)
		}
	}
}
