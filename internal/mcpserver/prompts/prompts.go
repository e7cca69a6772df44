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

// Package prompts serves every valid WorkflowDefinition as an MCP prompt: a Markdown
// description of its states, transitions, how it ends and how to drive a process.
package prompts

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// Service serves the prompts of one SDK server.
type Service struct {
	mcp   *mcp.Server
	store *catalog.Store
	style tool.NameStyle

	mu       sync.Mutex
	prompts  map[string]string // served prompt name -> fingerprint
	workflow map[string]string // served prompt name -> WorkflowDefinition
}

// New makes the service; Sync serves what a snapshot asks for.
func New(server *mcp.Server, store *catalog.Store, style tool.NameStyle) *Service {
	return &Service{mcp: server, store: store, style: style, prompts: map[string]string{}, workflow: map[string]string{}}
}

// Workflow is the WorkflowDefinition a served prompt describes.
func (s *Service) Workflow(prompt string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workflow[prompt]
}

// Middleware serves a workflow's prompt only to the accounts the workflow is open to
// (catalog.Workflow.OpenTo, the rule start-process applies): prompts/list leaves the
// others out, prompts/get and completions of their arguments are refused.
func (s *Service) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		acct := caller.Of(req.GetExtra())
		switch method {
		case "prompts/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			list := res.(*mcp.ListPromptsResult)
			out := *list
			out.Prompts = list.Prompts[:0:0]
			for _, p := range list.Prompts {
				if s.closed(acct, p.Name) == nil {
					out.Prompts = append(out.Prompts, p)
				}
			}
			return &out, nil
		case "prompts/get":
			if err := s.closed(acct, req.(*mcp.GetPromptRequest).Params.Name); err != nil {
				return nil, err
			}
		case "completion/complete":
			if ref := req.(*mcp.CompleteRequest).Params.Ref; ref != nil && ref.Type == "ref/prompt" {
				if err := s.closed(acct, ref.Name); err != nil {
					return nil, err
				}
			}
		}
		return next(ctx, method, req)
	}
}

// closed refuses a prompt whose workflow is not open to an account; an unknown
// prompt is left to the SDK.
func (s *Service) closed(acct *catalog.Account, prompt string) error {
	w, ok := s.store.Load().Workflows[s.Workflow(prompt)]
	if !ok || w.OpenTo(acct) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "forbidden: " + w.Closed(acct)}
}

// Sync serves every valid WorkflowDefinition as a prompt; the SDK sends
// notifications/prompts/list_changed for every change.
func (s *Service) Sync(snap *catalog.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]string{} // prompt name -> fingerprint
	for _, name := range snap.WorkflowNames() {
		w := snap.Workflows[name]
		if w.Problem != nil {
			continue
		}
		p := &mcp.Prompt{
			Name:        tool.Encode(s.style, "sandbar.workflow."+name),
			Title:       "Workflow " + name,
			Description: promptDescription(w),
		}
		fp := renderWorkflow(w, snap, s.style, nil)
		for _, a := range w.Spec.Arguments {
			p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
			fp += "|" + a.Name + a.Description + fmt.Sprint(a.Required)
		}
		// Who may use it: clients list again when that changes.
		fp += "|" + strings.Join(w.Spec.Namespaces, ",")
		want[p.Name] = fp
		s.workflow[p.Name] = name
		if s.prompts[p.Name] == fp {
			continue
		}
		workflow := name
		s.mcp.AddPrompt(p, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return s.getPrompt(workflow, req)
		})
	}
	var gone []string
	for name := range s.prompts {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(s.workflow, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	s.prompts = want
}

func promptDescription(w *catalog.Workflow) string {
	d := w.Spec.Description
	if d == "" {
		d = "The workflow " + w.Name + "."
	}
	return d + " Describes its states and transitions and how to drive a process."
}

func (s *Service) getPrompt(workflow string, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	snap := s.store.Load()
	w, ok := snap.Workflows[workflow]
	if !ok || w.Problem != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Params.Name)}
	}
	var missing []string
	for _, a := range w.Spec.Arguments {
		if a.Required && req.Params.Arguments[a.Name] == "" {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("prompt %q needs the argument(s): %s", req.Params.Name, strings.Join(missing, ", "))}
	}
	return &mcp.GetPromptResult{
		Description: promptDescription(w),
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: renderWorkflow(w, snap, s.style, req.Params.Arguments)},
		}},
	}, nil
}

