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

package verbs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// Every verb group is a toolset an account may name, the ServiceAccount CRD takes
// exactly the toolsets there are, and the core toolset names verbs that exist.
func TestToolsetsAreTheVerbGroups(t *testing.T) {
	verbs := map[string]bool{}
	for _, d := range (&Env{}).All() {
		verbs[d.Group+"."+d.Name] = true
		if !slices.Contains(tool.VerbGroups, d.Group) {
			t.Errorf("the verb %s is of the group %q, which is no toolset (tool.VerbGroups)", d.Canonical(), d.Group)
		}
	}
	for name := range core {
		if !verbs[name] {
			t.Errorf("the core toolset names %q, which is no verb", name)
		}
	}

	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "meta.sandbar.dev_serviceaccounts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, v := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["toolsets"].Items.Schema.Enum {
		var s string
		if err := json.Unmarshal(v.Raw, &s); err != nil {
			t.Fatal(err)
		}
		enum = append(enum, s)
	}
	slices.Sort(enum)
	want := slices.Sorted(slices.Values(tool.ToolsetNames()))
	if !slices.Equal(enum, want) {
		t.Errorf("the CRD's spec.toolsets takes %v; the toolsets are %v", enum, want)
	}
}
