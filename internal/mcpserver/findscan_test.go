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
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// findSeeing calls sandbar_entity_find until its answer names want: instances the
// test made with its own client show in a cached find once the manager's watch
// brings them (a watch delivers in order, so the instances made before want are
// there too).
func findSeeing(t *testing.T, cs *mcp.ClientSession, args map[string]any, want string) *mcp.CallToolResult {
	t.Helper()
	var res *mcp.CallToolResult
	NewWithT(t).Eventually(func() string {
		res = callTool(t, cs, "sandbar_entity_find", args)
		return text(res)
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring(want))
	return res
}

// A find whose where clause matches nothing in the first pages of the list scans
// on instead of answering with an empty page and a continue token, and says how
// many instances it looked at. price is a number, which the API server cannot
// filter by, so the manager checks it.
func TestFindScansPastNonMatchingInstances(t *testing.T) {
	g := NewWithT(t)
	id := rand.String(5)
	for i := range 30 {
		newBoot(t, "default", fmt.Sprintf("scan-%s-%02d", id, i), map[string]any{"name": "Noise-" + id, "price": 1.5})
	}
	needle := "scan-" + id + "-zz"
	newBoot(t, "default", needle, map[string]any{"name": "Needle-" + id, "price": 2.5})

	cs := connect(t, mcpURL, token, nil)
	res := findSeeing(t, cs, map[string]any{"class": "zorp/SpaceBoot", "where": map[string]any{"price": 2.5}, "limit": 1}, needle)
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
		"class": "zorp/SpaceBoot", "where": map[string]any{"price": 99.5}, "limit": 1})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	out.Items, out.Continue = nil, ""
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed(), text(res))
	g.Expect(out.Items).To(BeEmpty())
	g.Expect(out.Continue).To(BeEmpty(), "the whole list was scanned")
	g.Expect(out.Scanned).To(BeNumerically(">=", 31))
}

// A where clause on slots the generated CRD declares selectable (single strings,
// integers and booleans) is checked by the manager's cache, by index, or by the API
// server: the manager reads only the matches, whatever the size of the list, and
// kubectl can filter the same way. An API server older than 1.31 (make test-matrix
// runs 1.30) ignores selectable fields: there a find that lists through it finds the
// same match by reading the list.
func TestFindFiltersSelectableSlotsAtTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	v, err := kube.Discovery().ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	selects := version.MustParseGeneric(v.GitVersion).AtLeast(version.MajorMinor(1, 31))
	id := rand.String(5)
	for i := range 30 {
		newBoot(t, "default", fmt.Sprintf("sel-%s-%02d", id, i), map[string]any{"name": "Noise-" + id, "tentacleCount": 3, "vacuumRated": false})
	}
	needle := "sel-" + id + "-zz"
	newBoot(t, "default", needle, map[string]any{"name": "Needle-" + id, "tentacleCount": 7, "vacuumRated": true})

	cs := connect(t, mcpURL, token, nil)
	for _, where := range []map[string]any{
		{"name": "Needle-" + id},
		{"name": "Needle-" + id, "tentacleCount": 7, "vacuumRated": true},
	} {
		res := findSeeing(t, cs, map[string]any{"class": "zorp/SpaceBoot", "where": where}, needle)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		var out struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
			Scanned  int    `json:"scanned"`
			Continue string `json:"continue"`
		}
		g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed(), text(res))
		g.Expect(out.Items).To(HaveLen(1), "where %v: %s", where, text(res))
		g.Expect(out.Items[0].Name).To(Equal(needle))
		if selects {
			g.Expect(out.Scanned).To(Equal(1), "where %v: only the match was read, not the 30 others: %s", where, text(res))
		} else {
			// Read from the manager's cache, by its index; or listed whole.
			g.Expect(out.Scanned).To(Or(Equal(1), BeNumerically(">=", 31)), "where %v: %s", where, text(res))
		}
		g.Expect(out.Continue).To(BeEmpty())
	}

	// A value of another kind than the slot's matches nothing, as before.
	res := callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "where": map[string]any{"tentacleCount": "7"}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var none struct {
		Count *int `json:"count"`
	}
	g.Expect(json.Unmarshal([]byte(text(res)), &none)).To(Succeed(), text(res))
	g.Expect(none.Count).To(HaveValue(BeZero()), text(res))

	// kubectl get spaceboots --field-selector spec.name=..., from 1.31.
	if !selects {
		return
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("zorp.sandbar.dev/v1")
	list.SetKind("SpaceBootList")
	g.Expect(k8s.List(context.Background(), list, client.InNamespace("default"),
		client.MatchingFields{"spec.name": "Needle-" + id})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].GetName()).To(Equal(needle))
}
