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

package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// taskVerbs are the verbs of workflows, validation, export and import, and the
// task tools for clients that do not speak MCP Tasks.
func (s *Server) taskVerbs() []verb {
	taskArg := schema{"type": "string", "description": "The task id (from the call that started it)."}
	taskInput := func(*catalog.Snapshot) schema {
		return schema{"type": "object", "properties": schema{"taskId": taskArg}, "required": []string{"taskId"}}
	}
	return []verb{
		{group: "tasks", name: "get", title: "Get a task", readOnly: true, idempotent: true,
			description: "The status of a task: working, completed, failed or cancelled, with a message and progress.",
			input:       taskInput, run: (*call).taskGet},
		{group: "tasks", name: "result", title: "Result of a task", readOnly: true, idempotent: true,
			description: "The result of a task once it ended: {taskId, waitSeconds?}; waits up to waitSeconds (default 0, at most 60) for it to end.",
			input: func(*catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{"taskId": taskArg,
					"waitSeconds": schema{"type": "integer", "minimum": 0, "maximum": 60}}, "required": []string{"taskId"}}
			}, run: (*call).taskResult},
		{group: "tasks", name: "list", title: "List tasks", readOnly: true, idempotent: true,
			description: "This account's tasks, oldest first, 50 a page: {cursor?}.",
			input: func(*catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{"cursor": schema{"type": "string"}}}
			}, run: (*call).taskList},
		{group: "tasks", name: "cancel", title: "Cancel a task", destructive: true,
			description: "Cancel a task through its workflow's cancellation guard; refused with the reason (already-completed, not-cancellable, no-cancel-transition).",
			input:       taskInput, run: (*call).taskCancel},

		{group: "class", name: "validate-all-instances", title: "Validate all instances", longRunning: true,
			description: "Check every instance of a class and its subclasses against the class's current slots, as a task. Answers at once with the task id.",
			input:       classInput(false), run: (*call).validationStart},
		{group: "validation", name: "start", title: "Start a validation", longRunning: true,
			description: "Start validating every instance of a class and its subclasses, as a task: {class}.",
			input:       classInput(false), run: (*call).validationStart},
		{group: "validation", name: "run", title: "Run a validation", longRunning: true,
			description: "Validate every instance of a class and wait (up to waitSeconds, default 30) for the report: {class, waitSeconds?}.",
			input: func(snap *catalog.Snapshot) schema {
				in := classInput(false)(snap)
				in["properties"].(schema)["waitSeconds"] = schema{"type": "integer", "minimum": 1, "maximum": 60}
				return in
			}, run: (*call).validationRun},
		{group: "validation", name: "cancel", title: "Cancel a validation", destructive: true,
			description: "Cancel a running validation: {taskId}.", input: taskInput, run: (*call).taskCancel},
		{group: "validation", name: "retry", title: "Retry a validation", longRunning: true,
			description: "Start a validation again with the same input as an earlier one: {taskId}.", input: taskInput, run: (*call).validationRetry},
		{group: "validation", name: "results", title: "Validation results", readOnly: true, idempotent: true,
			description: "The report of a validation: instances checked, invalid ones and why: {taskId}.", input: taskInput, run: (*call).taskResultNow},
		{group: "validation", name: "history", title: "Validation history", readOnly: true, idempotent: true,
			description: "This account's validations, newest first.", run: (*call).validationHistory},

		{group: "project", name: "export", title: "Export instances", readOnly: true, longRunning: true,
			description: "Export the instances of a class (and its subclasses), or of every class, as a bundle, as a task: {class?, format?: json|markdown}.",
			input: func(snap *catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{"class": classArg(snap, false),
					"format": schema{"type": "string", "enum": []string{"json", "markdown"}}}}
			}, run: (*call).projectExport},
		{group: "project", name: "import", title: "Import instances", longRunning: true,
			description: "Import a bundle (as sandbar_project_export makes it), creating missing instances and updating changed ones, as a task: {bundle: {format?, items: [{class, name, attributes} or {class, source}]}}.",
			input: func(*catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{"bundle": schema{"type": "object"}}, "required": []string{"bundle"}}
			}, run: (*call).projectImport},

		{group: "workflow", name: "find", title: "Find workflows", readOnly: true, idempotent: true,
			description: "The workflow definitions: states, transitions, terminal states, cancellation.",
			run:         (*call).workflowFind},
		{group: "workflow", name: "define", title: "Define a workflow", idempotent: true,
			description: "Create or replace a workflow definition: {name, spec: {initial, states: [{name, terminal?}], transitions: [{name, from: [...], to}], subjectClass?, description?}}.",
			input: func(*catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{"name": schema{"type": "string"}, "spec": schema{"type": "object"}},
					"required": []string{"name", "spec"}}
			}, run: (*call).workflowDefine},
		{group: "workflow", name: "start-process", title: "Start a process", longRunning: true,
			description: "Start a process of a workflow, as a task: {workflow, subject?: {class, name}, input?}. It starts in the initial state; move it with sandbar_workflow_transition.",
			input: func(snap *catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{
					"workflow": schema{"type": "string", "enum": nonNil(snap.WorkflowNames())},
					"subject":  schema{"type": "object", "properties": schema{"class": schema{"type": "string"}, "name": schema{"type": "string"}}},
					"input":    schema{"description": "Any JSON value."},
				}, "required": []string{"workflow"}}
			}, run: (*call).workflowStart},
		{group: "workflow", name: "transition", title: "Move a process",
			description: "Move a process by a named transition from its current state: {taskId, transition, reason?}.",
			input: func(*catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{"taskId": taskArg, "transition": schema{"type": "string"},
					"reason": schema{"type": "string"}}, "required": []string{"taskId", "transition"}}
			}, run: (*call).workflowTransition},
		{group: "workflow", name: "process-state", title: "State of a process", readOnly: true, idempotent: true,
			description: "The current state of a process and the transitions it can take from there: {taskId}.", input: taskInput, run: (*call).processState},
		{group: "workflow", name: "process-history", title: "History of a process", readOnly: true, idempotent: true,
			description: "Every step of a process: from, to, transition, who, when, why: {taskId}.", input: taskInput, run: (*call).processHistory},
		{group: "workflow", name: "active-processes", title: "Active processes", readOnly: true, idempotent: true,
			description: "This account's processes that have not ended: {workflow?}.",
			input: func(*catalog.Snapshot) schema {
				return schema{"type": "object", "properties": schema{"workflow": schema{"type": "string"}}}
			}, run: (*call).activeProcesses},
	}
}

