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

package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): go-sdk#942 (the Tasks
// extension, with its input path) would remove this file.

// The input path of the extension: a process of a user workflow waits in a state
// until someone takes one of the transitions out of it. To a client that can be
// asked (it declared elicitation on its tasks/get), such a task is input_required,
// and its inputRequests hold one form that asks which transition to take; the
// client's tasks/update with the answer takes it, as sandbar_workflow_transition
// would. A client that cannot be asked sees the task working, and moves it with
// that verb.

// inputRequired is the extension's status of a task that waits for its client.
const inputRequired = "input_required"

type elicitsKey struct{}

// elicits says whether the request of ctx declared that its client can be asked
// (elicitation, whose form mode is the default).
func elicits(ctx context.Context) bool {
	v, _ := ctx.Value(elicitsKey{}).(bool)
	return v
}

// declaresElicitation says whether req declared the elicitation capability with
// its form mode (tool.TakesForms).
func declaresElicitation(req mcp.Request) bool {
	return tool.TakesForms(capabilities(req))
}

// inputKey is the key of the question a process asks in its current state: a digest
// of the transitions it has taken, so that each stay in a state has a key of its
// own (no key of a task is used twice, as the extension requires) and an answer to
// an earlier question is ignored. The start, which the controller records, perhaps
// after the first question was asked, does not count; nor does the length of the
// history, which keeps only the newest steps.
func inputKey(p *metav1alpha1.WorkflowProcess) string {
	h := fnv.New64a()
	for _, e := range p.Status.History {
		if e.Transition != "" {
			_, _ = fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\n", e.Transition, e.From, e.To, e.Actor, e.Time.Unix())
		}
	}
	return fmt.Sprintf("transition-%016x", h.Sum64())
}

// asking sets t, a process's task as tasks/get answers it, to input_required with
// the question of the process's state, when the process waits for a transition.
func (a *Adapter) asking(t *detailedTask, proc *metav1alpha1.WorkflowProcess) {
	next := a.processes.Waiting(proc)
	if len(next) == 0 || t.Status != process.Working {
		return
	}
	names := make([]string, 0, len(next))
	lines := make([]string, 0, len(next))
	for _, tr := range next {
		names = append(names, tr.Name)
		line := tr.Name + " (to " + tr.To + ")"
		if tr.Description != "" {
			line += ": " + tr.Description
		}
		lines = append(lines, line)
	}
	state := proc.Status.State
	t.Status = inputRequired
	t.StatusMessage = fmt.Sprintf("waits in state %q for a transition: %s", state, strings.Join(names, ", "))
	t.InputRequests = map[string]any{inputKey(proc): map[string]any{
		"method": "elicitation/create",
		"params": map[string]any{
			"mode": "form",
			"message": fmt.Sprintf("Process %s of workflow %s is in state %q. Which transition should it take? %s.",
				proc.Name, proc.Spec.Definition, state, strings.Join(lines, "; ")),
			"requestedSchema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"transition": map[string]any{"type": "string", "title": "Transition", "enum": names},
					"reason":     map[string]any{"type": "string", "title": "Reason", "description": "Why, kept in the process's history."},
				},
				"required": []string{"transition"},
			},
		},
	}}
}

// elicitResult is a client's answer to a form.
type elicitResult struct {
	Action  string `json:"action"`
	Content struct {
		Transition string `json:"transition"`
		Reason     string `json:"reason"`
	} `json:"content"`
}

// update serves tasks/update: the answer to the question the process asks now
// takes the transition it names (with the account's rights, as
// sandbar_workflow_transition does); an answer to another key (never asked, asked
// before, or of a state the process has left) is ignored, as the extension has it,
// and so is a declined or cancelled form: the process waits on.
func (a *Adapter) update(ctx context.Context, in *updateParams) (*ack, error) {
	acct := caller.FromContext(ctx)
	proc, err := a.processes.GetFresh(ctx, acct, in.TaskID)
	if err != nil {
		return nil, rpcError(err)
	}
	raw, ok := in.InputResponses[inputKey(proc)]
	if !ok || len(a.processes.Waiting(proc)) == 0 {
		return &ack{ResultType: resultComplete}, nil
	}
	var answer elicitResult
	if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &answer) != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"inputResponses[%q] is not an elicitation result: {action, content: {transition, reason?}}", inputKey(proc))}
	}
	if answer.Action != "accept" {
		return &ack{ResultType: resultComplete}, nil
	}
	if answer.Content.Transition == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"inputResponses[%q] accepts without a transition: content.transition names the one to take", inputKey(proc))}
	}
	if info, ok := a.served.Lookup(a.moveTool); !ok || !authorize.MayCall(acct, a.moveTool, info) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"forbidden: this account's permissions do not allow the tool %q, which moves a process", a.moveTool)}
	}
	if _, err := a.processes.Transition(ctx, acct, proc.Name, answer.Content.Transition, answer.Content.Reason); err != nil {
		return nil, rpcError(err)
	}
	return &ack{ResultType: resultComplete}, nil
}
