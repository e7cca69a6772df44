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

package verbs

import (
	"context"
	"errors"
	"time"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// The task tools: MCP Tasks for clients that do not speak them, on the same processes.

// maxWait is the longest a call waits for a task (its waitSeconds is at most 60).
const maxWait = 60 * time.Second

type taskArgs struct {
	TaskID string `json:"taskId" jsonschema:"The task id (from the call that started it)."`
}

type taskResultArgs struct {
	taskArgs
	WaitSeconds int64  `json:"waitSeconds,omitempty" jsonschema:"Wait up to this many seconds for the task to end (default 0)."`
	Continue    string `json:"continue,omitempty" jsonschema:"The continue token of a previous page of this task's result (an export's items come in pages), for the next page."`
}

type taskListArgs struct {
	Cursor string `json:"cursor,omitempty" jsonschema:"The nextCursor of a previous call, for the next page."`
}

// Started is the answer of a verb that started a process, to a client that did not
// ask for a task: the task, and how to follow it.
type Started struct {
	TaskID string       `json:"taskId"`
	Task   process.Task `json:"task"`
	// Next are the calls that follow it.
	Next []tool.Next `json:"next"`
	// Progress says why a call with a progress token gets no progress notifications.
	Progress string `json:"progress,omitempty"`
}

// TaskResult is a task's result once it ended (an export's a page at a time), or
// a note that it has not ended yet.
type TaskResult struct {
	Task   process.Task `json:"task"`
	Result any          `json:"result,omitempty" jsonschema:"The job's result, as its workflow makes it."`
	// ApprovedBy are the people who approved a call a call policy held, which then
	// ran as this task.
	ApprovedBy []string `json:"approvedBy,omitempty" jsonschema:"The people who approved the call a call policy held, which then ran as this task."`
	Note       string   `json:"note,omitempty"`
}

// TaskList is a page of an account's tasks.
type TaskList struct {
	Tasks      []process.Task `json:"tasks"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

// ProcessList is a page of processes.
type ProcessList struct {
	Processes []TaskView `json:"processes"`
	Page
}

func (e *Env) taskVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "tasks", Name: "get", Title: "Get a task", ReadOnly: true, Idempotent: true,
			Description: "The status of a task: working, completed, failed or cancelled, with a message and progress."},
			func(ctx context.Context, c *tool.Call, in taskArgs) (TaskView, error) {
				p, err := e.task(ctx, c, in.TaskID)
				if err != nil {
					return TaskView{}, err
				}
				return taskView(p), nil
			}),
		tool.Verb(tool.Spec{Group: "tasks", Name: "result", Title: "Result of a task", ReadOnly: true, Idempotent: true, Waits: maxWait,
			Description: "The result of a task once it ended: {taskId, waitSeconds?, continue?}; waits up to waitSeconds (default 0, at most 60) for it to end. " +
				"An export's items come in pages: pass the continue token of one page for the next."},
			func(ctx context.Context, c *tool.Call, in taskResultArgs) (TaskResult, error) {
				p, err := e.task(ctx, c, in.TaskID)
				if err != nil {
					return TaskResult{}, err
				}
				wait := time.Duration(in.WaitSeconds) * time.Second
				if wait > 0 && !workflow.Terminal(&p.Status) {
					// Progress while it waits, when the call carries a progress token.
					e.Processes.FollowFor(ctx, c.Session, c.ProgressToken, c.Account, p.Name, wait)
				}
				return e.resultPage(ctx, c, e.Processes.WaitFor(ctx, c.Account, p, wait), in.Continue)
			}, tool.Between("waitSeconds", 0, 60)),
		tool.Verb(tool.Spec{Group: "tasks", Name: "list", Title: "List tasks", ReadOnly: true, Idempotent: true,
			Description: "This account's tasks, oldest first, 50 a page: {cursor?}."},
			e.taskList),
		tool.Verb(tool.Spec{Group: "tasks", Name: "cancel", Title: "Cancel a task", Destructive: true,
			Description: "Cancel a task through its workflow's cancellation guard; refused with the reason (already-completed, not-cancellable, no-cancel-transition)."},
			e.taskCancel),
	}
}

// task finds a task of the caller; an unknown one is a domain error.
func (e *Env) task(ctx context.Context, c *tool.Call, id string) (*metav1alpha1.WorkflowProcess, error) {
	p, err := e.Processes.Get(ctx, c.Account, id)
	return p, processError(c, id, err)
}

// freshTask reads a task past the cache: a model that has just moved a process
// reads its state next, and must see the move.
func (e *Env) freshTask(ctx context.Context, c *tool.Call, id string) (*metav1alpha1.WorkflowProcess, error) {
	p, err := e.Processes.GetFresh(ctx, c.Account, id)
	return p, processError(c, id, err)
}

// processError turns the process service's refusals into domain errors; a refusal
// about the task taskID says what to call instead.
func processError(c *tool.Call, taskID string, err error) error {
	var unknown *process.UnknownError
	var refused *workflow.Error
	switch {
	case errors.As(err, &unknown):
		return tool.Fail("%s; %s", unknown.Error(), tool.Instead(c.Next("sandbar.tasks.list", "list this account's tasks", nil)))
	case errors.Is(err, process.ErrBadCursor):
		return tool.BadArgs("argument \"cursor\" is not a cursor this server gave out for this account, or a stale one: " +
			"call again without it to start from the first page")
	case errors.As(err, &refused) && taskID == "":
		return tool.Fail("%s", refused.Message)
	case errors.As(err, &refused):
		instead := c.Next("sandbar.workflow.process-state", "see its state and the transitions it can take", map[string]any{"taskId": taskID})
		if refused.Reason == workflow.AlreadyCompleted {
			instead = c.Next("sandbar.tasks.result", "read how it ended", map[string]any{"taskId": taskID})
		}
		return tool.Fail("%s; %s", refused.Message, tool.Instead(instead))
	}
	return err
}

// resultPage is resultView, or for a result stored in pages (an export's) the page
// that token asks for (the first when empty).
func (e *Env) resultPage(ctx context.Context, c *tool.Call, p *metav1alpha1.WorkflowProcess, token string) (TaskResult, error) {
	st := process.Stored(p)
	if st == nil {
		if token != "" && workflow.Terminal(&p.Status) {
			return TaskResult{}, tool.BadArgs("argument \"continue\": the result of task %s does not come in pages", p.Name)
		}
		return resultView(p)
	}
	page, err := e.Processes.ResultPage(ctx, p, st, token, c.Bounds, func(next string) string {
		return tool.Instead(c.Next("sandbar.tasks.result", "read the next page", map[string]any{"taskId": p.Name, "continue": next}))
	})
	if errors.Is(err, process.ErrBadToken) {
		return TaskResult{}, tool.BadArgs("argument \"continue\" is %s", err)
	}
	if err != nil {
		return TaskResult{}, err
	}
	return TaskResult{Task: process.TaskOf(p), Result: page}, nil
}

// resultView is a task's result once it ended, or its state while it runs.
func resultView(p *metav1alpha1.WorkflowProcess) (TaskResult, error) {
	if !workflow.Terminal(&p.Status) {
		return TaskResult{Task: process.TaskOf(p), Note: "the task has not ended yet"}, nil
	}
	res := process.ResultOf(p)
	if res.IsError {
		return TaskResult{}, tool.Fail("%s", tool.Text(res))
	}
	return TaskResult{Task: process.TaskOf(p), Result: res.StructuredContent, ApprovedBy: process.ApprovedBy(p)}, nil
}

func (e *Env) taskList(ctx context.Context, c *tool.Call, in taskListArgs) (TaskList, error) {
	procs, next, err := e.Processes.List(ctx, c.Account, in.Cursor)
	if err != nil {
		return TaskList{}, processError(c, "", err)
	}
	tasks := []process.Task{}
	for _, p := range procs {
		tasks = append(tasks, process.TaskOf(p))
	}
	return TaskList{Tasks: tasks, NextCursor: next}, nil
}

func (e *Env) taskCancel(ctx context.Context, c *tool.Call, in taskArgs) (TaskView, error) {
	p, err := e.Processes.Cancel(ctx, c.Account, in.TaskID)
	if err != nil {
		return TaskView{}, processError(c, in.TaskID, err)
	}
	return taskView(p), nil
}

// started starts a process and answers for it: the task, for clients that did not
// ask for one, with progress notifications when the call carries a progress token.
func (e *Env) started(ctx context.Context, c *tool.Call, definition string, input any, subject *metav1alpha1.SubjectRef) (Started, error) {
	p, err := e.Processes.Start(ctx, c.Account, definition, input, subject)
	if err != nil {
		return Started{}, err
	}
	t := process.TaskOf(p)
	out := Started{TaskID: t.TaskID, Task: t, Next: processNext(c, p, workflowOf(c.Snap, p))}
	if !e.Processes.Follow(ctx, c.Session, c.ProgressToken, c.Account, p.Name) {
		out.Progress = noProgress(c)
	}
	return out, nil
}

// noProgress says why a call with a progress token gets no progress notifications,
// naming the tool to poll in the call's style.
func noProgress(c *tool.Call) string {
	return "no progress notifications: this account (or the server) already follows as many tasks as it may; poll with " +
		tool.Encode(c.Style, "sandbar.tasks.get")
}

// processList is one page of processes as the listing verbs show them.
func processList(c *tool.Call, procs []*metav1alpha1.WorkflowProcess, in listArgs) (ProcessList, error) {
	views := []TaskView{}
	for _, p := range procs {
		views = append(views, taskView(p))
	}
	items, pg, err := page(c, views, in, nil)
	return ProcessList{Processes: items, Page: pg}, err
}

// workflowOf is the workflow of a process in a snapshot (nil once it is gone).
func workflowOf(snap *catalog.Snapshot, p *metav1alpha1.WorkflowProcess) *catalog.Workflow {
	return snap.Workflows[p.Spec.Definition]
}
