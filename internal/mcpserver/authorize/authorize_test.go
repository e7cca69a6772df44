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

package authorize

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

func account(p metav1alpha1.Permissions) *catalog.Account {
	return &catalog.Account{Namespace: "team-a", Name: "bot", Permissions: p}
}

func TestMayCall(t *testing.T) {
	find := tool.Info{Canonical: "sandbar.entity.find", ReadOnly: true}
	create := tool.Info{Canonical: "sandbar.entity.create"}
	for _, tc := range []struct {
		name  string
		perms metav1alpha1.Permissions
		tool  string
		info  tool.Info
		want  bool
	}{
		{"no globs: every tool", metav1alpha1.Permissions{}, "sandbar_entity_create", create, true},
		{"an empty list: no tool", metav1alpha1.Permissions{Tools: []string{}}, "sandbar_entity_find", find, false},
		{"read-only: a reader", metav1alpha1.Permissions{ReadOnly: true}, "sandbar_entity_find", find, true},
		{"read-only: not a writer", metav1alpha1.Permissions{ReadOnly: true}, "sandbar_entity_create", create, false},
		{"glob on the served name", metav1alpha1.Permissions{Tools: []string{"sandbar_entity_*"}}, "sandbar_entity_create", create, true},
		{"glob on the canonical name", metav1alpha1.Permissions{Tools: []string{"sandbar.entity.*"}}, "sandbar_entity_create", create, true},
		{"no glob matches", metav1alpha1.Permissions{Tools: []string{"sandbar.schema.*"}}, "sandbar_entity_find", find, false},
	} {
		if got := MayCall(account(tc.perms), tc.tool, tc.info); got != tc.want {
			t.Errorf("%s: MayCall = %v, want %v", tc.name, got, tc.want)
		}
	}
	if MayCall(nil, "sandbar_entity_find", find) {
		t.Error("no account may call a tool")
	}
}

