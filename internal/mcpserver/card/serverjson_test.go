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

package card_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/card"
)

// The registry's server.json schema (2025-12-11) asks a remote's URL to match this;
// {variables} in it are declared in the remote's variables.
var (
	remoteURLPattern = regexp.MustCompile(`^https?://[^\s]+$`)
	variable         = regexp.MustCompile(`\{([a-zA-Z_][a-zA-Z0-9_]*)\}`)
)

// The chart's registry entry names the server as its card does, at the chart's
// version, and its endpoints on the host the user installs it at ({host}).
func TestTheChartsServerJSONIsARegistryEntry(t *testing.T) {
	g := NewWithT(t)
	chart := filepath.Join("..", "..", "..", "charts", "sandbar")
	b, err := os.ReadFile(filepath.Join(chart, "server.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var entry struct {
		Schema      string `json:"$schema"`
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Version     string `json:"version"`
		Repository  struct{ URL, Source string }
		Remotes     []struct {
			Type      string
			URL       string
			Variables map[string]card.Input
			Headers   []card.KeyValueInput
		}
	}
	g.Expect(json.Unmarshal(b, &entry)).To(Succeed())
	g.Expect(entry.Schema).To(Equal("https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"))
	g.Expect(entry.Name).To(And(Equal(card.Name), MatchRegexp(namePattern.String())))
	g.Expect([]string{entry.Title, entry.Description}).To(Equal([]string{card.Title, card.Description}))
	g.Expect(entry.Repository.URL).To(Equal(card.RepositoryURL))
	meta, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	g.Expect(yaml.Unmarshal(meta, &c)).To(Succeed())
	g.Expect(entry.Version).To(Equal(c.AppVersion), "server.json's version is the chart's appVersion")

	var paths []string
	for _, r := range entry.Remotes {
		g.Expect(r.Type).To(BeElementOf("streamable-http", "sse"))
		g.Expect(r.URL).To(MatchRegexp(remoteURLPattern.String()))
		g.Expect(r.URL).To(HavePrefix("https://{host}/"), "the host is the user's")
		paths = append(paths, strings.TrimPrefix(r.URL, "https://{host}"))
		for _, v := range variable.FindAllStringSubmatch(r.URL, -1) {
			g.Expect(r.Variables).To(HaveKey(v[1]), "%s names {%s}", r.URL, v[1])
			g.Expect(r.Variables[v[1]].IsRequired).To(BeTrue())
		}
		g.Expect(r.Headers).To(HaveLen(1))
		h := r.Headers[0]
		g.Expect(h.Name).To(Equal("Authorization"))
		g.Expect([]bool{h.IsRequired, h.IsSecret}).To(Equal([]bool{true, true}))
		for _, v := range variable.FindAllStringSubmatch(h.Value, -1) {
			g.Expect(h.Variables).To(HaveKey(v[1]))
		}
	}
	slices.Sort(paths)
	g.Expect(paths).To(Equal([]string{"/mcp", "/mcp/sse"}))
}
