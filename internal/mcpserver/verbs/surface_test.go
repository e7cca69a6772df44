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

package verbs_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// surface is what tools/list shows a client: its tools' names, and its size in
// tokens as a model reads it (bytes/4, the usual estimate).
type surface struct {
	names  []string
	tokens int
}

// listAs lists the tools of s as a client that names itself client.
func listAs(tb testing.TB, s *mcptest.Server, client string) surface {
	tb.Helper()
	res := toolsAs(tb, s, client)
	raw, err := json.Marshal(res)
	if err != nil {
		tb.Fatal(err)
	}
	out := surface{tokens: len(raw) / 4}
	for _, t := range res.Tools {
		out.names = append(out.names, t.Name)
	}
	return out
}

// sessionAs is a session with s of a client that names itself client; the caller
// closes it.
func sessionAs(tb testing.TB, s *mcptest.Server, client string) *mcp.ClientSession {
	tb.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: client, Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: testenv.Bearer{Token: s.Token}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: mcptest.SessionRevision})
	if err != nil {
		tb.Fatalf("connecting as %s: %v", client, err)
	}
	return cs
}

// toolsAs is the tools/list answer of s to a client that names itself client.
func toolsAs(tb testing.TB, s *mcptest.Server, client string) *mcp.ListToolsResult {
	tb.Helper()
	cs := sessionAs(tb, s, client)
	defer func() { _ = cs.Close() }()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		tb.Fatalf("tools/list as %s: %v", client, err)
	}
	return res
}

// What a connector directory asks of every tool, checked on each one served to an
// account that may call them all, of the samples and of a metamodel of 100 classes:
// a title, the four annotations (a read-only tool destroys nothing; exactly the tools
// that delete, cancel, or replace what exists are destructive; none reaches outside
// the cluster), and a name of at most 64 characters behind Claude Code's prefix.
func TestEveryServedToolIsReadyForAConnectorDirectory(t *testing.T) {
	destructive := []string{"sandbar_entity_update", "sandbar_entity_delete", "sandbar_tasks_cancel", "sandbar_validation_cancel",
		"sandbar_schema_define-class", "sandbar_schema_define-property", "sandbar_workflow_define", "sandbar_project_import"}
	for _, copies := range []int{0, 96} {
		res := toolsAs(t, startWith(t, mcptest.Config{Copies: copies}), "claude-code")
		var names, gotDestructive []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
			a := tl.Annotations
			switch {
			case tl.Title == "" || a == nil || a.Title != tl.Title:
				t.Errorf("%s: title %q, annotations %+v", tl.Name, tl.Title, a)
			case a.DestructiveHint == nil || a.OpenWorldHint == nil || *a.OpenWorldHint:
				t.Errorf("%s: destructiveHint and openWorldHint (false) are said: %+v", tl.Name, a)
			case a.ReadOnlyHint && *a.DestructiveHint:
				t.Errorf("%s: read-only and destructive", tl.Name)
			case len(tool.DefaultClientPrefix+tl.Name) > tool.MaxClientName:
				t.Errorf("%s: %d characters behind %s", tl.Name, len(tool.DefaultClientPrefix+tl.Name), tool.DefaultClientPrefix)
			}
			if a != nil && a.DestructiveHint != nil && *a.DestructiveHint {
				gotDestructive = append(gotDestructive, tl.Name)
			}
		}
		if len(classTools(names)) != 4+copies {
			t.Errorf("%d classes: %d class tools served", 4+copies, len(classTools(names)))
		}
		NewWithT(t).Expect(gotDestructive).To(ConsistOf(destructive), "%d classes", 4+copies)
	}
}

func startWith(tb testing.TB, c mcptest.Config) *mcptest.Server {
	tb.Helper()
	s, err := mcptest.StartWith(c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

func classTools(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "sandbar_class_") && len(strings.Split(n, "_")) == 4 {
			out = append(out, n)
		}
	}
	return out
}

// The sample account, as config/samples declares it (no toolsets, no clients), is
// listed the core verbs and every class's own tool (not the define tools its
// permissions grant beside "*"), in at most 8,000 tokens, by every client README
// lists and by one it does not know.
func TestSampleAccountIsListedTheCoreVerbsAndEveryClassTool(t *testing.T) {
	g := NewWithT(t)
	s := startWith(t, mcptest.Config{Account: mcptest.SampleAccount})
	for _, client := range []string{"claude-code", "claude-ai", "cursor-vscode", "Visual Studio Code", "codex-mcp-client", "antigravity-client",
		"windsurf-client", "mcp-inspector", "some-agent"} {
		got := listAs(t, s, client)
		g.Expect(classTools(got.names)).To(ConsistOf("sandbar_class_zorp_SpaceBoot", "sandbar_class_zorp_Wearer",
			"sandbar_class_zorp_Review", "sandbar_class_order_Order"), client)
		g.Expect(got.names).To(ContainElements("sandbar_entity_find", "sandbar_entity_update", "sandbar_entity_delete",
			"sandbar_class_describe", "sandbar_workflow_start-process", "sandbar_workflow_transition", "sandbar_workflow_process-state",
			"sandbar_tasks_get"), client)
		g.Expect(got.names).NotTo(ContainElements("sandbar_schema_classes", "sandbar_entity_create", "sandbar_entity_schema",
			"sandbar_schema_define-class"), client)
		g.Expect(got.names).To(HaveLen(15), client)
		g.Expect(got.tokens).To(BeNumerically("<=", 8000), "%s: %d tokens", client, got.tokens)
	}
}

