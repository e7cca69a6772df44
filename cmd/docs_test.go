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
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// The reference pages under docs/reference are written from the sources users
// otherwise read by hand (the CRDs, the verb table, the chart's values), so that
// they cannot drift: each test renders its page and compares it with the file, and
// -update writes it. make docs-check runs them with the check of every command in
// the docs (docs_commands_test.go).

// repoRoot is the module's root, seen from this package's directory.
const repoRoot = ".."

// generatedHeader is the first line of every generated page: that it is generated,
// from what, and the command that writes it.
func generatedHeader(test, sources string) string {
	return fmt.Sprintf("> Generated from %s by `go test ./cmd -run %s -update`: edit the sources, not this page.\n\n", sources, test)
}

// checkGenerated compares a rendered page with its file, or writes it with -update.
func checkGenerated(t *testing.T, rel, test, want string) {
	t.Helper()
	path := filepath.Join(repoRoot, filepath.FromSlash(rel))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s is not what its sources say (%v): run go test ./cmd -run %s -update", rel, err, test)
	}
}

// cell makes text fit one cell of a Markdown table.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// code is s in backquotes, on one line (empty stays empty); a table cell takes it
// through cell.
func code(s string) string {
	if s == "" {
		return ""
	}
	s = strings.Join(strings.Fields(s), " ")
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// prose is text on one line, its angle brackets shown rather than read as HTML.
func prose(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

// argType is a schema's type as the references print it (an array as []item).
func argType(s *jsonschema.Schema) string {
	t := s.Type
	if t == "" && len(s.Types) > 0 {
		t = strings.Join(s.Types, " or ")
	}
	switch {
	case t == "array" && s.Items != nil:
		return "[]" + argType(s.Items)
	case t == "" && len(s.Enum) > 0:
		// An enum without a type: its values say it.
		if _, ok := s.Enum[0].(string); ok {
			return "string"
		}
		return "any"
	case t == "":
		return "any"
	}
	return t
}

// schemaChecks is what a schema holds besides its type: an argument's, a chart value's.
func schemaChecks(s *jsonschema.Schema) string {
	if s == nil {
		return ""
	}
	var out []string
	if len(s.Enum) > 0 {
		var vals []string
		for _, v := range s.Enum {
			vals = append(vals, "`"+jsonText(v)+"`")
		}
		out = append(out, "one of "+strings.Join(vals, ", "))
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	if s.Minimum != nil {
		out = append(out, "minimum "+num(*s.Minimum))
	}
	if s.Maximum != nil {
		out = append(out, "maximum "+num(*s.Maximum))
	}
	if s.MaxItems != nil {
		out = append(out, fmt.Sprintf("at most %d items", *s.MaxItems))
	}
	switch {
	case s.MinLength == nil:
	case *s.MinLength == 1:
		out = append(out, "not empty")
	default:
		out = append(out, fmt.Sprintf("at least %d characters", *s.MinLength))
	}
	if s.MaxLength != nil {
		out = append(out, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.Pattern != "" {
		out = append(out, "pattern "+code(s.Pattern))
	}
	if s.Format != "" {
		out = append(out, "format "+s.Format)
	}
	if s.Default != nil {
		out = append(out, "default `"+string(s.Default)+"`")
	}
	if len(s.Required) > 0 {
		out = append(out, "requires "+strings.Join(s.Required, ", "))
	}
	if alts := slices.Concat(s.AnyOf, s.OneOf); len(alts) > 0 {
		var either []string
		for _, alt := range alts {
			if alt.Const != nil {
				either = append(either, "exactly "+jsonText(*alt.Const))
			} else if c := schemaChecks(alt); c != "" {
				either = append(either, c)
			}
		}
		out = append(out, strings.Join(either, " or "))
	}
	if s.Items != nil {
		if c := schemaChecks(s.Items); c != "" && len(s.Items.Properties) == 0 {
			out = append(out, "each item: "+c)
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil && len(s.Properties) > 0 {
		out = append(out, "no other keys")
	}
	return strings.Join(out, "; ")
}
