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

package catalog_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// apiRanges reads the PropertyRange constants and the enum marker of the API types,
// from every file of the API package: a constant is one declared with the type
// PropertyRange or as a conversion PropertyRange("...").
func apiRanges(t *testing.T) (constants, marker []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "api", "v1alpha1", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	isRange := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == "PropertyRange" }
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gen.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for i, v := range s.Values {
						if call, ok := v.(*ast.CallExpr); ok && isRange(call.Fun) && len(call.Args) == 1 {
							v = call.Args[0]
						} else if s.Type == nil || !isRange(s.Type) {
							continue
						}
						lit, ok := v.(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							t.Errorf("%s: the range constant %s is not a string literal", path, s.Names[i].Name)
							continue
						}
						c, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						constants = append(constants, c)
					}
				case *ast.TypeSpec:
					if s.Name.Name == "PropertyRange" && gen.Doc != nil {
						m := regexp.MustCompile(`\+kubebuilder:validation:Enum=(\S+)`).FindStringSubmatch(gen.Doc.Text())
						if m != nil {
							marker = strings.Split(m[1], ";")
						}
					}
				}
			}
		}
	}
	return constants, marker
}

// A range the API has must have a row in the table (and the CRD's enum must list the
// same ranges), or coercion, schemas and columns would not know it.
func TestEveryAPIRangeHasARow(t *testing.T) {
	constants, marker := apiRanges(t)
	if len(constants) == 0 || len(marker) == 0 {
		t.Fatalf("found no PropertyRange constants (%v) or enum marker (%v) in the API types", constants, marker)
	}
	var rows []string
	for _, info := range catalog.Ranges() {
		rows = append(rows, string(info.Range))
	}
	for _, c := range constants {
		if !slices.Contains(rows, c) {
			t.Errorf("the API range %q has no row in catalog's range table", c)
		}
	}
	if !slices.Equal(marker, rows) {
		t.Errorf("the enum marker lists %v, the table %v", marker, rows)
	}
	if !slices.Equal(constants, rows) {
		t.Errorf("the API constants are %v, the table %v", constants, rows)
	}
}

func TestEveryRowIsComplete(t *testing.T) {
	for _, info := range catalog.Ranges() {
		if info.Summary == "" || info.Words == "" {
			t.Errorf("%s: a row needs a summary and words", info.Range)
		}
		s := catalog.Slot{Definition: &catalog.Definition{Field: "v", Range: info.Range, Target: "zorp.crew", Cardinality: metav1alpha1.CardinalityOne}}
		c := &catalog.Class{Prefix: "zorp", Kind: "T", Slots: []*catalog.Slot{&s}}
		if _, problems := catalog.Coerce(c, map[string]any{"v": catalog.ExampleValue(s)}); len(problems) > 0 {
			t.Errorf("%s: its example does not coerce: %q", info.Range, problems)
		}
	}
}

func TestAnUnknownRangeIsAProblemNotAString(t *testing.T) {
	one := catalog.Slot{Definition: &catalog.Definition{Field: "v", Range: "colour", Cardinality: metav1alpha1.CardinalityOne}}
	many := catalog.Slot{Definition: &catalog.Definition{Field: "w", Range: "colour", Cardinality: metav1alpha1.CardinalityMany}}
	c := &catalog.Class{Prefix: "zorp", Kind: "T", Slots: []*catalog.Slot{&one, &many}}
	_, problems := catalog.Coerce(c, map[string]any{"v": "red", "w": []any{"red"}})
	want := []string{
		`slot "v": the slot's range "colour" is not one this server knows`,
		`slot "w": item 0: the slot's range "colour" is not one this server knows`,
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems = %q, want %q", problems, want)
	}
	if s := catalog.SlotJSONSchema(one); s["type"] != nil || s["description"] != `Unknown range "colour".` {
		t.Errorf("schema of an unknown range = %v, want no type and a description saying so", s)
	}
	if info, known := catalog.RangeOf("colour"); known || info.Column != "" || info.Example != nil {
		t.Errorf("RangeOf(colour) = %+v, %v; want unknown, without column or example", info, known)
	}
	if got := catalog.TypeName(many); got != "list of colour" {
		t.Errorf("TypeName = %q", got)
	}
	if got := catalog.ExampleValue(one); got != nil {
		t.Errorf("ExampleValue = %#v, want nil: an unknown range has no valid value", got)
	}
}

// A slot with a pattern gets an example its pattern matches: an error that shows
// the example shows a value the slot takes.
func TestExampleOfAPatternedSlotMatchesThePattern(t *testing.T) {
	for _, pattern := range []string{`^ORD-[0-9]+$`, `^[a-z]{3}-(x|yy)\d{2,}$`, `^(?i)ab+c?$`, `^.+@.+\.com$`} {
		s := catalog.Slot{Definition: &catalog.Definition{Field: "v", Range: metav1alpha1.RangeString, Pattern: pattern,
			Cardinality: metav1alpha1.CardinalityOne}}
		c := &catalog.Class{Prefix: "zorp", Kind: "T", Slots: []*catalog.Slot{&s}}
		ex := catalog.ExampleValue(s)
		if _, problems := catalog.Coerce(c, map[string]any{"v": ex}); len(problems) > 0 {
			t.Errorf("%s: the example %q does not coerce: %q", pattern, ex, problems)
		}
	}
	if _, ok := catalog.Matching(`^a[^\x00-\x{10FFFF}]$`); ok {
		t.Error("a pattern nothing matches has no matching string")
	}
}
