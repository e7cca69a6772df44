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

package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sandbar-dev/sandbar/"

// allowed is the import column of ARCHITECTURE.md: the packages of this module each
// package may import (its non-test files).
var allowed = map[string][]string{
	"api/v1alpha1":                 {},
	"internal/catalog":             {"api/v1alpha1"},
	"internal/instanceapi":         {"api/v1alpha1", "internal/catalog"},
	"internal/workflow":            {"api/v1alpha1", "internal/catalog"},
	"internal/workflow/builtin":    {"api/v1alpha1", "internal/catalog", "internal/codec", "internal/workflow"},
	"internal/codec":               {"api/v1alpha1", "internal/catalog"},
	"internal/apikey":              {"api/v1alpha1"},
	"internal/contain":             {},
	"internal/identity":            {"internal/catalog"},
	"controllers":                  {"api/v1alpha1", "internal/catalog", "internal/identity", "internal/instanceapi", "internal/workflow", "internal/workflow/builtin", "internal/codec", "internal/apikey"},
	"internal/mcpserver/edge":      {"internal/contain"},
	"internal/mcpserver/transport": {},
	"internal/mcpserver/tool":      {"internal/catalog", "internal/mcpserver/seal"},
	"internal/mcpserver/access":    {"api/v1alpha1", "internal/catalog", "internal/apikey", "internal/mcpserver/tool", "internal/mcpserver/transport", "internal/contain"},
	"internal/mcpserver/process":   {"api/v1alpha1", "internal/catalog", "internal/identity", "internal/workflow", "internal/workflow/builtin", "internal/mcpserver/tool", "internal/mcpserver/transport", "internal/contain", "internal/mcpserver/seal"},
	"internal/mcpserver/redact":    {"internal/apikey"},
	"internal/mcpserver/seal":      {},
	"internal/mcpserver/telemetry": {"internal/identity", "internal/mcpserver/access", "internal/mcpserver/redact", "internal/mcpserver/tool", "internal/mcpserver/transport", "internal/contain"},
	"internal/mcpserver/prompts":   {"api/v1alpha1", "internal/catalog", "internal/mcpserver/access", "internal/mcpserver/tool"},
	"internal/mcpserver/tasks":     {"api/v1alpha1", "internal/workflow", "internal/mcpserver/access", "internal/mcpserver/process", "internal/mcpserver/redact", "internal/mcpserver/tool", "internal/mcpserver/transport"},
	"internal/mcpserver/verbs":     {"api/v1alpha1", "internal/catalog", "internal/identity", "internal/instanceapi", "internal/codec", "internal/workflow", "internal/workflow/builtin", "internal/mcpserver/access", "internal/mcpserver/process", "internal/mcpserver/tool"},
	"internal/mcpserver/resources": {"api/v1alpha1", "internal/catalog", "internal/identity", "internal/codec", "internal/mcpserver/access", "internal/mcpserver/verbs", "internal/contain", "internal/mcpserver/seal"},
	"internal/mcpserver/toollist":  {"internal/catalog", "internal/mcpserver/access", "internal/mcpserver/redact", "internal/mcpserver/transport"},
	"internal/mcpserver":           {"api/v1alpha1", "internal/catalog", "internal/identity", "internal/mcpserver/access", "internal/mcpserver/edge", "internal/mcpserver/process", "internal/mcpserver/prompts", "internal/mcpserver/redact", "internal/mcpserver/resources", "internal/mcpserver/tasks", "internal/mcpserver/telemetry", "internal/mcpserver/tool", "internal/mcpserver/toollist", "internal/mcpserver/transport", "internal/mcpserver/verbs", "internal/contain", "internal/mcpserver/seal"},
}

// free are packages with no rule: the binaries and test support.
var free = []string{"cmd", "hack/dev", "hack/soak", "hack/chaos", "internal/testenv", "internal/testenv/issuer", "internal/testenv/faults", "internal/catalog/catalogtest", "internal/archtest", "internal/e2e", "internal/durability"}

func TestRoomsImportOnlyWhatTheyMay(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || name == "bin" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if slices.Contains(free, rel) {
			return nil
		}
		rules, known := allowed[rel]
		if !known {
			t.Errorf("package %s has no rule in archtest (and no row in ARCHITECTURE.md): add one", rel)
			return nil
		}
		seen[rel] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			dep, ours := strings.CutPrefix(p, module)
			if ours && !slices.Contains(rules, dep) {
				t.Errorf("%s imports %s, which its room may not (ARCHITECTURE.md)", filepath.Join(rel, filepath.Base(path)), dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("archtest has a rule for %s, which has no Go files", pkg)
		}
	}
}
