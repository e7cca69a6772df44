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
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The public URL the server card names: the first Ingress host with the Ingress on
// (https with its TLS),
// mcp.publicURL when set, none otherwise (served on loopback only); the schema refuses
// one with a path. The chart's registry entry (server.json), its {host} filled with
// the Ingress host, names the endpoint the manager's card names.
func TestChartNamesThePublicURLOfTheServerCard(t *testing.T) {
	g := NewWithT(t)
	publicURL := func(flags ...string) []string {
		return slices.DeleteFunc(managerArgs(t, renderChart(t, flags...)), func(a string) bool { return !strings.HasPrefix(a, "--mcp-public-url") })
	}
	g.Expect(publicURL()).To(BeEmpty())
	g.Expect(publicURL("--set", "ingress.enabled=true", "--set", "ingress.hosts[0].host=mcp.example.org",
		"--set", "ingress.tls[0].secretName=tls", "--set", "ingress.tls[0].hosts[0]=mcp.example.org")).
		To(Equal([]string{"--mcp-public-url=https://mcp.example.org"}))
	g.Expect(publicURL("--set", "ingress.enabled=true", "--set", "ingress.hosts[0].host=mcp.example.org")).
		To(Equal([]string{"--mcp-public-url=http://mcp.example.org"}), "an Ingress without TLS serves http")
	g.Expect(publicURL("--set", "ingress.enabled=true", "--set", "mcp.publicURL=https://sandbar.example.net")).
		To(Equal([]string{"--mcp-public-url=https://sandbar.example.net"}))
	g.Expect(chartRefuses(t, "--set", "mcp.publicURL=https://sandbar.example.net/mcp")).To(ContainSubstring("/mcp/publicURL"))

	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "charts", "sandbar", "server.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var entry struct{ Remotes []struct{ Type, URL string } }
	g.Expect(json.Unmarshal(b, &entry)).To(Succeed())
	g.Expect(entry.Remotes).NotTo(BeEmpty())
	g.Expect(entry.Remotes[0].Type).To(Equal("streamable-http"))
	g.Expect(strings.ReplaceAll(entry.Remotes[0].URL, "{host}", "mcp.example.org")).To(Equal("https://mcp.example.org/mcp"))
}
