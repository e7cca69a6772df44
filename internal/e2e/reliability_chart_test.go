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
)

// The chart's mcp.callTimeout reaches the manager, and the schema refuses what is not
// a duration.
func TestChartPassesTheCallTimeout(t *testing.T) {
	g := NewWithT(t)
	g.Expect(managerArgs(t, renderChart(t))).To(ContainElement("--mcp-call-timeout=10s"))
	g.Expect(managerArgs(t, renderChart(t, "--set", "mcp.callTimeout=30s"))).To(ContainElement("--mcp-call-timeout=30s"))
	g.Expect(chartRefuses(t, "--set", "mcp.callTimeout=ten")).To(ContainSubstring("/mcp/callTimeout"), "not a duration")
}

// The chart's leaderElectionLease reaches the manager, and the schema refuses what is
// not a duration.
func TestChartPassesTheLeaseTimings(t *testing.T) {
	g := NewWithT(t)
	g.Expect(managerArgs(t, renderChart(t))).To(ContainElements("--leader-elect-lease-duration=15s",
		"--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"))
	g.Expect(managerArgs(t, renderChart(t, "--set", "leaderElectionLease.duration=6s", "--set", "leaderElectionLease.renewDeadline=4s",
		"--set", "leaderElectionLease.retryPeriod=1s"))).To(ContainElements("--leader-elect-lease-duration=6s",
		"--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"))
	g.Expect(chartRefuses(t, "--set", "leaderElectionLease.duration=long")).To(ContainSubstring("/leaderElectionLease/duration"), "not a duration")
}

// The chart's mcp.shutdownDelay reaches the manager, and the schema refuses what is
// not a duration.
func TestChartPassesTheShutdownDelay(t *testing.T) {
	g := NewWithT(t)
	g.Expect(managerArgs(t, renderChart(t))).To(ContainElement("--mcp-shutdown-delay=3s"))
	g.Expect(managerArgs(t, renderChart(t, "--set", "mcp.shutdownDelay=5s"))).To(ContainElement("--mcp-shutdown-delay=5s"))
	g.Expect(chartRefuses(t, "--set", "mcp.shutdownDelay=soon")).To(ContainSubstring("/mcp/shutdownDelay"), "not a duration")
}
