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
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// An agent that knows only what the server says takes an order through the sample
// order.fulfillment workflow, on both revisions, as a new account (the default
// toolsets) meets the server: the only name it is given is the workflow's. It reads
// tools/list and the workflow's prompt, and from then on makes only the calls the
// prompt, an answer's "next" or an error suggests, filling in what they leave to it
// (a value in angle brackets) from the tool's input schema: its type, its enum, a
// string its pattern matches. On the way it meets three errors (a subject that does
// not exist, an order whose customer does not exist, a transition tried too early)
// and each says what to call instead.
func TestAgentTakesAnOrderThroughItsWorkflowByWhatTheServerSays(t *testing.T) {
	for _, kind := range []string{"zorp_SpaceBoot", "zorp_Wearer", "zorp_Review", "order_Order"} {
		waitForTool(t, "sandbar_class_"+kind)
	}
	for _, revision := range []string{sessionRevision, revision2026} {
		t.Run(revision, func(t *testing.T) {
			g := NewWithT(t)
			sa, tok := toolAccount(t, "walk", metav1alpha1.ServiceAccountSpec{})
			cs, _ := connectAt(t, mcpURL, tok, revision, nil)
			a := newAgent(t, cs, unique("walk"))
			a.walk("order.fulfillment")

			g.Expect(a.failed).To(HaveLen(3), "the errors it met:\n%s", strings.Join(a.log, "\n"))
			g.Expect(len(a.log)).To(BeNumerically("<=", 12), "it went straight:\n%s", strings.Join(a.log, "\n"))
			var procs metav1alpha1.WorkflowProcessList
			g.Expect(k8s.List(context.Background(), &procs, client.InNamespace(sa.Namespace))).To(Succeed())
			g.Expect(procs.Items).To(HaveLen(1))
			g.Expect(procs.Items[0].Status.State).To(Equal("delivered"))
			g.Expect(procs.Items[0].Spec.Subject).NotTo(BeNil())
			g.Expect(procs.Items[0].Spec.Subject.Name).To(Equal(a.name), "the process is about the order it created")
		})
	}
}

// TestTypeScriptSDKClientsTakeAnOrderThroughItsWorkflow is the second opinion:
// hack/ts-client/walk.mjs is the same agent with the TypeScript SDK v1 client
// (2025-11-25) and the v2 client (2026-07-28); each walk ends in a process of its
// own order in delivered.
func TestTypeScriptSDKClientsTakeAnOrderThroughItsWorkflow(t *testing.T) {
	tsClient(t)
	g := NewWithT(t)
	for _, kind := range []string{"zorp_Wearer", "order_Order"} {
		waitForTool(t, "sandbar_class_"+kind)
	}
	sa, tok := toolAccount(t, "ts-walk", metav1alpha1.ServiceAccountSpec{})
	names := []string{unique("ts-walk-v1"), unique("ts-walk-v2")}
	out := runScript(t, "walk.mjs", "MCP_URL="+mcpURL, "MCP_TOKEN="+tok, "WORKFLOW=order.fulfillment",
		"NAME_V1="+names[0], "NAME_V2="+names[1])
	var walks map[string]struct{ Calls, Failed []string }
	g.Expect(json.Unmarshal(out, &walks)).To(Succeed(), string(out))
	for _, v := range []string{"v1", "v2"} {
		g.Expect(walks[v].Failed).To(HaveLen(3), "%s: the errors it met:\n%s", v, strings.Join(walks[v].Calls, "\n"))
		g.Expect(len(walks[v].Calls)).To(BeNumerically("<=", 12), "%s went straight:\n%s", v, strings.Join(walks[v].Calls, "\n"))
	}
	var procs metav1alpha1.WorkflowProcessList
	g.Expect(k8s.List(context.Background(), &procs, client.InNamespace(sa.Namespace))).To(Succeed())
	var delivered []string
	for _, p := range procs.Items {
		if p.Status.State == "delivered" && p.Spec.Subject != nil {
			delivered = append(delivered, p.Spec.Subject.Name)
		}
	}
	g.Expect(delivered).To(ConsistOf(names))
}

// suggestion is a call the server suggested: a tool, its arguments, and what the
// text around it says.
type suggestion struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	For       string         `json:"for"`
	line      string
}

