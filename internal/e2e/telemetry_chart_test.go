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
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The chart's telemetry values reach the manager's flags: no OTLP endpoint and
// audit events on stdout by default, one value for the collector, and the schema
// refuses what the manager would not take.
func TestChartTelemetryValues(t *testing.T) {
	chart := filepath.Join(testenv.RepoRoot(), "charts", "sandbar")
	for _, env := range []string{"HELM", "HELM4"} {
		helm := os.Getenv(env)
		if helm == "" {
			t.Fatalf("%s is not set: run the tests with `make test`, which installs Helm 3 and Helm 4", env)
		}
		t.Run(env, func(t *testing.T) {
			g := NewWithT(t)
			template := func(set ...string) (string, error) {
				args := []string{"template", release, chart, "--namespace", namespace, "--kube-version=v1.37.0"}
				for _, s := range set {
					args = append(args, "--set", s)
				}
				cmd := exec.Command(helm, args...)
				cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			args := func(set ...string) []string {
				out, err := template(set...)
				g.Expect(err).NotTo(HaveOccurred(), out)
				d := find(t, decode(t, out), "Deployment.apps "+namespace+"/"+release)
				containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				list, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
				return list
			}

			byDefault := args()
			g.Expect(byDefault).To(ContainElements("--audit-log=stdout", "--audit-include-arguments=false", "--mcp-request-log=failures"))
			g.Expect(strings.Join(byDefault, " ")).NotTo(ContainSubstring("--otlp-endpoint"), "nothing is exported by default")

			g.Expect(args("telemetry.otlpEndpoint=http://otel-collector.observability:4318", "telemetry.auditLog=off",
				"telemetry.auditIncludeArguments=true", "telemetry.requestLog=all")).To(ContainElements(
				"--otlp-endpoint=http://otel-collector.observability:4318", "--audit-log=off", "--audit-include-arguments=true",
				"--mcp-request-log=all"))

			out, err := template("telemetry.otlpEndpoint=otel-collector:4318")
			g.Expect(err).To(HaveOccurred(), "an endpoint needs its scheme")
			g.Expect(out).To(ContainSubstring("/telemetry/otlpEndpoint"))
			out, err = template("telemetry.auditLog=/var/log/audit.jsonl")
			g.Expect(err).To(HaveOccurred(), "the root file system is read-only: no file path")
			g.Expect(out).To(ContainSubstring("/telemetry/auditLog"))
			out, err = template("telemetry.requestLog=everything")
			g.Expect(err).To(HaveOccurred(), "the request log is failures, all or off")
			g.Expect(out).To(ContainSubstring("/telemetry/requestLog"))
		})
	}
}