// Past a client's limit, as the client names itself, the per-class tools give way to
// the generic create and the create schema, and a per-class tool called anyway says
// what to call instead; within it, or with no limit, a client is listed every class's
// tool. An account's toolsets add the groups it names.
func TestToolsetsAndTheClientsLimitShapeTheList(t *testing.T) {
	g := NewWithT(t)
	s := startWith(t, mcptest.Config{Account: mcptest.SampleAccount, Copies: 70}) // 74 classes, 85 tools
	for client, limit := range map[string]int{"cursor-vscode": 80, "windsurf-client": 50} {
		over := listAs(t, s, client)
		g.Expect(classTools(over.names)).To(BeEmpty(), client)
		g.Expect(over.names).To(ContainElements("sandbar_entity_create", "sandbar_entity_schema", "sandbar_entity_find"), client)
		g.Expect(len(over.names)).To(BeNumerically("<=", limit), client)
	}
	cs := sessionAs(t, s, "cursor-vscode")
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_class_zorp_SpaceBoot", Arguments: map[string]any{"name": "x"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(res.Content[0].(*mcp.TextContent).Text).To(ContainSubstring("more than the 80 its clients take (Cursor, as the client names itself)"))
	for _, client := range []string{"claude-code", "antigravity-client"} {
		within := listAs(t, s, client)
		g.Expect(classTools(within.names)).To(HaveLen(74), client)
		g.Expect(within.names).NotTo(ContainElement("sandbar_entity_schema"), client)
	}

	s = startWith(t, mcptest.Config{Account: func(spec *metav1alpha1.ServiceAccountSpec) {
		spec.Toolsets = []string{"core", "project"}
	}})
	got := listAs(t, s, "claude-code")
	g.Expect(got.names).To(ContainElements("sandbar_project_export", "sandbar_project_import", "sandbar_entity_find"))
	g.Expect(got.names).NotTo(ContainElement("sandbar_schema_classes"))

	// Permissions without "*" are the admin's choice of tools: each is listed.
	s = startWith(t, mcptest.Config{Account: func(spec *metav1alpha1.ServiceAccountSpec) {
		spec.Permissions.Tools = []string{"sandbar_schema_*", "sandbar_class_zorp_*"}
	}})
	got = listAs(t, s, "claude-code")
	g.Expect(got.names).To(ContainElements("sandbar_schema_classes", "sandbar_schema_entities", "sandbar_class_zorp_SpaceBoot"))
	g.Expect(got.names).NotTo(ContainElement("sandbar_entity_find"))
}

// BenchmarkToolSurface* report what tools/list costs a model's context (tokens, as
// bytes/4, and tools) for the sample account as config/samples declares it; each
// Baseline is the same account before toolsets and client-named limits: every verb,
// for Claude Code or Cursor as declared in spec.clients. hack/bench-ratios.sh prints
// each against its baseline.
func BenchmarkToolSurfaceSample(b *testing.B) { surfaceBench(b, 0, "claude-code", nil) }
func BenchmarkToolSurfaceSampleBaseline(b *testing.B) {
	surfaceBench(b, 0, "claude-code", before("claude-code"))
}
func BenchmarkToolSurface100Classes(b *testing.B) { surfaceBench(b, 96, "claude-code", nil) }
func BenchmarkToolSurface100ClassesBaseline(b *testing.B) {
	surfaceBench(b, 96, "claude-code", before("claude-code"))
}
func BenchmarkToolSurface100ClassesCursor(b *testing.B) { surfaceBench(b, 96, "cursor-vscode", nil) }
func BenchmarkToolSurface100ClassesCursorBaseline(b *testing.B) {
	surfaceBench(b, 96, "cursor-vscode", before("cursor"))
}

// before is the account as it was served before toolsets: every verb, for the
// clients it declares.
func before(client string) func(*metav1alpha1.ServiceAccountSpec) {
	return func(spec *metav1alpha1.ServiceAccountSpec) {
		spec.Toolsets, spec.Clients = []string{"all"}, []string{client}
	}
}

// surfaceBench lists the tools of the samples and copies more classes (the samples
// have four concrete ones) as client, for the account as account changes it (nil:
// as config/samples declares it).
func surfaceBench(b *testing.B, copies int, client string, account func(*metav1alpha1.ServiceAccountSpec)) {
	if account == nil {
		account = mcptest.SampleAccount
	}
	s := startWith(b, mcptest.Config{Account: account, Copies: copies})
	var got surface
	for b.Loop() {
		got = listAs(b, s, client)
	}
	b.ReportMetric(float64(got.tokens), "tokens")
	b.ReportMetric(float64(len(got.names)), "tools")
}
