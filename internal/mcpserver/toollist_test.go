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

// tools/list is answered from answers rendered once per served tool set, account
// permissions, revision and page: these tests hold the cache to the answers the
// server gave without one.

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

func sortedNames(tools map[string]*mcp.Tool) []string {
	out := make([]string, 0, len(tools))
	for n := range tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Accounts with different permissions list in turn, through one server, at both
// revisions: each sees its own tools every time, never the list another account
// was just given.
func TestAccountsListingInTurnEachSeeOnlyTheirOwnTools(t *testing.T) {
	g := NewWithT(t)
	_, schemaTok := newAccount(t, unique("lists-schema"), metav1alpha1.Permissions{Tools: []string{"sandbar_schema_*"}})
	_, findTok := newAccount(t, unique("lists-find"), metav1alpha1.Permissions{Tools: []string{"sandbar_entity_find"}, ReadOnly: true})
	_, noneTok := newAccount(t, unique("lists-none"), metav1alpha1.Permissions{Tools: []string{"sandbar_nothing_*"}})

	type lister struct {
		who  string
		cs   *mcp.ClientSession
		want func(who string, names []string)
	}
	var listers []lister
	for _, rev := range []string{sessionRevision, revision2026} {
		schemaCS, _ := connectAt(t, mcpURL, schemaTok, rev, nil)
		findCS, _ := connectAt(t, mcpURL, findTok, rev, nil)
		noneCS, _ := connectAt(t, mcpURL, noneTok, rev, nil)
		allCS, _ := connectAt(t, mcpURL, token, rev, nil)
		listers = append(listers,
			lister{"schema.* at " + rev, schemaCS, func(who string, names []string) {
				g.Expect(names).NotTo(BeEmpty(), who)
				for _, n := range names {
					g.Expect(n).To(HavePrefix("sandbar_schema_"), who)
				}
			}},
			lister{"entity.find at " + rev, findCS, func(who string, names []string) {
				g.Expect(names).To(Equal([]string{"sandbar_entity_find"}), who)
			}},
			lister{"no tools at " + rev, noneCS, func(who string, names []string) { g.Expect(names).To(BeEmpty(), who) }},
			lister{"every tool at " + rev, allCS, func(who string, names []string) {
				g.Expect(names).To(ContainElements("sandbar_entity_create", "sandbar_schema_classes", "sandbar_class_zorp_SpaceBoot"), who)
			}},
		)
	}
	for range 3 {
		for _, l := range listers {
			l.want(l.who, sortedNames(listTools(t, l.cs)))
		}
	}
}

// A change to a Class shows in the first tools/list after the server said the list
// changed: no answer rendered before the change is served after it.
func TestClassChangeShowsInTheNextToolsList(t *testing.T) {
	g := NewWithT(t)
	st := catalog.NewStore()
	publish := func(description string) {
		real := store.Load()
		c := &catalog.Class{
			Name: "listed.thing", Prefix: "listed", Kind: "Thing", Description: description, Ready: true,
			InstanceAPI: &catalog.InstanceAPI{Group: "listed.sandbar.dev", Version: "v1", Kind: "Thing", Plural: "things", Established: true},
			Slots:       []*catalog.Slot{{Definition: &catalog.Definition{Field: "label", Range: "string", Cardinality: "one", Description: "A label."}}},
		}
		st.Publish(&catalog.Snapshot{Classes: map[string]*catalog.Class{c.Name: c}, Properties: real.Properties,
			Workflows: real.Workflows, Accounts: real.Accounts})
	}
	publish("The first of its name.")
	url := serveStore(t, st, mcpserver.Options{ToolSurface: mcpserver.SurfacePerClass})

	for _, rev := range []string{sessionRevision, revision2026} {
		changed := make(chan struct{}, 16)
		cs, _ := connectAt(t, url, token, rev, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
		desc := func() string {
			tl := listTools(t, cs)["sandbar_class_listed_Thing"]
			if tl == nil {
				return ""
			}
			return tl.Description
		}
		g.Eventually(desc).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("The first of its name."))
		g.Expect(desc()).To(ContainSubstring("The first of its name."), "a second list, from the cache")

		publish("The second of its name, at " + rev + ".")
		if rev == sessionRevision {
			// A session hears of the change; the very next list has it.
			g.Eventually(changed).WithTimeout(timeout).Should(Receive())
			g.Expect(desc()).To(ContainSubstring("The second of its name"))
		} else {
			// The stateless revision has no stream to hear it on: it lists again.
			g.Eventually(desc).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("The second of its name"))
		}
		g.Expect(desc()).NotTo(ContainSubstring("The first of its name."))
		publish("The first of its name.")
		g.Eventually(desc).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("The first of its name."))
	}
}