// task finds a task of the caller, as a domain error when it does not exist.
func (c *call) task(ctx context.Context) (*metav1alpha1.WorkflowProcess, error) {
	return c.readTask(ctx, false)
}

// readTask is task; fresh reads from the API server, for read-modify-write.
func (c *call) readTask(ctx context.Context, fresh bool) (*metav1alpha1.WorkflowProcess, error) {
	id, err := c.str("taskId", true)
	if err != nil {
		return nil, err
	}
	p, err := c.s.readTask(ctx, c.acct, id, fresh)
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return nil, fail("%s; sandbar_tasks_list lists this account's tasks", rpc.Message)
	}
	return p, err
}

func (c *call) taskGet(ctx context.Context) (any, error) {
	p, err := c.task(ctx)
	if err != nil {
		return nil, err
	}
	return taskView(p), nil
}

func taskView(p *metav1alpha1.WorkflowProcess) map[string]any {
	v := map[string]any{"task": taskOf(p), "workflow": p.Spec.Definition, "state": p.Status.State}
	if pr := p.Status.Progress; pr != nil {
		v["progress"] = pr
	}
	return v
}

func (c *call) taskResult(ctx context.Context) (any, error) {
	wait, err := c.integer("waitSeconds", 0, 0, 60)
	if err != nil {
		return nil, err
	}
	p, err := c.task(ctx)
	if err != nil {
		return nil, err
	}
	if !workflow.Terminal(&p.Status) && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second)
		defer cancel()
		if done, err := c.s.waitTask(wctx, c.acct, p.Name); err == nil {
			p = done
		}
	}
	return c.resultView(p)
}

func (c *call) taskResultNow(ctx context.Context) (any, error) {
	p, err := c.task(ctx)
	if err != nil {
		return nil, err
	}
	return c.resultView(p)
}

func (c *call) resultView(p *metav1alpha1.WorkflowProcess) (any, error) {
	if !workflow.Terminal(&p.Status) {
		return map[string]any{"task": taskOf(p), "note": "the task has not ended yet"}, nil
	}
	res := resultOf(p)
	if res.IsError {
		return nil, fail("%s", resultText(res))
	}
	return map[string]any{"task": taskOf(p), "result": res.StructuredContent}, nil
}

// resultText is the text of a result's content.
func resultText(res *mcp.CallToolResult) string {
	out := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out += t.Text
		}
	}
	return out
}

func (c *call) taskList(ctx context.Context) (any, error) {
	cursor, err := c.str("cursor", false)
	if err != nil {
		return nil, err
	}
	tasks, next, err := c.s.listTasks(ctx, c.acct, cursor)
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return nil, fail("%s", rpc.Message)
	}
	if err != nil {
		return nil, err
	}
	out := map[string]any{"tasks": tasks}
	if next != "" {
		out["nextCursor"] = next
	}
	return out, nil
}

