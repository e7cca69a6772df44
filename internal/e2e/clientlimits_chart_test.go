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
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// The chart's clientLimits values reach the manager's flags, and the schema refuses
// values the manager would refuse.
func TestChartPassesClientLimitsToTheManager(t *testing.T) {
	g := NewWithT(t)
	args := func(flags ...string) []string { return managerArgs(t, renderChart(t, flags...)) }
	g.Expect(args()).To(ContainElements("--client-tool-prefix=mcp__sandbar__", "--default-max-tools=40",
		"--max-result-bytes=65536", "--max-result-items=100"))
	g.Expect(args("--set", "clientLimits.toolPrefix=mcp__acme__", "--set", "clientLimits.defaultMaxTools=128",
		"--set", "clientLimits.maxResultBytes=1048576", "--set", "clientLimits.maxResultItems=0")).
		To(ContainElements("--client-tool-prefix=mcp__acme__", "--default-max-tools=128",
			"--max-result-bytes=1048576", "--max-result-items=0"))

	// The bootstrap account declares its clients and toolsets.
	out := renderChart(t, "--set", "bootstrap.enabled=true", "--set", "bootstrap.clients={cursor,claude-code}",
		"--set", "bootstrap.toolsets={core,project}")
	var admin metav1alpha1.ServiceAccount
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(
		find(t, decode(t, out), "ServiceAccount.meta.sandbar.dev sandbar-system/admin").Object, &admin)).To(Succeed())
	g.Expect(admin.Spec.Clients).To(Equal([]string{"cursor", "claude-code"}))
	g.Expect(admin.Spec.Toolsets).To(Equal([]string{"core", "project"}))
	chartRefuses(t, "--set", "bootstrap.clients={netscape}")    // an unknown client
	chartRefuses(t, "--set", "bootstrap.toolsets={everything}") // an unknown toolset
	g.Expect(chartRefuses(t, "--set", "clientLimits.defaultMaxTools=-1")).To(ContainSubstring("/clientLimits/defaultMaxTools"), "a negative limit")
	g.Expect(chartRefuses(t, "--set", "clientLimits.maxResultBytes=100")).To(ContainSubstring("/clientLimits/maxResultBytes"),
		"a byte bound smaller than one item")
}