// agent is a client that acts only on what the server said.
type agent struct {
	t     *testing.T
	g     Gomega
	cs    *mcp.ClientSession
	tools map[string]*mcp.Tool
	// name is the name it gives what it creates.
	name string
	// steps are the transitions of the workflow (name -> from, to) and success its
	// state of success, both from the prompt.
	steps   map[string]step
	success string
	// log is every call it made, failed the ones that failed.
	log, failed []string
}

type step struct {
	from []string
	to   string
}

func newAgent(t *testing.T, cs *mcp.ClientSession, name string) *agent {
	return &agent{t: t, g: NewWithT(t), cs: cs, tools: listTools(t, cs), name: name}
}

// walk runs a process of the workflow named workflow to its state of success.
func (a *agent) walk(workflow string) {
	ctx := context.Background()
	prompts, err := a.cs.ListPrompts(ctx, nil)
	a.g.Expect(err).NotTo(HaveOccurred())
	var prompt *mcp.Prompt
	for _, p := range prompts.Prompts {
		if strings.Contains(p.Title, workflow) {
			prompt = p
		}
	}
	a.g.Expect(prompt).NotTo(BeNil(), "a prompt for %s", workflow)
	args := map[string]string{}
	for _, arg := range prompt.Arguments {
		args[arg.Name] = a.name
	}
	got, err := a.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt.Name, Arguments: args})
	a.g.Expect(err).NotTo(HaveOccurred())
	a.g.Expect(got.Messages).NotTo(BeEmpty())
	content, ok := got.Messages[0].Content.(*mcp.TextContent)
	a.g.Expect(ok).To(BeTrue(), "the prompt is text")
	said := content.Text
	a.readWorkflow(said)

	var start *suggestion
	for _, s := range suggestions(said) {
		if strings.Contains(s.line, "Start a process") {
			start = &s
		}
	}
	a.g.Expect(start).NotTo(BeNil(), "the prompt says how to start a process:\n%s", said)

	// The calls still to make, the last first: a call that failed for want of
	// something is made again once the call that makes it succeeded.
	todo := []suggestion{*start}
	hasty := true
	for len(todo) > 0 {
		a.g.Expect(len(a.log)).To(BeNumerically("<", 30), "the agent goes round in circles:\n%s", strings.Join(a.log, "\n"))
		call := todo[len(todo)-1]
		res := a.call(call)
		if res.IsError {
			a.failed = append(a.failed, a.log[len(a.log)-1])
			instead := suggestions(text(res))
			a.g.Expect(instead).NotTo(BeEmpty(), "the error says what to call instead: %s", text(res))
			// A call that changes something comes first, and the failed call is
			// made again after it; what only reads replaces the failed call.
			if i := slices.IndexFunc(instead, a.changes); i >= 0 {
				todo = append(todo, instead[i])
			} else {
				todo[len(todo)-1] = instead[0]
			}
			continue
		}
		todo = todo[:len(todo)-1]
		if len(todo) > 0 {
			continue
		}
		next := a.next(res)
		if len(next) == 0 {
			break
		}
		move := a.toward(next)
		if move == nil {
			todo = append(todo, next[0])
			continue
		}
		if hasty {
			// A hasty agent takes the transition into success at once.
			hasty = false
			for name, st := range a.steps {
				if st.to == a.success {
					tried := *move
					tried.Arguments = maps.Clone(move.Arguments)
					tried.Arguments["transition"] = name
					move = &tried
				}
			}
		}
		todo = append(todo, *move)
	}
	for _, line := range a.log {
		a.t.Log(line)
	}
}

var (
	tableRow  = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([^|]+) \\| ([^|]+) \\|$")
	successIs = regexp.MustCompile("(?m)^- success: `([^`]+)`")
	callOf    = regexp.MustCompile("call `([^`]+)`")
)

// readWorkflow learns the transitions and the state of success from a prompt.
func (a *agent) readWorkflow(text string) {
	a.steps = map[string]step{}
	for _, m := range tableRow.FindAllStringSubmatch(text, -1) {
		a.steps[m[1]] = step{from: strings.Split(strings.TrimSpace(m[2]), ", "), to: strings.TrimSpace(m[3])}
	}
	m := successIs.FindStringSubmatch(text)
	a.g.Expect(a.steps).NotTo(BeEmpty(), "the prompt's transitions:\n%s", text)
	a.g.Expect(m).NotTo(BeNil(), "the prompt's state of success:\n%s", text)
	a.success = m[1]
}