func (c *call) taskCancel(ctx context.Context) (any, error) {
	id, err := c.str("taskId", true)
	if err != nil {
		return nil, err
	}
	p, err := c.s.cancelTask(ctx, c.acct, id)
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return nil, fail("%s", rpc.Message)
	}
	if err != nil {
		return nil, err
	}
	return taskView(p), nil
}

// started answers a long-running call: the task, for clients that did not ask for one.
func (c *call) started(ctx context.Context, definition string, input any, subject *metav1alpha1.SubjectRef) (any, error) {
	p, err := c.startProcess(ctx, definition, input, subject)
	if err != nil {
		return nil, err
	}
	return taskStarted(p), nil
}

func (c *call) validationStart(ctx context.Context) (any, error) {
	cl, err := c.class("class")
	if err != nil {
		return nil, err
	}
	return c.started(ctx, workflow.Validate, map[string]any{"class": cl.Ident()}, nil)
}

func (c *call) validationRun(ctx context.Context) (any, error) {
	wait, err := c.integer("waitSeconds", 30, 1, 60)
	if err != nil {
		return nil, err
	}
	cl, err := c.class("class")
	if err != nil {
		return nil, err
	}
	p, err := c.startProcess(ctx, workflow.Validate, map[string]any{"class": cl.Ident()}, nil)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second)
	defer cancel()
	if done, err := c.s.waitTask(wctx, c.acct, p.Name); err == nil {
		p = done
	}
	return c.resultView(p)
}

func (c *call) validationRetry(ctx context.Context) (any, error) {
	p, err := c.task(ctx)
	if err != nil {
		return nil, err
	}
	if p.Spec.Definition != workflow.Validate {
		return nil, fail("task %s is not a validation", p.Name)
	}
	var input any
	if p.Spec.Input != nil {
		input = p.Spec.Input
	}
	return c.started(ctx, workflow.Validate, input, nil)
}

func (c *call) validationHistory(ctx context.Context) (any, error) {
	return c.processes(ctx, func(p *metav1alpha1.WorkflowProcess) bool { return p.Spec.Definition == workflow.Validate }, true)
}

func (c *call) projectExport(ctx context.Context) (any, error) {
	input := map[string]any{}
	if name, err := c.str("class", false); err != nil {
		return nil, err
	} else if name != "" {
		cl, err := c.class("class")
		if err != nil {
			return nil, err
		}
		input["class"] = cl.Ident()
	}
	format, err := c.str("format", false)
	if err != nil {
		return nil, err
	}
	if format != "" && format != "json" && format != "markdown" {
		return nil, fail("unknown format %q; the formats are: json, markdown", format)
	}
	input["format"] = orDefault(format, "json")
	return c.started(ctx, workflow.Export, input, nil)
}

func (c *call) projectImport(ctx context.Context) (any, error) {
	bundle, err := c.object("bundle")
	if err != nil {
		return nil, err
	}
	items, ok := bundle["items"].([]any)
	if !ok {
		return nil, badParams("bundle.items must be a list of {class, name, attributes} or {class, source}")
	}
	if len(items) > 5000 {
		return nil, fail("a bundle takes at most 5000 items; split it")
	}
	return c.started(ctx, workflow.Import, map[string]any{"bundle": bundle}, nil)
}

func (c *call) workflowFind(context.Context) (any, error) {
	out := []map[string]any{}
	for _, n := range c.snap.WorkflowNames() {
		out = append(out, workflowView(c.snap.Workflows[n]))
	}
	return map[string]any{"workflows": out}, nil
}

func (c *call) workflowDefine(ctx context.Context) (any, error) {
	name, err := c.str("name", true)
	if err != nil {
		return nil, err
	}
	specArg, err := c.object("spec")
	if err != nil {
		return nil, err
	}
	if workflow.IsBuiltin(name) {
		return nil, fail("%s is a built-in workflow and cannot be redefined", name)
	}
	var spec metav1alpha1.WorkflowDefinitionSpec
	raw, _ := json.Marshal(specArg)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, fail("spec: %v", err)
	}
	if spec.SubjectClass != "" && c.snap.Classes[spec.SubjectClass] == nil {
		return nil, fail("spec.subjectClass: unknown class %q (give the Class's name, as zorp.spaceboot)", spec.SubjectClass)
	}
	check := spec
	check.SubjectClass = ""
	wd := &metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if w := catalog.ValidateWorkflow(&metav1alpha1.WorkflowDefinition{ObjectMeta: wd.ObjectMeta, Spec: check}, nil); w.Problem != nil {
		return nil, fail("the workflow is not valid: %s", w.Problem.Message)
	}
	var existing metav1alpha1.WorkflowDefinition
	err = c.s.client.Get(ctx, client.ObjectKey{Name: name}, &existing)
	switch {
	case apierrors.IsNotFound(err):
		err = c.s.client.Create(ctx, wd)
	case err == nil:
		existing.Spec = spec
		err = c.s.client.Update(ctx, &existing)
	}
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return nil, fail("the API server refused the workflow: %s", apiMessage(err))
		}
		return nil, err
	}
	return map[string]any{"defined": name, "prompt": Encode(c.s.opts.NameStyle, "sandbar.workflow."+name)}, nil
}

