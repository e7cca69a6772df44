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
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

const spaceBootView = "ui://sandbar/class/zorp/SpaceBoot"

// viewModel is what a view's HTML embeds for its bundle.
type viewModel struct {
	View   string            `json:"view"`
	Class  string            `json:"class"`
	Tools  map[string]string `json:"tools"`
	Fields []struct {
		Field    string `json:"field"`
		Range    string `json:"range"`
		Required bool   `json:"required"`
		Target   string `json:"target"`
	} `json:"fields"`
}

// modelOf reads a class's model out of its view's HTML.
func modelOf(t *testing.T, page string) viewModel {
	t.Helper()
	var m viewModel
	modelInto(t, page, &m)
	return m
}

// modelInto reads the model out of a view's HTML.
func modelInto(t *testing.T, page string, m any) {
	t.Helper()
	_, rest, ok := strings.Cut(page, `<script type="application/json" id="sandbar-model">`)
	NewWithT(t).Expect(ok).To(BeTrue(), "the view embeds its model")
	raw, _, _ := strings.Cut(rest, "</script>")
	NewWithT(t).Expect(json.Unmarshal([]byte(raw), m)).To(Succeed())
}

// Every class tool names its view (_meta.ui.resourceUri) on both revisions, and
// nothing else does; the view is a resource of the MCP Apps MIME type, listed and
// read, that allows no outside origin and embeds the class's model with the names
// of tools the server serves.
func TestClassToolsCarryTheirViews(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	// (The suite's classes may still be on their way at its start.)
	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey("sandbar_class_zorp_SpaceBoot"))
	served := map[string]bool{}
	classTools := 0
	for tl, err := range cs.Tools(context.Background(), nil) {
		g.Expect(err).NotTo(HaveOccurred())
		served[tl.Name] = true
		ui, _ := tl.Meta["ui"].(map[string]any)
		switch tl.Name {
		case "sandbar_workflow_start-process", "sandbar_workflow_active-processes", "sandbar_workflow_transition", "sandbar_workflow_process-state":
			g.Expect(ui).To(HaveKeyWithValue("resourceUri", "ui://sandbar/workflows"), tl.Name)
			continue
		}
		if !strings.HasPrefix(tl.Name, "sandbar_class_") || !strings.Contains(strings.TrimPrefix(tl.Name, "sandbar_class_"), "_") {
			g.Expect(ui).To(BeNil(), "%s has no view", tl.Name)
			continue
		}
		classTools++
		prefix, kind, _ := strings.Cut(strings.TrimPrefix(tl.Name, "sandbar_class_"), "_")
		g.Expect(ui).To(HaveKeyWithValue("resourceUri", "ui://sandbar/class/"+prefix+"/"+kind), tl.Name)
	}
	g.Expect(classTools).To(BeNumerically(">=", 3))
	g.Expect(served).To(HaveKey("sandbar_class_zorp_SpaceBoot"))

	g.Expect(listResources(t, cs)).To(HaveKey(spaceBootView))
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: spaceBootView})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Contents).To(HaveLen(1))
	c := res.Contents[0]
	g.Expect(c.MIMEType).To(Equal("text/html;profile=mcp-app"))
	g.Expect(c.Meta).To(HaveKeyWithValue("ui", HaveKeyWithValue("csp", BeEmpty())), "no outside origin is asked for")
	g.Expect(len(c.Text)).To(BeNumerically("<=", 200<<10), "a view is at most 200 KiB")
	g.Expect(c.Text).To(ContainSubstring(`http-equiv="Content-Security-Policy" content="default-src 'none';`))
	g.Expect(c.Text).NotTo(MatchRegexp(`(?i)(src|href)="https?:`), "nothing is loaded from anywhere")
	m := modelOf(t, c.Text)
	g.Expect(m.View).To(Equal("class"))
	g.Expect(m.Class).To(Equal("zorp/SpaceBoot"))
	for role, name := range m.Tools {
		g.Expect(served).To(HaveKey(name), "the view's %s tool is served", role)
	}
	fields := map[string]bool{}
	for _, f := range m.Fields {
		fields[f.Field] = f.Required
	}
	g.Expect(fields).To(HaveKeyWithValue("name", true), "the inherited required slot is a required field")

	// The board has every workflow, with its states and transitions.
	res, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ui://sandbar/workflows"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Contents[0].MIMEType).To(Equal("text/html;profile=mcp-app"))
	var board struct {
		View      string            `json:"view"`
		Tools     map[string]string `json:"tools"`
		Workflows []struct {
			Name        string `json:"name"`
			States      []any  `json:"states"`
			Transitions []any  `json:"transitions"`
		} `json:"workflows"`
	}
	modelInto(t, res.Contents[0].Text, &board)
	g.Expect(board.View).To(Equal("board"))
	for role, name := range board.Tools {
		g.Expect(served).To(HaveKey(name), "the board's %s tool is served", role)
	}
	g.Expect(board.Workflows).To(ContainElement(And(HaveField("Name", "order.fulfillment"), HaveField("States", HaveLen(5)),
		HaveField("Transitions", HaveLen(4)))))

	// The stateless revision lists and reads the same.
	s := newStatelessRaw(t, mcpURL, token, false)
	disc := s.result("server/discover", "", nil)
	g.Expect(disc).To(HaveKeyWithValue("capabilities", HaveKeyWithValue("extensions",
		HaveKeyWithValue("io.modelcontextprotocol/ui", HaveKeyWithValue("mimeTypes", ContainElement("text/html;profile=mcp-app"))))))
	var listed struct {
		Tools []struct {
			Name string         `json:"name"`
			Meta map[string]any `json:"_meta"`
		} `json:"tools"`
	}
	out := s.call("tools/list", "", nil)
	g.Expect(out.Error).To(BeNil())
	g.Expect(json.Unmarshal(out.Result, &listed)).To(Succeed())
	found := false
	for _, tl := range listed.Tools {
		if tl.Name == "sandbar_class_zorp_SpaceBoot" {
			found = true
			g.Expect(tl.Meta).To(HaveKeyWithValue("ui", HaveKeyWithValue("resourceUri", spaceBootView)))
		}
	}
	g.Expect(found).To(BeTrue())
	read := s.result("resources/read", spaceBootView, map[string]any{"uri": spaceBootView})
	g.Expect(read).To(HaveKeyWithValue("contents", ContainElement(And(
		HaveKeyWithValue("mimeType", "text/html;profile=mcp-app"), HaveKeyWithValue("text", c.Text)))))
}

