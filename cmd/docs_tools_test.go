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

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
)

// docs/reference/tools.md is every operational verb as the server declares it
// (verbs.Env.All, the list tools/list shows): its names, annotations, whether it
// runs as a task, and its arguments from its input schema.
func TestToolsReference(t *testing.T) {
	defs := (&verbs.Env{}).All()
	for _, d := range defs {
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
	}
	checkGenerated(t, "docs/reference/tools.md", "TestToolsReference", renderTools(defs))
}

func renderTools(defs []*tool.Def) string {
	// An empty catalog: the enums of class, property and workflow names a server
	// fills in from its catalog are left out.
	snap := &catalog.Snapshot{}
	var b strings.Builder
	b.WriteString(generatedHeader("TestToolsReference", "the verb table of `internal/mcpserver/verbs`"))
	b.WriteString("# Tools reference\n\n")
	b.WriteString("Every operational verb the MCP server declares, in the order `tools/list` shows them: its name,\n")
	b.WriteString("title, description, annotations, whether it may run as an MCP task, and its arguments from its\n")
	b.WriteString("input schema. What the tools are for, with the resources, prompts, codecs, tasks and limits\n")
	b.WriteString("around them: [Tools, resources, prompts and tasks](../tools.md).\n\n")
	b.WriteString("- **Names.** Served as below by default (`--tool-name-style=underscore`); with\n")
	b.WriteString("  `--tool-name-style=dotted` each is its dotted name (`sandbar.entity.create`), and so are the tool\n")
	b.WriteString("  names the descriptions mention. Arguments whose values come from the catalog (a class, a property,\n")
	b.WriteString("  a workflow) list the catalog's names as an enum in `tools/list`; they are not repeated here.\n")
	b.WriteString("- **Per-class tools** are not in this table: each concrete, ready Class also gets a create tool,\n")
	b.WriteString("  `sandbar_class_<prefix>_<Kind>` (dotted `sandbar.class.<prefix>.<Kind>`), whose arguments are the\n")
	b.WriteString("  class's slots and `metadata` (`--tool-surface` chooses which tools are served).\n")
	b.WriteString("- **Annotations.** `readOnlyHint`, `destructiveHint` and `idempotentHint` as declared; every tool\n")
	b.WriteString("  has `openWorldHint: false`. **Task**: `optional` tools may be called with `params.task` and run\n")
	b.WriteString("  as an MCP task (a WorkflowProcess); the others are `forbidden`.\n")
	b.WriteString("- **Granted by name**: no glob in an account's `spec.permissions.tools` grants the tool, not even\n")
	b.WriteString("  `*`; the list must name it, and a read-only account never has it.\n")
	b.WriteString("- **Core**: in the `core` toolset, which `tools/list` shows an account that names no\n")
	b.WriteString("  `spec.toolsets`; *in place of classes*: listed in it only to an account not served every per-class\n")
	b.WriteString("  tool. Every verb is in the toolset of its group (`sandbar_<group>_*`) and in `all`; an account may\n")
	b.WriteString("  call any verb its permissions allow, listed or not.\n")
	b.WriteString("- **Read-only tools** take `resultContinue`, the token of a result's next part when a result was\n")
	b.WriteString("  cut at `--max-result-bytes`.\n")
	b.WriteString("- **Answers.** Every tool declares an `outputSchema`, generated from the Go type of its answer, and\n")
	b.WriteString("  answers it as `structuredContent` (a JSON object) and, for clients that read text, as indented JSON\n")
	b.WriteString("  text. Shown below as `{property, optional?, list: [item]}`, objects one level deep; a cut result's\n")
	b.WriteString("  text is a part, its `structuredContent` the whole answer. A tool that may run as a task answers\n")
	b.WriteString("  the task it started when called without one; as a task, its result is the job's, so its schema\n")
	b.WriteString("  requires no property. A per-class create tool answers as `sandbar_entity_create` does. Errors\n")
	b.WriteString("  are results with `isError` and a text that says what to do, without `structuredContent`.\n\n")

	b.WriteString("| tool | title | read-only | destructive | idempotent | task | granted by name | core |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return ""
	}
	for _, d := range defs {
		name := tool.Encode(tool.StyleUnderscore, d.Canonical())
		task := "forbidden"
		if d.LongRunning {
			task = "optional"
		}
		core := yes(d.Core)
		if d.InPlaceOfClasses {
			core = "in place of classes"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s | %s | %s | %s |\n", name, anchor(name), cell(d.Title),
			yes(d.ReadOnly), yes(d.Destructive), yes(d.Idempotent), task, yes(d.Explicit), core)
	}

	group := ""
	for _, d := range defs {
		if d.Group != group {
			group = d.Group
			fmt.Fprintf(&b, "\n## %s\n", group)
		}
		mt := d.Tool(tool.StyleUnderscore, snap)
		fmt.Fprintf(&b, "\n### %s\n\n", mt.Name)
		fmt.Fprintf(&b, "**%s** (dotted: `%s`)\n\n", prose(mt.Title), d.Canonical())
		fmt.Fprintf(&b, "%s\n\n", prose(mt.Description))
		var facts []string
		if d.ReadOnly {
			facts = append(facts, "read-only")
		}
		if d.Destructive {
			facts = append(facts, "destructive")
		}
		if d.Idempotent {
			facts = append(facts, "idempotent")
		}
		if d.LongRunning {
			facts = append(facts, "may run as a task")
		}
		if d.Explicit {
			facts = append(facts, "granted only by name")
		}
		if d.Waits > 0 {
			facts = append(facts, fmt.Sprintf("may wait up to %s beyond the call deadline", d.Waits))
		}
		if len(facts) > 0 {
			fmt.Fprintf(&b, "%s.\n\n", capitalize(strings.Join(facts, ", ")))
		}
		fmt.Fprintf(&b, "Answers `%s`.\n\n", shape(d.Output(), 0))
		s, _ := d.InputSchema(snap).(*jsonschema.Schema)
		if s == nil || len(s.Properties) == 0 {
			b.WriteString("No arguments.\n")
			continue
		}
		b.WriteString("| argument | type | required | description |\n|---|---|---|---|\n")
		argRows(&b, "", s)
	}
	return b.String()
}

