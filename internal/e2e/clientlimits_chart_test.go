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

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The chart's clientLimits values reach the manager's flags, and the schema refuses
// values the manager would refuse.
func TestChartPassesClientLimitsToTheManager(t *testing.T) {
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
	g.Expect(args()).To(ContainElements("--client-tool-prefix=mcp__sandbar__", "--default-max-tools=40",
		"--max-result-bytes=65536", "--max-result-items=100"))
	g.Expect(args("--set", "clientLimits.toolPrefix=mcp__acme__", "--set", "clientLimits.defaultMaxTools=128",
		"--set", "clientLimits.maxResultBytes=1048576", "--set", "clientLimits.maxResultItems=0")).
		To(ContainElements("--client-tool-prefix=mcp__acme__", "--default-max-tools=128",
			"--max-result-bytes=1048576", "--max-result-items=0"))

	// The bootstrap account declares its clients.
	out, err := exec.Command(helm, "template", "sandbar", chart, "--namespace", "sandbar-system",
		"--set", "bootstrap.enabled=true", "--set", "bootstrap.clients={cursor,claude-code}").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	var admin metav1alpha1.ServiceAccount
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(
		find(t, decode(t, string(out)), "ServiceAccount.meta.sandbar.dev sandbar-system/admin").Object, &admin)).To(Succeed())
	g.Expect(admin.Spec.Clients).To(Equal([]string{"cursor", "claude-code"}))
	out, err = exec.Command(helm, "template", "sandbar", chart, "--set", "bootstrap.clients={netscape}").CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "values.schema.json refuses an unknown client:\n%s", out)

	out, err = exec.Command(helm, "template", "sandbar", chart, "--set", "clientLimits.defaultMaxTools=-1").CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "values.schema.json refuses a negative limit")
	g.Expect(string(out)).To(ContainSubstring("/clientLimits/defaultMaxTools"))
	out, err = exec.Command(helm, "template", "sandbar", chart, "--set", "clientLimits.maxResultBytes=100").CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "values.schema.json refuses a byte bound smaller than one item")
	g.Expect(string(out)).To(ContainSubstring("/clientLimits/maxResultBytes"))
}
