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
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// update writes docs/flags.md instead of comparing it: go test ./cmd -run TestFlagsReference -update.
var update = flag.Bool("update", false, "write docs/flags.md from the manager's flags")

// printFlags is set in the environment of the test binary run again as the
// manager with -h: it prints the manager's flags as JSON and exits.
const printFlags = "SANDBAR_PRINT_FLAGS"

type flagDoc struct {
	Name, Default, Usage string
}

func TestMain(m *testing.M) {
	if os.Getenv(printFlags) != "" {
		// The manager's own -h, after run() registered every flag: print them.
		flag.CommandLine.Usage = func() {
			var out []flagDoc
			flag.CommandLine.VisitAll(func(f *flag.Flag) {
				if !strings.HasPrefix(f.Name, "test.") && f.Name != "update" {
					out = append(out, flagDoc{Name: f.Name, Default: f.DefValue, Usage: f.Usage})
				}
			})
			_ = json.NewEncoder(os.Stdout).Encode(out)
		}
		os.Args = []string{"manager", "-h"}
		os.Exit(run())
	}
	os.Exit(m.Run())
}

// docs/flags.md is the manager's flags as the binary has them: every flag, its
// default and its help. The test fails when they drift; -update writes the page.
func TestFlagsReference(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), printFlags+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the manager's -h: %v", err)
	}
	var flags []flagDoc
	if err := json.Unmarshal(out, &flags); err != nil {
		t.Fatalf("the manager's flags: %v: %s", err, out)
	}
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	want := renderFlags(flags)
	path := filepath.Join("..", "docs", "flags.md")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("docs/flags.md is not the manager's flags (%v): run go test ./cmd -run TestFlagsReference -update", err)
	}
}

func renderFlags(flags []flagDoc) string {
	var b strings.Builder
	b.WriteString("# Manager flags\n\n")
	b.WriteString("Every flag of the manager binary, its default and what it does, as `manager -h` has them.\n")
	b.WriteString("The chart sets them from its values (docs/install.md); `make dev` from hack/dev.\n")
	b.WriteString("This page is generated: `go test ./cmd -run TestFlagsReference -update` writes it, and the\n")
	b.WriteString("test fails in `make test` when it drifts from the binary.\n\n")
	b.WriteString("| flag | default | what it does |\n|---|---|---|\n")
	for _, f := range flags {
		def := "`" + f.Default + "`"
		if f.Default == "" {
			def = "(none)"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Name, strings.ReplaceAll(def, "|", `\|`), strings.ReplaceAll(strings.ReplaceAll(f.Usage, "|", `\|`), "\n", " "))
	}
	return b.String()
}