// shape is a schema as the reference shows an answer: its properties, "?" after an
// optional one, a list's item in brackets, objects to depth 1.
func shape(s *jsonschema.Schema, depth int) string {
	switch {
	case s == nil:
		return "any"
	case s.Items != nil:
		return "[" + shape(s.Items, depth) + "]"
	case len(s.Properties) == 0 || depth > 1:
		if s.Type == "" && len(s.Types) == 0 {
			return "any"
		}
		return argType(s)
	}
	names := s.PropertyOrder
	if len(names) == 0 {
		names = sortedKeys(s.Properties)
	}
	parts := make([]string, 0, len(names))
	for _, k := range names {
		p := s.Properties[k]
		if p == nil {
			continue
		}
		if !hasString(s.Required, k) && len(s.Required) > 0 {
			k += "?"
		}
		if len(p.Properties) > 0 || p.Items != nil {
			k += ": " + shape(p, depth+1)
		}
		parts = append(parts, k)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// argRows writes a row per argument of an object schema, and of the fields of its
// object and list-of-object arguments.
func argRows(b *strings.Builder, prefix string, s *jsonschema.Schema) {
	for _, k := range sortedKeys(s.Properties) {
		p := s.Properties[k]
		req := ""
		if hasString(s.Required, k) {
			req = "yes"
		}
		desc := prose(p.Description)
		if c := schemaChecks(p); c != "" {
			desc = strings.TrimSpace(desc + " (" + c + ")")
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", prefix+k, argType(p), req, cell(desc))
		switch {
		case len(p.Properties) > 0:
			argRows(b, prefix+k+".", p)
		case p.Items != nil && len(p.Items.Properties) > 0:
			argRows(b, prefix+k+"[].", p.Items)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// anchor is the id GitHub gives the heading of a tool's name.
func anchor(s string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r == ' ':
			return '-'
		}
		return -1
	}, s))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// TestDocsNameRealTools checks that every operational tool the docs name in
// backquotes, as sandbar_<group>_<verb> or sandbar.<group>.<verb>, is a verb the
// server declares (per-class tools and prompts have more parts, and are not checked).
func TestDocsNameRealTools(t *testing.T) {
	declared := map[string]bool{}
	groups := map[string]bool{}
	for _, d := range (&verbs.Env{}).All() {
		declared[d.Canonical()] = true
		groups[d.Group] = true
	}
	named := regexp.MustCompile("`sandbar([._])([a-z]+)[._]([a-z-]+)`")
	for _, f := range append(docFiles(t), filepath.Join(repoRoot, "ARCHITECTURE.md"), filepath.Join(repoRoot, "SECURITY.md")) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		text := string(raw)
		for _, m := range named.FindAllStringSubmatchIndex(text, -1) {
			group, verb := text[m[4]:m[5]], text[m[6]:m[7]]
			if !groups[group] {
				continue // a metric, a span attribute, a built-in workflow
			}
			if !declared[tool.CanonicalVerb(group, verb)] {
				t.Errorf("%s:%d: no tool is named %s", filepath.ToSlash(rel), strings.Count(text[:m[0]], "\n")+1, text[m[0]+1:m[1]-1])
			}
		}
	}
}
