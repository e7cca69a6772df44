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

// The chart's limits of what clients hold open (sessions, streams) reach the
// manager's flags, and the schema refuses a negative one.
func TestChartPassesTheSessionAndStreamLimits(t *testing.T) {
	g := NewWithT(t)
	args := func(flags ...string) []string { return managerArgs(t, renderChart(t, flags...)) }
	g.Expect(args()).To(ContainElements("--max-sessions-per-account=100", "--max-sessions=5000",
		"--max-streams-per-account=20", "--max-streams=2000"))
	g.Expect(args("--set", "limits.sessionsPerAccount=3", "--set", "limits.sessions=0",
		"--set", "limits.streamsPerAccount=1", "--set", "limits.streams=50")).
		To(ContainElements("--max-sessions-per-account=3", "--max-sessions=0", "--max-streams-per-account=1", "--max-streams=50"))
	g.Expect(chartRefuses(t, "--set", "limits.sessions=-1")).To(ContainSubstring("/limits/sessions"))
	g.Expect(chartRefuses(t, "--set", "limits.streamsPerAccount=-2")).To(ContainSubstring("/limits/streamsPerAccount"))
}
