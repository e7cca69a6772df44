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

package v1alpha1_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestGeneratedFilesAreCurrent regenerates the CRDs, the RBAC role and the deepcopy
// code into a temporary folder and compares them with the checked-in files, which
// must be regenerated with `make manifests generate` after a marker or type changes.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	gen := os.Getenv("CONTROLLER_GEN")
	if gen == "" {
		t.Fatal("CONTROLLER_GEN is not set: run the tests with `make test`, which installs controller-gen")
	}
	out := t.TempDir()
	for _, args := range [][]string{
		{"object:headerFile=hack/boilerplate.go.txt", "paths=./api/...", "output:object:dir=" + filepath.Join(out, "object")},
		{"rbac:roleName=manager-role", "crd:allowDangerousTypes=true", "paths=./...",
			"output:crd:artifacts:config=" + filepath.Join(out, "crd"), "output:rbac:artifacts:config=" + filepath.Join(out, "rbac")},
	} {
		cmd := exec.Command(gen, args...)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen %v: %v\n%s", args, err, msg)
		}
	}
	compareDir(t, filepath.Join(out, "crd"), filepath.Join(root, "config", "crd", "bases"))
	compareDir(t, filepath.Join(out, "crd"), filepath.Join(root, "charts", "sandbar", "crds"))
	compareFile(t, filepath.Join(out, "rbac", "role.yaml"), filepath.Join(root, "config", "rbac", "role.yaml"))
	compareFile(t, filepath.Join(out, "rbac", "role.yaml"), filepath.Join(root, "charts", "sandbar", "files", "manager-role.yaml"))
	compareFile(t, filepath.Join(out, "object", "zz_generated.deepcopy.go"), filepath.Join(root, "api", "v1alpha1", "zz_generated.deepcopy.go"))
}

func compareDir(t *testing.T, fresh, checkedIn string) {
	t.Helper()
	want, _ := filepath.Glob(filepath.Join(fresh, "*.yaml"))
	have, _ := filepath.Glob(filepath.Join(checkedIn, "*.yaml"))
	if len(want) != len(have) {
		t.Errorf("%s has %d files, controller-gen makes %d: run make manifests", checkedIn, len(have), len(want))
	}
	for _, f := range want {
		compareFile(t, f, filepath.Join(checkedIn, filepath.Base(f)))
	}
}

func compareFile(t *testing.T, fresh, checkedIn string) {
	t.Helper()
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(checkedIn)
	if err != nil {
		t.Errorf("%s is missing: run make manifests generate", checkedIn)
		return
	}
	if !bytes.Equal(want, have) {
		t.Errorf("%s is stale: run make manifests generate", checkedIn)
	}
}