// suggestions are the calls a text suggests, each "call `tool` with {...}".
func suggestions(text string) []suggestion {
	var out []suggestion
	for _, line := range strings.Split(text, "\n") {
		for _, m := range callOf.FindAllStringSubmatchIndex(line, -1) {
			s := suggestion{Tool: line[m[2]:m[3]], line: line}
			if rest, ok := strings.CutPrefix(line[m[1]:], " with "); ok {
				_ = json.NewDecoder(strings.NewReader(rest)).Decode(&s.Arguments)
			}
			out = append(out, s)
		}
	}
	return out
}

// next are the calls an answer suggests under "next".
func (a *agent) next(res *mcp.CallToolResult) []suggestion {
	raw, err := json.Marshal(res.StructuredContent)
	a.g.Expect(err).NotTo(HaveOccurred())
	var answer struct {
		Next []suggestion `json:"next"`
	}
	a.g.Expect(json.Unmarshal(raw, &answer)).To(Succeed())
	return answer.Next
}

// changes says whether a suggested call changes something: its tool is not
// read-only.
func (a *agent) changes(s suggestion) bool {
	t := a.tools[s.Tool]
	return t != nil && (t.Annotations == nil || !t.Annotations.ReadOnlyHint)
}

// toward is the suggested transition that leads soonest to success, if any is
// suggested.
func (a *agent) toward(next []suggestion) *suggestion {
	var best *suggestion
	bestDist := len(a.steps) + 1
	for i, s := range next {
		name, ok := s.Arguments["transition"].(string)
		if !ok {
			continue
		}
		if d := a.distance(a.steps[name].to); d < bestDist {
			best, bestDist = &next[i], d
		}
	}
	return best
}

// distance is how many transitions lead from a state to success (more than
// there are when none does).
func (a *agent) distance(state string) int {
	dist := map[string]int{state: 0}
	for queue := []string{state}; len(queue) > 0; queue = queue[1:] {
		at := queue[0]
		if at == a.success {
			return dist[at]
		}
		for _, st := range a.steps {
			if _, seen := dist[st.to]; !seen && slices.Contains(st.from, at) {
				dist[st.to] = dist[at] + 1
				queue = append(queue, st.to)
			}
		}
	}
	return len(a.steps) + 1
}

// call makes a suggested call, a listed tool's, with what it leaves open filled in.
func (a *agent) call(s suggestion) *mcp.CallToolResult {
	t := a.tools[s.Tool]
	a.g.Expect(t).NotTo(BeNil(), "%s is one of the tools it was listed", s.Tool)
	args, _ := a.fill(s.Arguments, schemaOf(t)).(map[string]any)
	res, err := a.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: s.Tool, Arguments: args})
	a.g.Expect(err).NotTo(HaveOccurred(), "calling %s", s.Tool)
	raw, _ := json.Marshal(args)
	outcome := "ok"
	if res.IsError {
		outcome = "error: " + text(res)
	}
	a.log = append(a.log, fmt.Sprintf("%s %s -> %s", s.Tool, raw, outcome))
	return res
}

// fill replaces each value in angle brackets: a name with the agent's name, any
// other with a value of the type the schema gives it.
func (a *agent) fill(v any, schema map[string]any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, x := range v {
			sub, _ := props[k].(map[string]any)
			if s, ok := x.(string); ok && strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">") {
				out[k] = a.value(k, sub)
				continue
			}
			out[k] = a.fill(x, sub)
		}
		return out
	}
	return v
}

func (a *agent) value(key string, schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	switch schema["type"] {
	case "integer", "number":
		return 1
	case "boolean":
		return true
	}
	if pattern, ok := schema["pattern"].(string); ok {
		m, ok := catalog.Matching(pattern)
		a.g.Expect(ok).To(BeTrue(), "a value of %s", pattern)
		return m
	}
	if key == "name" {
		return a.name
	}
	return a.name + "-" + strings.ToLower(key)
}

func schemaOf(t *mcp.Tool) map[string]any {
	raw, _ := json.Marshal(t.InputSchema)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