func (c *call) workflowStart(ctx context.Context) (any, error) {
	name, err := c.str("workflow", true)
	if err != nil {
		return nil, err
	}
	w, ok := c.snap.Workflows[name]
	if !ok || w.Problem != nil {
		return nil, fail("unknown or invalid workflow %q; sandbar_workflow_find lists them", name)
	}
	var subject *metav1alpha1.SubjectRef
	if sub, err := c.object("subject"); err != nil {
		return nil, err
	} else if sub != nil {
		cl, _ := sub["class"].(string)
		n, _ := sub["name"].(string)
		if cl == "" || n == "" {
			return nil, badParams("subject needs class and name")
		}
		subject = &metav1alpha1.SubjectRef{Class: cl, Name: n}
	}
	return c.started(ctx, name, c.args["input"], subject)
}

func (c *call) workflowTransition(ctx context.Context) (any, error) {
	name, err := c.str("transition", true)
	if err != nil {
		return nil, err
	}
	reason, err := c.str("reason", false)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		p, err := c.readTask(ctx, true)
		if err != nil {
			return nil, err
		}
		if workflow.IsBuiltin(p.Spec.Definition) {
			return nil, fail("%s is run by the server; it can only be cancelled", p.Spec.Definition)
		}
		w := c.snap.Workflows[p.Spec.Definition]
		if w == nil {
			return nil, fail("workflow %q no longer exists", p.Spec.Definition)
		}
		if p.Status.Phase == "" {
			workflow.Start(w, &p.Status, c.acct.Namespace+"/"+c.acct.Name, metav1.Now())
		}
		if err := workflow.Transition(w, &p.Status, name, c.acct.Namespace+"/"+c.acct.Name, reason, metav1.Now()); err != nil {
			return nil, fail("%v", err)
		}
		if err := c.s.client.Status().Update(ctx, p); err != nil {
			if apierrors.IsConflict(err) && attempt < 5 {
				continue
			}
			return nil, err
		}
		return c.stateView(p, w), nil
	}
}

func (c *call) processState(ctx context.Context) (any, error) {
	p, err := c.task(ctx)
	if err != nil {
		return nil, err
	}
	return c.stateView(p, c.snap.Workflows[p.Spec.Definition]), nil
}

func (c *call) stateView(p *metav1alpha1.WorkflowProcess, w *catalog.Workflow) map[string]any {
	v := taskView(p)
	next := []string{}
	if w != nil && !workflow.Terminal(&p.Status) {
		for _, t := range w.Spec.Transitions {
			for _, f := range t.From {
				if f == p.Status.State {
					next = append(next, t.Name)
				}
			}
		}
	}
	v["transitions"] = next
	if p.Status.Cancellation != nil {
		v["cancellation"] = p.Status.Cancellation
	}
	return v
}

func (c *call) processHistory(ctx context.Context) (any, error) {
	p, err := c.task(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"taskId": p.Name, "workflow": p.Spec.Definition, "history": nonNil(p.Status.History)}, nil
}

func (c *call) activeProcesses(ctx context.Context) (any, error) {
	wf, err := c.str("workflow", false)
	if err != nil {
		return nil, err
	}
	return c.processes(ctx, func(p *metav1alpha1.WorkflowProcess) bool {
		return !workflow.Terminal(&p.Status) && (wf == "" || p.Spec.Definition == wf)
	}, false)
}

func (c *call) processes(ctx context.Context, keep func(*metav1alpha1.WorkflowProcess) bool, newestFirst bool) (any, error) {
	var list metav1alpha1.WorkflowProcessList
	if err := c.s.client.List(ctx, &list, client.InNamespace(c.acct.Namespace)); err != nil {
		return nil, err
	}
	var items []metav1alpha1.WorkflowProcess
	for i := range list.Items {
		if p := &list.Items[i]; p.Spec.Owner == c.acct.Name && keep(p) {
			items = append(items, *p)
		}
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].CreationTimestamp, items[j].CreationTimestamp
		if newestFirst {
			return b.Before(&a)
		}
		return a.Before(&b)
	})
	out := []map[string]any{}
	for i := range items {
		if len(out) == 100 {
			break
		}
		out = append(out, taskView(&items[i]))
	}
	return map[string]any{"processes": out}, nil
}
