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

import "testing"

// An error names the calls to make instead in the served style, with JSON
// arguments a model and a program read alike, and a value left to the caller as
// written.
func TestInsteadWritesEachCallWithJSONArguments(t *testing.T) {
	c := &Call{Style: StyleDotted}
	got := Instead(
		c.Next("sandbar.entity.find", "list them", map[string]any{"class": "zorp/Wearer"}),
		c.Next("sandbar.class.zorp.Wearer", "create it", map[string]any{"handle": "<handle>", "metadata": map[string]any{"name": "a&b"}}),
		c.Next("sandbar.tasks.list", "", nil),
	)
	want := "call `sandbar.entity.find` with {\"class\":\"zorp/Wearer\"} to list them; " +
		"or call `sandbar.class.zorp.Wearer` with {\"handle\":\"<handle>\",\"metadata\":{\"name\":\"a&b\"}} to create it; " +
		"or call `sandbar.tasks.list`"
	if got != want {
		t.Errorf("Instead =\n%s\nwant\n%s", got, want)
	}
}
