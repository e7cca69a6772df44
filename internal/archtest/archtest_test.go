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

// rules reads the rooms table of ARCHITECTURE.md: for each room, the packages of
// this module it may import (its non-test files); a room whose third column says
// "anything" is free: the binaries, the commands of hack/ and test support.
func rules(t *testing.T, root string) (allowed map[string][]string, free []string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n## The rooms\n")
	if !ok {
		t.Fatal(`ARCHITECTURE.md has no "## The rooms" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	type row struct {
		rooms   []string
		imports string
	}
	var rows []row
	var rooms []string
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // not a row of a room
		}
		r := row{rooms: quoted(cells[1]), imports: cells[3]}
		rows = append(rows, r)
		rooms = append(rooms, r.rooms...)
	}
	if len(rows) == 0 {
		t.Fatal("ARCHITECTURE.md: the rooms table has no rows")
	}
	// resolve finds the room a name in the import column stands for.
	resolve := func(name string) string {
		if name == "api" {
			name = "api/v1alpha1"
		}
		var found []string
		for _, room := range rooms {
			if room == name || strings.HasSuffix(room, "/"+name) {
				found = append(found, room)
			}
		}
		if len(found) != 1 {
			t.Errorf("ARCHITECTURE.md: the import column names %q, which is %d rooms %v, not one", name, len(found), found)
			return ""
		}
		return found[0]
	}
	allowed = map[string][]string{}
	for _, r := range rows {
		if strings.TrimSpace(r.imports) == "anything" {
			free = append(free, r.rooms...)
			continue
		}
		deps := []string{}
		for _, name := range quoted(r.imports) {
			if dep := resolve(name); dep != "" {
				deps = append(deps, dep)
			}
		}
		for _, room := range r.rooms {
			allowed[room] = deps
		}
	}
	return allowed, free
}

// quoted are the names in backquotes in a cell of the table.
func quoted(cell string) []string {
	var names []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		names = append(names, parts[i])
	}
	return names
}

func TestRoomsImportOnlyWhatTheyMay(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	allowed, free := rules(t, root)
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
		may, known := allowed[rel]
		if !known {
			t.Errorf("package %s has no row in the rooms table of ARCHITECTURE.md: add one", rel)
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
			if ours && !slices.Contains(may, dep) {
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
			t.Errorf("ARCHITECTURE.md has a room %s, which has no Go files", pkg)
		}
	}
}
