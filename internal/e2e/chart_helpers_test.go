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

// helmTemplate runs `helm template` (Helm 4) of the chart as the release sandbar in
// sandbar-system with the given flags, and returns its output and error.
func helmTemplate(t *testing.T, flags ...string) (string, error) {
	t.Helper()
	helm := os.Getenv("HELM4")
	if helm == "" {
		t.Fatal("HELM4 is not set: run the tests with `make test`")
	}
	chart := filepath.Join(testenv.RepoRoot(), "charts", "sandbar")
	out, err := exec.Command(helm, append([]string{"template", "sandbar", chart, "--namespace", "sandbar-system"}, flags...)...).CombinedOutput()
	return string(out), err
}

// renderChart is the chart rendered with the given flags; Helm must accept them.
func renderChart(t *testing.T, flags ...string) string {
	t.Helper()
	out, err := helmTemplate(t, flags...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%s", out)
	return out
}

// chartRefuses is what Helm says when it refuses the flags (values.schema.json).
func chartRefuses(t *testing.T, flags ...string) string {
	t.Helper()
	out, err := helmTemplate(t, flags...)
	NewWithT(t).Expect(err).To(HaveOccurred(), "Helm accepts %v:\n%s", flags, out)
	return out
}

// managerArgs is the manager container's arguments in a rendered chart.
func managerArgs(t *testing.T, rendered string) []string {
	t.Helper()
	var dep appsv1.Deployment
	NewWithT(t).Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(
		find(t, decode(t, rendered), "Deployment.apps sandbar-system/sandbar").Object, &dep)).To(Succeed())
	return dep.Spec.Template.Spec.Containers[0].Args
}