// A view shows what reading the metamodel shows, so it takes that, or a tool that
// names it: an account served the workflow tools alone reads the board and no class's
// view, one served entity verbs alone neither. A URI of the views' shape that names
// no class is not found, and a malformed one is -32602.
func TestViewsAreTheMetamodelsToRead(t *testing.T) {
	g := NewWithT(t)
	findOnly := newTenant(t, metav1alpha1.Permissions{Tools: []string{"sandbar_entity_*"}})
	cs := connect(t, mcpURL, findOnly.token, nil)
	g.Expect(listResources(t, cs)).NotTo(HaveKey(spaceBootView))
	for _, uri := range []string{spaceBootView, "ui://sandbar/workflows"} {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		g.Expect(err).To(MatchError(ContainSubstring("reading the metamodel")), uri)
	}
	workflowsOnly := newTenant(t, metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_*"}})
	cs = connect(t, mcpURL, workflowsOnly.token, nil)
	listed := listResources(t, cs)
	g.Expect(listed).To(HaveKey("ui://sandbar/workflows"), "the board is listed to those its tools are served to")
	g.Expect(listed).NotTo(HaveKey(spaceBootView))
	g.Expect(listed).NotTo(HaveKey("mcp://sandbar/meta/Class/zorp.spaceboot"))
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ui://sandbar/workflows"})
	g.Expect(err).NotTo(HaveOccurred(), "the workflow tools name the board")
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: spaceBootView})
	g.Expect(err).To(MatchError(ContainSubstring("reading the metamodel")))
	bootsOnly := newTenant(t, metav1alpha1.Permissions{Tools: []string{"sandbar_class_zorp_SpaceBoot"}})
	cs = connect(t, mcpURL, bootsOnly.token, nil)
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: spaceBootView})
	g.Expect(err).NotTo(HaveOccurred(), "the class's tool names its view")
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ui://sandbar/class/zorp/Wearer"})
	g.Expect(err).To(MatchError(ContainSubstring("reading the metamodel")), "another class's view takes its tool or the metamodel")

	cs = connect(t, mcpURL, token, nil)
	var rpc *jsonrpc.Error
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ui://sandbar/class/zorp/NoSuchKind"})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(Equal("Resource not found"))
	for _, uri := range []string{"ui://sandbar/class/zorp", "ui://sandbar/class/Zorp/SpaceBoot", "ui://sandbar/class/zorp/SpaceBoot/x", "ui://sandbar/other"} {
		_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%s: %v", uri, err)
		g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)), uri)
	}
}

