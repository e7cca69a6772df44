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
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

func TestDottedNamesAndToolSurfaces(t *testing.T) {
	g := NewWithT(t)
	dotted := connect(t, serve(t, mcpserver.Options{NameStyle: mcpserver.StyleDotted}), token, nil)
	tools := listTools(t, dotted)
	g.Expect(tools).To(HaveKey("sandbar.entity.create"))
	g.Expect(tools).To(HaveKey("sandbar.class.zorp.SpaceBoot"))
	g.Expect(tools["sandbar.schema.classes"].Description).NotTo(ContainSubstring("sandbar_"))
	g.Expect(dotted.InitializeResult().Instructions).To(ContainSubstring("sandbar.schema.classes"))
	res := callTool(t, dotted, "sandbar.class.zorp.SpaceBoot", map[string]any{"name": "Dotted", "metadata": map[string]any{"name": unique("dotted")}})
	g.Expect(res.IsError).To(BeFalse(), text(res))

	operational := listTools(t, connect(t, serve(t, mcpserver.Options{ToolSurface: mcpserver.SurfaceOperational}), token, nil))
	g.Expect(operational).To(HaveKey("sandbar_entity_create"))
	g.Expect(operational).NotTo(HaveKey("sandbar_class_zorp_SpaceBoot"))

	perClass := listTools(t, connect(t, serve(t, mcpserver.Options{ToolSurface: mcpserver.SurfacePerClass}), token, nil))
	g.Expect(perClass).To(HaveKey("sandbar_class_zorp_SpaceBoot"))
	g.Expect(perClass).NotTo(HaveKey("sandbar_entity_create"))

	g.Expect(mcpserver.Options{ToolSurface: "all", NameStyle: mcpserver.StyleUnderscore}.Validate()).
		To(MatchError(ContainSubstring("--tool-surface must be operational, per-class or both")))
}

func TestMetricsCountRequestsFailuresAndCalls(t *testing.T) {
	g := NewWithT(t)
	counters := func() map[string]float64 {
		families, err := metrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		out := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				labels := []string{}
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue()
			}
		}
		return out
	}
	cs := connect(t, mcpURL, token, nil)
	before := counters()
	post(t, mcpURL, map[string]string{"Authorization": "Bearer nobody:nothing"})
	callTool(t, cs, "sandbar_schema_datatypes", nil)
	callTool(t, cs, "sandbar_class_describe", map[string]any{"class": "zorp/Hat"})
	after := counters()
	for key, want := range map[string]float64{
		"sandbar_mcp_auth_failures_total{reason=unknown_service}":                 1,
		"sandbar_mcp_tool_calls_total{outcome=ok,tool=sandbar_schema_datatypes}":  1,
		"sandbar_mcp_tool_calls_total{outcome=error,tool=sandbar_class_describe}": 1,
		"sandbar_mcp_tool_calls_total{outcome=ok,tool=sandbar_class_describe}":    0,
		"sandbar_mcp_http_requests_total{code=401,method=POST}":                   1,
	} {
		g.Expect(after[key]-before[key]).To(Equal(want), key)
	}

	resp, err := http.Get(strings.TrimSuffix(mcpURL, "/mcp") + "/readyz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	_ = resp.Body.Close()
}

// A negative body limit would turn the SDK's limit off; it is refused with the flag's name.
func TestNegativeBodyLimitIsRefused(t *testing.T) {
	opts := mcpserver.Options{ToolSurface: mcpserver.SurfaceBoth, NameStyle: mcpserver.StyleUnderscore, MaxRequestBytes: -1}
	NewWithT(t).Expect(opts.Validate()).To(MatchError("--mcp-max-request-bytes must be >= 0 (0: the default limit), not -1"))
	opts.MaxRequestBytes = 0
	NewWithT(t).Expect(opts.Validate()).To(Succeed())
}

// A replica that starts before its catalog is built (its informers still syncing)
// holds no accounts and no classes: it would list no tools, and cannot tell a good
// token from a wrong one (it answers 503, not 401). /readyz fails until it serves the
// catalog's first build, so that the replicas beside it keep the traffic.
func TestAReplicaIsReadyOnceItServesItsCatalog(t *testing.T) {
	g := NewWithT(t)
	st := catalog.NewStore()
	url := serveStore(t, st, mcpserver.Options{})
	base := strings.TrimSuffix(url, "/mcp")
	status := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	g.Expect(waitFor(func() bool { return status("/healthz") == http.StatusOK })).To(Succeed())
	answer, _ := post(t, url, map[string]string{"Authorization": "Bearer " + token})
	g.Expect(answer.StatusCode).To(Equal(http.StatusServiceUnavailable), "a token before the catalog is built is not called invalid")
	g.Expect(status("/readyz")).To(Equal(http.StatusServiceUnavailable))

	snap := *store.Load() // a copy: Publish numbers the snapshot it is given
	st.Publish(&snap)
	g.Expect(waitFor(func() bool { return status("/readyz") == http.StatusOK })).To(Succeed())
	g.Expect(listTools(t, connect(t, url, token, nil))).To(HaveKey("sandbar_entity_create"))
}
