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

// A URI either parses and prints back as itself, or is refused: never a panic.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"mcp://sandbar/zorp/SpaceBoot/default/moonwalker", "mcp://sandbar/meta/Class/zorp.spaceboot",
		"mcp://sandbar/zorp/SpaceBoot/default/x?format=markdown", "mcp://sandbar//", "mcp://sandbar/a/B/c/d?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		ref, err := ParseURI(uri)
		if err == nil && ref.String() != uri {
			t.Fatalf("ParseURI(%q) = %+v, which prints as %q", uri, ref, ref.String())
		}
	})
}
