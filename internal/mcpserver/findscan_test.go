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

package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/rand"
)

// A find whose where clause matches nothing in the first pages of the list scans
// on instead of answering with an empty page and a continue token, and says how
// many instances it looked at.
func TestFindScansPastNonMatchingInstances(t *testing.T) {
	g := NewWithT(t)
	id := rand.String(5)
	for i := range 30 {
		newBoot(t, "default", fmt.Sprintf("scan-%s-%02d", id, i), map[string]any{"name": "Noise-" + id})
	}
	needle := "scan-" + id + "-zz"
	newBoot(t, "default", needle, map[string]any{"name": "Needle-" + id})

	cs := connect(t, mcpURL, token, nil)
	res := callTool(t, cs, "sandbar_entity_find", map[string]any{
		"class": "zorp/SpaceBoot", "where": map[string]any{"name": "Needle-" + id}, "limit": 1})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var out struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
		Scanned  int    `json:"scanned"`
		Continue string `json:"continue"`
		Note     string `json:"note"`
	}
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed(), text(res))
	g.Expect(out.Items).To(HaveLen(1), "the match after 30 non-matching instances is found in one call: %s", text(res))
	g.Expect(out.Items[0].Name).To(Equal(needle))
	g.Expect(out.Scanned).To(BeNumerically(">=", 31), "the result says how many instances were scanned")
	g.Expect(out.Note).To(BeEmpty())

	// Nothing matches at all: the list ends, with no continue token and no empty page promising more.
	res = callTool(t, cs, "sandbar_entity_find", map[string]any{
		"class": "zorp/SpaceBoot", "where": map[string]any{"name": "Absent-" + id}, "limit": 1})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	out.Items, out.Continue = nil, ""
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed(), text(res))
	g.Expect(out.Items).To(BeEmpty())
	g.Expect(out.Continue).To(BeEmpty(), "the whole list was scanned")
	g.Expect(out.Scanned).To(BeNumerically(">=", 31))
}
