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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	yaml3 "go.yaml.in/yaml/v3"
)

// chartValue is one value path of the chart: its default and comment from
// values.yaml, its schema from values.schema.json.
type chartValue struct {
	path    string
	def     string // the default as YAML flow, "" when values.yaml has none
	comment string
	schema  *jsonschema.Schema
	leaf    bool
	// flags are the manager flags the chart's Deployment sets from the value.
	flags []string
}

// chartValues reads values.yaml and values.schema.json into the list of every value
// path: those of values.yaml in its order, then those only the schema names.
func chartValues(t *testing.T) []chartValue {
	t.Helper()
	dir := filepath.Join(repoRoot, "charts", "sandbar")
	raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	rawSchema, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(rawSchema, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	var inValues []chartValue
	if len(doc.Content) == 1 {
		walkValues(doc.Content[0], "", &schema, &inValues)
	}
	seen := map[string]bool{}
	for _, v := range inValues {
		seen[v.path] = true
	}
	var extra []chartValue
	schemaOnly(&schema, "", seen, &extra)
	flags := valueFlags(t, filepath.Join(dir, "templates", "deployment.yaml"))
	for i := range inValues {
		inValues[i].flags = flags[inValues[i].path]
	}
	// A path only the schema names goes after the deepest path of values.yaml it is under.
	after := map[string][]chartValue{}
	for _, e := range extra {
		parent := ""
		for _, v := range inValues {
			if (strings.HasPrefix(e.path, v.path+".") || strings.HasPrefix(e.path, v.path+"[].")) && len(v.path) > len(parent) {
				parent = v.path
			}
		}
		after[parent] = append(after[parent], e)
	}
	var out []chartValue
	for _, v := range inValues {
		out = append(out, v)
		out = append(out, after[v.path]...)
	}
	return append(out, after[""]...)
}

func walkValues(n *yaml3.Node, prefix string, schema *jsonschema.Schema, out *[]chartValue) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := prefix + k.Value
		var s *jsonschema.Schema
		if schema != nil {
			s = schema.Properties[k.Value]
		}
		comment := commentText(k.HeadComment)
		if c := commentText(k.LineComment + v.LineComment); c != "" {
			comment = strings.TrimSpace(comment + " " + c)
		}
		if v.Kind == yaml3.MappingNode && len(v.Content) > 0 {
			*out = append(*out, chartValue{path: path, comment: comment, schema: s})
			walkValues(v, path+".", s, out)
			continue
		}
		*out = append(*out, chartValue{path: path, def: flowYAML(v), comment: comment, schema: s, leaf: true})
	}
}

// schemaOnly adds the paths the schema names that values.yaml does not set.
func schemaOnly(s *jsonschema.Schema, prefix string, seen map[string]bool, out *[]chartValue) {
	if s == nil {
		return
	}
	for _, k := range sortedKeys(s.Properties) {
		p := s.Properties[k]
		path := prefix + k
		if !seen[path] {
			*out = append(*out, chartValue{path: path, schema: p, leaf: len(p.Properties) == 0})
			seen[path] = true
		}
		schemaOnly(p, path+".", seen, out)
		if p.Items != nil && len(p.Items.Properties) > 0 {
			schemaOnly(p.Items, path+"[].", seen, out)
		}
	}
}

// commentText is a YAML comment as prose: the '#' of each line dropped, lines joined.
func commentText(c string) string {
	var lines []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimSpace(strings.TrimPrefix(l, "#"))
		if l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " ")
}

// flowYAML is a value in YAML's flow style, on one line.
func flowYAML(n *yaml3.Node) string {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	c.Style |= yaml3.FlowStyle
	for _, sub := range c.Content {
		sub.HeadComment, sub.LineComment, sub.FootComment = "", "", ""
	}
	raw, err := yaml3.Marshal(&c)
	if err != nil {
		return n.Value
	}
	s := strings.TrimSpace(string(raw))
	if n.Kind == yaml3.ScalarNode && n.Tag == "!!str" && n.Value == "" {
		return `""`
	}
	return s
}

