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

package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The chart's mcp.callTimeout reaches the manager, and the schema refuses what is not
// a duration.
func TestChartPassesTheCallTimeout(t *testing.T) {
	g := NewWithT(t)
	helm := os.Getenv("HELM4")
	if helm == "" {
		t.Fatal("HELM4 is not set: run the tests with `make test`")
	}
	chart := filepath.Join(testenv.RepoRoot(), "charts", "sandbar")
	args := func(sets ...string) []string {
		out, err := exec.Command(helm, append([]string{"template", "sandbar", chart, "--namespace", "sandbar-system"}, sets...)...).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		var dep appsv1.Deployment
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(
			find(t, decode(t, string(out)), "Deployment.apps sandbar-system/sandbar").Object, &dep)).To(Succeed())
		return dep.Spec.Template.Spec.Containers[0].Args
	}
	g.Expect(args()).To(ContainElement("--mcp-call-timeout=10s"))
	g.Expect(args("--set", "mcp.callTimeout=30s")).To(ContainElement("--mcp-call-timeout=30s"))
	out, err := exec.Command(helm, "template", "sandbar", chart, "--set", "mcp.callTimeout=ten").CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "values.schema.json refuses what is not a duration")
	g.Expect(string(out)).To(ContainSubstring("/mcp/callTimeout"))
}