// With --mcp-views=false no tool names a view, no view is served, and the server
// declares no MCP Apps extension.
func TestNoViewsServesNone(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{NoViews: true})
	cs := connect(t, url, token, nil)
	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey("sandbar_class_zorp_SpaceBoot"))
	for name, tl := range listTools(t, cs) {
		g.Expect(tl.Meta).NotTo(HaveKey("ui"), name)
	}
	for uri := range listResources(t, cs) {
		g.Expect(uri).NotTo(HavePrefix("ui://"))
	}
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: spaceBootView})
	g.Expect(err).To(MatchError(ContainSubstring("Resource not found")))
	disc := newStatelessRaw(t, url, token, false).result("server/discover", "", nil)
	g.Expect(disc["capabilities"]).NotTo(HaveKeyWithValue("extensions", HaveKey("io.modelcontextprotocol/ui")))
	resp, err := http.Get(url + "/server-card")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	card, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(string(card)).To(ContainSubstring("io.modelcontextprotocol/tasks"))
	g.Expect(string(card)).NotTo(ContainSubstring("io.modelcontextprotocol/ui"), "the server card names no MCP Apps either")
}

// MCP Inspector's CLI, a client of another hand, finds a view for every class tool
// and for the workflow tools that name the board, and no other tool has one.
func TestInspectorFindsAViewForEveryClassTool(t *testing.T) {
	g := NewWithT(t)
	cli := filepath.Join(testenv.RepoRoot(), "hack", "inspector", "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(cli); err != nil {
		t.Fatal("run make test (make inspector installs MCP Inspector)")
	}
	cs := connect(t, mcpURL, token, nil)
	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey("sandbar_class_zorp_SpaceBoot"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "--cli", mcpURL, "--transport", "http", "--header", "Authorization: Bearer "+token,
		"--method", "tools/list", "--app-info")
	// Its secrets and state stay in memory and the test's own folder, not in $HOME.
	cmd.Env = append(os.Environ(), "MCP_INSPECTOR_SECRET_STORE=memory", "HOME="+t.TempDir(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "mcp.json"))
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	apps := map[string]string{}
	lines := 0
	for line := range strings.Lines(string(out)) {
		var probe struct {
			HasApp           bool   `json:"hasApp"`
			ToolName         string `json:"toolName"`
			ResourceURI      string `json:"resourceUri"`
			ResourceMimeType string `json:"resourceMimeType"`
		}
		if json.Unmarshal([]byte(line), &probe) != nil {
			continue
		}
		lines++
		if probe.HasApp {
			g.Expect(probe.ResourceMimeType).To(Equal("text/html;profile=mcp-app"), probe.ToolName)
			apps[probe.ToolName] = probe.ResourceURI
		}
	}
	served := listTools(t, cs)
	g.Expect(lines).To(Equal(len(served)), "a line for every tool")
	for name := range served {
		prefix, kind, ok := strings.Cut(strings.TrimPrefix(name, "sandbar_class_"), "_")
		switch {
		case strings.HasPrefix(name, "sandbar_class_") && ok:
			g.Expect(apps).To(HaveKeyWithValue(name, "ui://sandbar/class/"+prefix+"/"+kind))
		case slices.Contains([]string{"sandbar_workflow_start-process", "sandbar_workflow_active-processes",
			"sandbar_workflow_transition", "sandbar_workflow_process-state"}, name):
			g.Expect(apps).To(HaveKeyWithValue(name, "ui://sandbar/workflows"))
		default:
			g.Expect(apps).NotTo(HaveKey(name))
		}
	}
}