// renderWorkflow describes a workflow in Markdown: its states, transitions, terminal
// states and cancellation, the arguments given, and how to work with it.
func renderWorkflow(w *catalog.Workflow, snap *catalog.Snapshot, style tool.NameStyle, args map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Workflow %s\n\n", w.Name)
	if w.Spec.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", w.Spec.Description)
	}
	if cl, ok := snap.Classes[w.Spec.SubjectClass]; ok {
		fmt.Fprintf(&b, "Each process of this workflow is about one %s instance.\n\n", cl.Ident())
	}
	b.WriteString("## States\n\n")
	for _, st := range w.Spec.States {
		fmt.Fprintf(&b, "- `%s`", st.Name)
		var notes []string
		if st.Name == w.Spec.Initial {
			notes = append(notes, "initial")
		}
		if st.Terminal != "" {
			notes = append(notes, "terminal: "+string(st.Terminal))
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
		}
		if st.Description != "" {
			fmt.Fprintf(&b, ": %s", st.Description)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Transitions\n\n| transition | from | to |\n|---|---|---|\n")
	for _, t := range w.Spec.Transitions {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", t.Name, strings.Join(t.From, ", "), t.To)
	}
	b.WriteString("\n## How it ends\n\n")
	byKind := map[metav1alpha1.TerminalKind][]string{}
	for _, st := range w.Spec.States {
		if st.Terminal != "" {
			byKind[st.Terminal] = append(byKind[st.Terminal], "`"+st.Name+"`")
		}
	}
	for _, k := range []metav1alpha1.TerminalKind{metav1alpha1.TerminalSuccess, metav1alpha1.TerminalFailure, metav1alpha1.TerminalCancelled} {
		if len(byKind[k]) > 0 {
			fmt.Fprintf(&b, "- %s: %s\n", k, strings.Join(byKind[k], ", "))
		}
	}
	if len(w.CancellableFrom) > 0 {
		fmt.Fprintf(&b, "- A process can be cancelled while in: %s.\n", strings.Join(w.CancellableFrom, ", "))
	} else {
		b.WriteString("- A process of this workflow cannot be cancelled.\n")
	}
	if len(args) > 0 {
		b.WriteString("\n## Arguments\n\n")
		for _, a := range w.Spec.Arguments {
			if v, ok := args[a.Name]; ok {
				fmt.Fprintf(&b, "- %s: %s\n", a.Name, v)
			}
		}
	}
	b.WriteString("\n## Working with it\n\n")
	b.WriteString("Every run of this workflow is a WorkflowProcess object that records its state and history; it starts in `" +
		w.Spec.Initial + "` and moves only by the transitions above, from the states they list.\n")
	call := func(canonical string, args map[string]any) string {
		return tool.Next{Tool: tool.Encode(style, canonical), Arguments: args}.String()
	}
	subject := snap.Classes[w.Spec.SubjectClass]
	if subject != nil {
		fmt.Fprintf(&b, "To find the %s instances, %s; to read one before acting on it, %s.\n",
			subject.Ident(), call("sandbar.entity.find", map[string]any{"class": subject.Ident()}),
			call("sandbar.class.describe", map[string]any{"class": subject.Ident()}))
		if creates := tool.CreateCalls(style, snap, subject, "<instance name>"); len(creates) > 0 {
			fmt.Fprintf(&b, "To create one, %s.\n", tool.Instead(creates...))
		}
	}
	writeDriving(&b, w, subject, call, args)
	return b.String()
}

// writeDriving says which tools, with which arguments, start a process and move it
// by each transition, so that a client can act on the prompt without looking the
// tools up.
func writeDriving(b *strings.Builder, w *catalog.Workflow, subject *catalog.Class, call func(string, map[string]any) string, args map[string]string) {
	start := map[string]any{"workflow": w.Name}
	if subject != nil {
		start["subject"] = map[string]any{"class": subject.Ident(), "name": "<instance name>"}
	}
	if len(w.Spec.Arguments) > 0 {
		input := map[string]any{}
		for _, a := range w.Spec.Arguments {
			input[a.Name] = "<" + a.Name + ">"
			if given, ok := args[a.Name]; ok {
				input[a.Name] = given
			}
		}
		start["input"] = input
	}
	b.WriteString("\n## Starting and moving a process\n\n")
	fmt.Fprintf(b, "1. Start a process: %s. It runs as a task: the answer carries its `taskId`, and under `next` the calls that move it; it starts in `%s`.",
		call("sandbar.workflow.start-process", start), w.Spec.Initial)
	if subject != nil {
		b.WriteString(" Its subject must exist first.")
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "2. Move it: %s (a `reason` for its history is optional), by one of:\n",
		call("sandbar.workflow.transition", map[string]any{"taskId": "<taskId>", "transition": "<transition>"}))
	for _, t := range w.Spec.Transitions {
		fmt.Fprintf(b, "   - `%s`: from %s to `%s`\n", t.Name, strings.Join(quoted(t.From), " or "), t.To)
	}
	id := map[string]any{"taskId": "<taskId>"}
	fmt.Fprintf(b, "3. To see where it is and which transitions it can take, %s; to see its steps, %s.\n",
		call("sandbar.workflow.process-state", id), call("sandbar.workflow.process-history", id))
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return out
}