// A tool granted only by name (workflow.define) is allowed by no glob, not even "*"
// or one that matches its whole domain, and never to a read-only account.
func TestExplicitToolIsGrantedOnlyByName(t *testing.T) {
	define := tool.Info{Canonical: "sandbar.workflow.define", Explicit: true}
	for _, tc := range []struct {
		name  string
		perms metav1alpha1.Permissions
		tool  string
		want  bool
	}{
		{"no globs (every tool)", metav1alpha1.Permissions{}, "sandbar_workflow_define", false},
		{`"*"`, metav1alpha1.Permissions{Tools: []string{"*"}}, "sandbar_workflow_define", false},
		{"its domain", metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_*", "sandbar.workflow.*"}}, "sandbar_workflow_define", false},
		{"a glob that matches only it", metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_defin?"}}, "sandbar_workflow_define", false},
		{"named, underscore", metav1alpha1.Permissions{Tools: []string{"*", "sandbar_workflow_define"}}, "sandbar_workflow_define", true},
		{"named, dotted", metav1alpha1.Permissions{Tools: []string{"sandbar.workflow.define"}}, "sandbar_workflow_define", true},
		{"named in the other style of a dotted server", metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_define"}}, "sandbar.workflow.define", true},
		{"named, but read-only", metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_define"}, ReadOnly: true}, "sandbar_workflow_define", false},
	} {
		if got := MayCall(account(tc.perms), tc.tool, define); got != tc.want {
			t.Errorf("%s: MayCall = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !MayCall(account(metav1alpha1.Permissions{}), "sandbar_workflow_find", tool.Info{Canonical: "sandbar.workflow.find", ReadOnly: true}) {
		t.Error("the other workflow tools are still granted by globs")
	}
}

func TestNamespace(t *testing.T) {
	own := account(metav1alpha1.Permissions{})
	if ns, err := Namespace(own, ""); err != nil || ns != "team-a" {
		t.Errorf("no namespace asked: %q, %v; want the account's own", ns, err)
	}
	_, err := Namespace(own, "team-b")
	if !tool.IsDomain(err) || !strings.Contains(err.Error(), `forbidden: this account may act in namespace "team-a", not "team-b"`) {
		t.Errorf("another namespace: %v", err)
	}
	shared := account(metav1alpha1.Permissions{Namespaces: []string{"shared"}})
	if ns, err := Namespace(shared, "shared"); err != nil || ns != "shared" {
		t.Errorf("a listed namespace: %q, %v", ns, err)
	}
	if _, err := Namespace(shared, "team-b"); err == nil || !strings.Contains(err.Error(), `"team-a" and shared`) {
		t.Errorf("the refusal names the namespaces it may use: %v", err)
	}
	if !NamespaceAllowed(account(metav1alpha1.Permissions{Namespaces: []string{"*"}}), "anything") {
		t.Error(`"*" allows every namespace`)
	}
}

// The budget a tools/call is checked against is kept per served table and account:
// a new table (a class added) and a changed account (a new catalog object) are each
// counted again, never answered from what an earlier table or account had.
func TestBudgetFollowsTheServedTableAndTheAccount(t *testing.T) {
	var served tool.Table
	g := NewGuard(&served, tool.StyleUnderscore, 3)
	find := tool.Info{Canonical: "sandbar.entity.find", ReadOnly: true, Core: true}
	perClass := func(class string) tool.Info {
		return tool.Info{Canonical: "sandbar.zorp." + class + ".create", Class: "zorp." + class}
	}
	served.Replace(map[string]tool.Info{"sandbar_entity_find": find, "sandbar_zorp_a_create": perClass("a")}, nil)
	acct := account(metav1alpha1.Permissions{})
	if b := g.Budget(acct, ""); b.Over || b.Would != 2 {
		t.Fatalf("two tools under a limit of 3: %+v", b)
	}
	if b := g.Budget(acct, ""); b.Over || b.Would != 2 {
		t.Fatalf("asked again: %+v", b)
	}
	served.Replace(map[string]tool.Info{"sandbar_entity_find": find, "sandbar_zorp_a_create": perClass("a"),
		"sandbar_zorp_b_create": perClass("b"), "sandbar_zorp_c_create": perClass("c")}, nil)
	if b := g.Budget(acct, ""); !b.Over || b.Would != 4 {
		t.Errorf("after two classes were added the account would see 4 tools, over its 3: %+v", b)
	}
	narrow := account(metav1alpha1.Permissions{Tools: []string{"sandbar_entity_*"}})
	if b := g.Budget(narrow, ""); b.Over || b.Would != 1 {
		t.Errorf("the account's new permissions allow one tool: %+v", b)
	}
}

// Toolsets choose what tools/list shows, never what may be called: the core toolset
// lists its verbs and every class's tool, and lists the generic create and the create
// schema only where the per-class tools are not all served; a named group lists its
// verbs; all lists every verb.
func TestToolsetsChooseWhatIsListedNotWhatMayBeCalled(t *testing.T) {
	tools := map[string]tool.Info{
		"sandbar_entity_find":    {Canonical: "sandbar.entity.find", ReadOnly: true, Core: true},
		"sandbar_entity_create":  {Canonical: "sandbar.entity.create", Core: true, InPlaceOfClasses: true},
		"sandbar_entity_schema":  {Canonical: "sandbar.entity.schema", ReadOnly: true, Core: true, InPlaceOfClasses: true},
		"sandbar_schema_classes": {Canonical: "sandbar.schema.classes", ReadOnly: true},
		"sandbar_project_export": {Canonical: "sandbar.project.export", ReadOnly: true},
		"sandbar_class_zorp_A":   {Canonical: "sandbar.class.zorp.A", Class: "zorp.a"},
		"sandbar_class_zorp_B":   {Canonical: "sandbar.class.zorp.B", Class: "zorp.b"},
	}
	// listed is what tools/list shows an account of a budget, as the Guard filters it.
	var who *catalog.Account
	listed := func(b Budget) []string {
		var out []string
		for name, info := range tools {
			if MayCall(who, name, info) && b.Lists(info) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	acct := account(metav1alpha1.Permissions{})
	who = acct
	b := Plan(acct, "", tools, false, 0)
	if got := listed(b); !slices.Equal(got, []string{"sandbar_class_zorp_A", "sandbar_class_zorp_B", "sandbar_entity_find"}) {
		t.Errorf("the core toolset lists %v", got)
	}
	if !b.Shows(tools["sandbar_schema_classes"]) || !b.Shows(tools["sandbar_entity_create"]) {
		t.Error("a verb the toolsets do not list may still be called")
	}
	if !strings.Contains(b.Describe(), "2 more tools its permissions allow are not listed (toolsets: core)") {
		t.Errorf("the status says what is not listed: %s", b.Describe())
	}

	// Past the limit (2, from spec.maxTools): the core verbs and the two in place of the classes.
	acct.MaxTools = 2
	b = Plan(acct, "", tools, false, 0)
	if got := listed(b); !b.Over || !slices.Equal(got, []string{"sandbar_entity_create", "sandbar_entity_find", "sandbar_entity_schema"}) {
		t.Errorf("past its limit the account is listed %v (%+v)", got, b)
	}
	// A class withheld from every client: the create and its schema are listed beside the classes.
	acct.MaxTools = 0
	b = Plan(acct, "", tools, true, 0)
	if got := listed(b); len(got) != 5 || !slices.Contains(got, "sandbar_entity_schema") {
		t.Errorf("with a class withheld the account is listed %v", got)
	}

	acct.Toolsets = []string{"project", "core"}
	if got := listed(Plan(acct, "", tools, false, 0)); !slices.Contains(got, "sandbar_project_export") || slices.Contains(got, "sandbar_schema_classes") {
		t.Errorf("toolsets core and project list %v", got)
	}
	acct.Toolsets = []string{"all"}
	if got := listed(Plan(acct, "", tools, false, 0)); len(got) != len(tools) {
		t.Errorf("toolset all lists %v, not every tool", got)
	}
	// Narrow permissions (a list without "*") list every tool they allow; beside
	// "*", an entry grants what no glob does and lists nothing more.
	narrow := account(metav1alpha1.Permissions{Tools: []string{"sandbar_project_*", "sandbar_entity_find"}})
	who = narrow
	if got := listed(Plan(narrow, "", tools, false, 0)); !slices.Equal(got, []string{"sandbar_entity_find", "sandbar_project_export"}) {
		t.Errorf("permissions sandbar_project_* and sandbar_entity_find list %v", got)
	}
	broad := account(metav1alpha1.Permissions{Tools: []string{"*", "sandbar_project_*"}})
	who = broad
	if got := listed(Plan(broad, "", tools, false, 0)); slices.Contains(got, "sandbar_project_export") {
		t.Errorf("beside \"*\" the toolsets decide: %v", got)
	}
	who = acct
	acct.Toolsets = []string{"schema"}
	if got := listed(Plan(acct, "", tools, false, 0)); !slices.Equal(got, []string{"sandbar_class_zorp_A", "sandbar_class_zorp_B", "sandbar_schema_classes"}) {
		t.Errorf("toolset schema lists %v", got)
	}
}

// The guard keeps a budget per account and client: the same account is listed
// every class's tool by a client with no limit and none by one whose limit they exceed.
func TestBudgetFollowsTheClientThatAsks(t *testing.T) {
	var served tool.Table
	g := NewGuard(&served, tool.StyleUnderscore, 0)
	served.Replace(map[string]tool.Info{"sandbar_entity_find": {Canonical: "sandbar.entity.find", ReadOnly: true, Core: true},
		"sandbar_class_zorp_A": {Canonical: "sandbar.class.zorp.A", Class: "zorp.a"}}, nil)
	acct := account(metav1alpha1.Permissions{})
	acct.MaxTools = 0
	if b := g.Budget(acct, "claude-code"); b.Over || b.Limit != 0 {
		t.Errorf("claude-code takes every tool: %+v", b)
	}
	// A limit of one tool (as no known client has) through spec.maxTools, then back.
	acct.MaxTools = 1
	if b := g.Budget(acct, "cursor"); !b.Over || b.Client != "spec.maxTools" {
		t.Errorf("spec.maxTools wins over the client's name: %+v", b)
	}
}

// From 80% of the most tools its clients take, an account's budget warns, naming
// the client; below, and past the limit, it does not.
func TestBudgetWarnsFromEightyPercentOfTheLimit(t *testing.T) {
	table := func(n int) map[string]tool.Info {
		tools := map[string]tool.Info{"sandbar_entity_find": {Canonical: "sandbar.entity.find", ReadOnly: true, Core: true}}
		for i := range n - 1 {
			tools[fmt.Sprintf("sandbar_class_zorp_K%d", i)] = tool.Info{Canonical: fmt.Sprintf("sandbar.class.zorp.K%d", i), Class: fmt.Sprintf("zorp.k%d", i)}
		}
		return tools
	}
	acct := account(metav1alpha1.Permissions{})
	acct.MaxTools, acct.Clients = 0, []string{"claude-code", "windsurf"}
	for _, tc := range []struct {
		tools int
		near  bool
		says  string
	}{
		{39, false, "the account sees 39 tools; its clients take 50 (Windsurf, as the account declares)"},
		{40, true, "the account sees 40 tools, 80% of the 50 its clients take (Windsurf, as the account declares): near the limit, past which it is served the operational verbs instead of its 39 per-class tools"},
		{50, true, "the account sees 50 tools, 100% of the 50"},
		{51, false, "the account would see 51 tools, more than the 50 its clients take (Windsurf, as the account declares)"},
	} {
		b := Plan(acct, "", table(tc.tools), false, 0)
		if b.Near() != tc.near || !strings.HasPrefix(b.Describe(), tc.says) {
			t.Errorf("%d tools: near %v, %q; want near %v, %q", tc.tools, b.Near(), b.Describe(), tc.near, tc.says)
		}
	}
}