func valueType(v chartValue) string {
	if s := v.schema; s != nil {
		if t := argType(s); t != "any" {
			return t
		}
		if len(s.Enum) > 0 {
			return "string"
		}
	}
	if !v.leaf {
		return "object"
	}
	return ""
}

// docs/reference/chart-values.md is every value of the chart: values.yaml's defaults
// and comments, values.schema.json's types and checks.
func TestChartValuesReference(t *testing.T) {
	checkGenerated(t, "docs/reference/chart-values.md", "TestChartValuesReference", renderChartValues(chartValues(t)))
}

func renderChartValues(values []chartValue) string {
	var b strings.Builder
	b.WriteString(generatedHeader("TestChartValuesReference", "`charts/sandbar/values.yaml`, `values.schema.json` and `templates/deployment.yaml`"))
	b.WriteString("# Chart values reference\n\n")
	b.WriteString("Every value of the chart `charts/sandbar`: its type and what `values.schema.json` checks (Helm\n")
	b.WriteString("refuses an install or upgrade whose values fail it, unknown keys included), its default from\n")
	b.WriteString("`values.yaml`, and the comment there. Installing, upgrading and the choices behind these values:\n")
	b.WriteString("[Install and upgrade](../install.md); the manager flags the values become: [Manager flags](../flags.md).\n\n")
	b.WriteString("A path `a[].b` is a field of the items of the list `a`. A row without a default is a value the\n")
	b.WriteString("schema accepts that `values.yaml` does not set.\n\n")
	b.WriteString("The flag column is the manager flag the chart's Deployment sets from the value\n")
	b.WriteString("(`templates/deployment.yaml`); [flags.md](../flags.md) says what it does.\n\n")
	b.WriteString("| value | type | default | flag | checks | description |\n|---|---|---|---|---|---|\n")
	for _, v := range values {
		def := ""
		if v.leaf && v.def != "" {
			def = cell(code(v.def))
		}
		var flags []string
		for _, f := range v.flags {
			flags = append(flags, "[`--"+f+"`](../flags.md)")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", v.path, valueType(v), def, strings.Join(flags, ", "),
			cell(schemaChecks(v.schema)), cell(prose(v.comment)))
	}
	return b.String()
}

var (
	tmplAction  = regexp.MustCompile(`{{-?\s*(with|if|range|end|else)\b\s*([^}]*?)\s*-?}}`)
	argFlag     = regexp.MustCompile(`--([a-z0-9-]+)=`)
	absValue    = regexp.MustCompile(`\.Values\.([A-Za-z0-9_.]+)`)
	relValue    = regexp.MustCompile(`[\s(]\.([A-Za-z][A-Za-z0-9_.]*)`)
	scopeItself = regexp.MustCompile(`[\s(]\.(?:[\s)}]|$)`)
)

// valueFlags reads which manager flag the Deployment's arguments set from which
// value: --flag={{ .Values.a.b }}, or inside {{ with .Values.a }} ... {{ . }} and
// {{ .b }}.
func valueFlags(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var scopes []string
	scope := func() string {
		if len(scopes) == 0 {
			return ""
		}
		return scopes[len(scopes)-1]
	}
	resolve := func(expr string) string {
		if m := absValue.FindStringSubmatch(expr); m != nil {
			return m[1]
		}
		if m := relValue.FindStringSubmatch(" " + expr); m != nil && scope() != "" {
			return scope() + "." + m[1]
		}
		if scopeItself.MatchString(" "+expr) && scope() != "" {
			return scope()
		}
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if m := tmplAction.FindStringSubmatch(line); m != nil && !strings.Contains(line, "--") {
			switch m[1] {
			case "with":
				scopes = append(scopes, resolve(m[2]))
			case "if", "range":
				scopes = append(scopes, scope())
			case "end":
				if len(scopes) > 0 {
					scopes = scopes[:len(scopes)-1]
				}
			}
			continue
		}
		f := argFlag.FindStringSubmatch(line)
		if f == nil {
			continue
		}
		if v := resolve(line[strings.Index(line, f[0])+len(f[0]):]); v != "" {
			out[v] = append(out[v], f[1])
		}
	}
	return out
}