// A list of a thousand classes comes in pages; from the cache every page is the
// page the server rendered, at both revisions, each in its own form: a session's
// tools carry execution.taskSupport, the stateless revision's answers say
// resultType complete, their cache scope and the server's info.
func TestPagedListOfAThousandClassesComesWholeFromTheCacheAtBothRevisions(t *testing.T) {
	g := NewWithT(t)
	url := serveStore(t, syntheticCatalog(), mcpserver.Options{ToolSurface: mcpserver.SurfacePerClass})
	var first map[string]*mcp.Tool
	for _, rev := range []string{sessionRevision, revision2026} {
		cs, _ := connectAt(t, url, token, rev, nil)
		g.Eventually(func() int { return len(listTools(t, cs)) }).WithTimeout(timeout).WithPolling(poll).Should(BeNumerically(">=", 1000))
		for range 2 {
			n := 0
			for _, err := range cs.Tools(context.Background(), nil) {
				g.Expect(err).NotTo(HaveOccurred())
				n++
			}
			tools := listTools(t, cs)
			g.Expect(n).To(Equal(len(tools)), "no tool twice across the pages")
			if first == nil {
				first = tools
			}
			g.Expect(sortedNames(tools)).To(Equal(sortedNames(first)))
			for name, tl := range tools {
				a, _ := json.Marshal(tl.InputSchema)
				b, _ := json.Marshal(first[name].InputSchema)
				g.Expect(a).To(MatchJSON(b), name)
			}
		}
	}

	// The forms, read raw, twice each: the second answer from the cache.
	session := newRawSession(t, url, token)
	stateless := newStatelessRaw(t, url, token, true)
	var pages [2][]string
	for range 2 {
		res := session.call("tools/list", map[string]any{})
		g.Expect(res.Error).To(BeNil())
		var list struct {
			Tools []map[string]any `json:"tools"`
		}
		g.Expect(json.Unmarshal(res.Result, &list)).To(Succeed())
		g.Expect(list.Tools).NotTo(BeEmpty())
		for _, tl := range list.Tools {
			g.Expect(tl).To(HaveKeyWithValue("execution", HaveKey("taskSupport")), "%v", tl["name"])
		}
		pages[0] = append(pages[0], string(res.Result))

		out := stateless.result("tools/list", "", nil)
		g.Expect(out["resultType"]).To(Equal("complete"))
		g.Expect(out["cacheScope"]).To(Equal("private"))
		g.Expect(out["_meta"]).To(HaveKey(mcp.MetaKeyServerInfo))
		g.Expect(out["nextCursor"]).NotTo(BeEmpty(), "a thousand classes take more than one page")
		for _, tl := range out["tools"].([]any) {
			g.Expect(tl).NotTo(HaveKey("execution"))
		}
		b, _ := json.Marshal(out)
		pages[1] = append(pages[1], string(b))
	}
	g.Expect(pages[0][1]).To(MatchJSON(pages[0][0]), "a session's second answer is its first")
	g.Expect(pages[1][1]).To(MatchJSON(pages[1][0]), "a stateless second answer is its first")
	g.Expect(strings.Count(pages[0][0], `"name":"sandbar_class_bench_`)).To(BeNumerically(">", 900))
}
