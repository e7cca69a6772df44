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
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// Tasks (MCP revision 2025-11-25). Every task is a WorkflowProcess in the caller's
// namespace, owned by the caller's ServiceAccount; the task id is the process's
// name, 130 random bits, so that ids cannot be guessed, and another account's id
// reads as unknown.

// taskHeader carries a tools/call's params.task from the HTTP layer, which sees the
// raw request, to the tool, which does not: the SDK drops params.task when it parses.
const taskHeader = "Sandbar-Task"

const (
	taskPollInterval = 1000 // ms
	// followFor bounds how long progress notifications follow one process.
	followFor      = time.Hour
	relatedTaskKey = "io.modelcontextprotocol/related-task"
)

// Task statuses.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// Task is the wire form of a task.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type taskResult struct {
	mcp.ResultBase
	Task
}

type taskListResult struct {
	mcp.ResultBase
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

type createTaskResult struct {
	mcp.ResultBase
	Task Task `json:"task"`
}

// toolResult is a tools/call result of any shape, for tasks/result.
type toolResult struct {
	mcp.ResultBase
	Content           []mcp.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
}

type initializeResult struct {
	mcp.ResultBase
	Capabilities    map[string]any      `json:"capabilities"`
	Instructions    string              `json:"instructions,omitempty"`
	ProtocolVersion string              `json:"protocolVersion"`
	ServerInfo      *mcp.Implementation `json:"serverInfo"`
}

type toolListResult struct {
	mcp.ResultBase
	Tools      []toolWithExecution `json:"tools"`
	NextCursor string              `json:"nextCursor,omitempty"`
}

// toolWithExecution is a tool with execution.taskSupport, which go-sdk v1.8.0's Tool
// does not have.
type toolWithExecution struct {
	*mcp.Tool
	Execution toolExecution `json:"execution"`
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// captureTask copies params.task of a tools/call into a header of the request; any
// such header the client sent itself is dropped.
func captureTask(next http.Handler, limit int64) http.Handler {
	if limit <= 0 {
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(taskHeader)
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err == nil && int64(len(body)) <= limit {
				var msg struct {
					Method string `json:"method"`
					Params struct {
						Task json.RawMessage `json:"task"`
					} `json:"params"`
				}
				if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" && len(msg.Params.Task) > 0 && string(msg.Params.Task) != "null" {
					r.Header.Set(taskHeader, string(msg.Params.Task))
				}
			}
			// The SDK reads the body again, and refuses one over its limit.
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		}
		next.ServeHTTP(w, r)
	})
}

// taskSupport says which tools may run as tasks: the long-running ones
// (optional: clients without Tasks get the task id in the result instead).
func (s *Server) taskSupport(name string) string {
	s.mu.Lock()
	st, ok := s.served[name]
	s.mu.Unlock()
	if ok && st.longRunning {
		return "optional"
	}
	return "forbidden"
}

// tasksMiddleware adds the tasks capability and each tool's execution.taskSupport,
// and turns task-augmented tools/call requests into tasks.
func (s *Server) tasksMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if acct := accountOf(req.GetExtra()); acct != nil {
			ctx = context.WithValue(ctx, accountKey{}, acct)
		}
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			init := res.(*mcp.InitializeResult)
			caps := map[string]any{}
			b, _ := json.Marshal(init.Capabilities)
			_ = json.Unmarshal(b, &caps)
			caps["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
				"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
			out := &initializeResult{Capabilities: caps, Instructions: init.Instructions, ProtocolVersion: init.ProtocolVersion, ServerInfo: init.ServerInfo}
			out.Meta = init.Meta
			return out, nil
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			list := res.(*mcp.ListToolsResult)
			out := &toolListResult{Tools: make([]toolWithExecution, 0, len(list.Tools)), NextCursor: list.NextCursor}
			for _, t := range list.Tools {
				out.Tools = append(out.Tools, toolWithExecution{Tool: t, Execution: toolExecution{TaskSupport: s.taskSupport(t.Name)}})
			}
			return out, nil
		case "tools/call":
			call := req.(*mcp.CallToolRequest)
			raw := ""
			if h := req.GetExtra(); h != nil && h.Header != nil {
				raw = h.Header.Get(taskHeader)
			}
			if raw == "" {
				break
			}
			if s.taskSupport(call.Params.Name) != "optional" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
					Message: fmt.Sprintf("tool %q does not run as a task (execution.taskSupport is forbidden)", call.Params.Name)}
			}
			var task struct {
				TTL *int64 `json:"ttl"`
			}
			_ = json.Unmarshal([]byte(raw), &task)
			ctx = context.WithValue(ctx, taskRequestKey{}, &taskRequest{ttlMs: task.TTL})
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			tr, _ := ctx.Value(taskRequestKey{}).(*taskRequest)
			if tr == nil || tr.process == nil {
				return res, nil // the tool failed before it started a process
			}
			return &createTaskResult{Task: taskOf(tr.process)}, nil
		}
		return next(ctx, method, req)
	}
}

type taskRequestKey struct{}

// taskRequest is a task-augmented call in progress: its ttl, and the process the
// tool started.
type taskRequest struct {
	ttlMs   *int64
	process *metav1alpha1.WorkflowProcess
}

// newTaskID is an unguessable name for a process.
func newTaskID() string {
	b := make([]byte, 17)
	_, _ = rand.Read(b)
	return "task-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// startProcess creates the WorkflowProcess of a task in the caller's namespace.
func (c *call) startProcess(ctx context.Context, definition string, input any, subject *metav1alpha1.SubjectRef) (*metav1alpha1.WorkflowProcess, error) {
	p := &metav1alpha1.WorkflowProcess{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.acct.Namespace, Name: newTaskID()},
		Spec:       metav1alpha1.WorkflowProcessSpec{Definition: definition, Owner: c.acct.Name, Subject: subject},
	}
	if input != nil {
		raw, err := json.Marshal(input)
		if err != nil {
			return nil, err
		}
		p.Spec.Input = &apiextensionsv1.JSON{Raw: raw}
	}
	tr, _ := ctx.Value(taskRequestKey{}).(*taskRequest)
	if tr != nil && tr.ttlMs != nil {
		secs := (*tr.ttlMs + 999) / 1000
		p.Spec.TTLSecondsAfterFinished = &secs
	}
	if err := c.s.client.Create(ctx, p); err != nil {
		return nil, err
	}
	if tr != nil {
		tr.process = p
	}
	c.s.follow(c, p)
	return p, nil
}

// taskStarted is what a long-running tool answers to a client that did not ask
// for a task: the task id, to be followed with the tasks tools.
func taskStarted(p *metav1alpha1.WorkflowProcess) map[string]any {
	t := taskOf(p)
	return map[string]any{"taskId": t.TaskID, "task": t,
		"next": "follow it with sandbar_tasks_get, wait for its result with sandbar_tasks_result, stop it with sandbar_tasks_cancel"}
}

func taskStatus(p *metav1alpha1.WorkflowProcess) string {
	switch p.Status.Phase {
	case metav1alpha1.PhaseSucceeded:
		return taskCompleted
	case metav1alpha1.PhaseFailed:
		return taskFailed
	case metav1alpha1.PhaseCancelled:
		return taskCancelled
	}
	return taskWorking
}

func taskOf(p *metav1alpha1.WorkflowProcess) Task {
	created := p.CreationTimestamp.Time
	if created.IsZero() {
		created = time.Now()
	}
	updated := created
	for _, h := range p.Status.History {
		if h.Time.After(updated) {
			updated = h.Time.Time
		}
	}
	msg := p.Status.StatusMessage
	if pr := p.Status.Progress; pr != nil && taskStatus(p) == taskWorking && pr.Message != "" {
		msg = pr.Message
	}
	var ttl *int64
	if s := p.Spec.TTLSecondsAfterFinished; s != nil {
		ms := *s * 1000
		ttl = &ms
	}
	return Task{
		TaskID: p.Name, Status: taskStatus(p), StatusMessage: msg,
		CreatedAt: created.UTC().Format(time.RFC3339), LastUpdatedAt: updated.UTC().Format(time.RFC3339),
		TTL: ttl, PollInterval: taskPollInterval,
	}
}

// getTask finds a task of the caller: from the cache, or from the API server when
// the cache has not seen it yet. Another account's task is unknown.
func (s *Server) getTask(ctx context.Context, acct *catalog.Account, id string) (*metav1alpha1.WorkflowProcess, error) {
	return s.readTask(ctx, acct, id, false)
}

// readTask is getTask; fresh reads from the API server, for read-modify-write.
func (s *Server) readTask(ctx context.Context, acct *catalog.Account, id string, fresh bool) (*metav1alpha1.WorkflowProcess, error) {
	unknown := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown task %q", id)}
	if acct == nil || !strings.HasPrefix(id, "task-") {
		return nil, unknown
	}
	var p metav1alpha1.WorkflowProcess
	key := client.ObjectKey{Namespace: acct.Namespace, Name: id}
	var err error
	if fresh && s.apiReader != nil {
		err = s.apiReader.Get(ctx, key, &p)
	} else {
		err = s.client.Get(ctx, key, &p)
	}
	if apierrors.IsNotFound(err) && s.apiReader != nil && !fresh {
		err = s.apiReader.Get(ctx, key, &p)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, unknown
		}
		return nil, err
	}
	if p.Spec.Owner != acct.Name {
		return nil, unknown
	}
	return &p, nil
}

func (s *Server) registerTaskMethods() error {
	acct := func(ctx context.Context) *catalog.Account {
		a, _ := ctx.Value(accountKey{}).(*catalog.Account)
		return a
	}
	if err := mcp.AddReceivingCustomMethod(s.mcp, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
		proc, err := s.getTask(ctx, acct(ctx), p.TaskID)
		if err != nil {
			return nil, err
		}
		return &taskResult{Task: taskOf(proc)}, nil
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(s.mcp, "tasks/result", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*toolResult, error) {
		proc, err := s.waitTask(ctx, acct(ctx), p.TaskID)
		if err != nil {
			return nil, err
		}
		res := resultOf(proc)
		out := &toolResult{Content: res.Content, StructuredContent: redactValue(res.StructuredContent), IsError: res.IsError}
		out.Content = redactContents(out.Content)
		out.Meta = map[string]any{relatedTaskKey: map[string]any{"taskId": proc.Name}}
		return out, nil
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(s.mcp, "tasks/list", func(ctx context.Context, _ *mcp.ServerSession, p *taskListParams) (*taskListResult, error) {
		tasks, next, err := s.listTasks(ctx, acct(ctx), p.Cursor)
		if err != nil {
			return nil, err
		}
		return &taskListResult{Tasks: tasks, NextCursor: next}, nil
	}); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(s.mcp, "tasks/cancel", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
		proc, err := s.cancelTask(ctx, acct(ctx), p.TaskID)
		if err != nil {
			return nil, err
		}
		return &taskResult{Task: taskOf(proc)}, nil
	})
}

// resultOf is what the tool call that started a process would have returned, once
// the process has ended.
func resultOf(p *metav1alpha1.WorkflowProcess) *mcp.CallToolResult {
	var structured any = map[string]any{}
	if p.Status.Result != nil {
		_ = json.Unmarshal(p.Status.Result.Raw, &structured)
	}
	if _, ok := structured.(map[string]any); !ok {
		structured = map[string]any{"result": structured}
	}
	switch taskStatus(p) {
	case taskCompleted:
		res := jsonResult(structured)
		return res
	case taskWorking:
		return errorResult("the task is still working: " + p.Status.StatusMessage)
	}
	return errorResult(fmt.Sprintf("the task %s: %s", taskStatus(p), p.Status.StatusMessage))
}

const taskPageSize = 50

func (s *Server) listTasks(ctx context.Context, acct *catalog.Account, cursor string) ([]Task, string, error) {
	if acct == nil {
		return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no account"}
	}
	var list metav1alpha1.WorkflowProcessList
	if err := s.client.List(ctx, &list, client.InNamespace(acct.Namespace)); err != nil {
		return nil, "", err
	}
	var mine []*metav1alpha1.WorkflowProcess
	for i := range list.Items {
		if list.Items[i].Spec.Owner == acct.Name {
			mine = append(mine, &list.Items[i])
		}
	}
	sort.Slice(mine, func(i, j int) bool {
		a, b := mine[i].CreationTimestamp, mine[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return mine[i].Name < mine[j].Name
	})
	start := 0
	if cursor != "" {
		start = -1
		for i, p := range mine {
			if p.Name == cursor {
				start = i + 1
			}
		}
		if start < 0 {
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
	}
	tasks := []Task{}
	next := ""
	for i := start; i < len(mine); i++ {
		if len(tasks) == taskPageSize {
			next = mine[i-1].Name
			break
		}
		tasks = append(tasks, taskOf(mine[i]))
	}
	return tasks, next, nil
}

// cancelTask cancels through the workflow's cancellation guard, at once: the answer
// is the task, already cancelled, or an error with the guard's reason.
func (s *Server) cancelTask(ctx context.Context, acct *catalog.Account, id string) (*metav1alpha1.WorkflowProcess, error) {
	for attempt := 0; ; attempt++ {
		p, err := s.readTask(ctx, acct, id, true)
		if err != nil {
			return nil, err
		}
		if err := s.cancelProcess(ctx, p, acct.Namespace+"/"+acct.Name, "cancelled by "+acct.Name); err != nil {
			if apierrors.IsConflict(err) && attempt < 5 {
				continue
			}
			if we, ok := err.(*workflow.Error); ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: we.Message,
					Data: json.RawMessage(fmt.Sprintf(`{"reason":%q}`, we.Reason))}
			}
			return nil, err
		}
		return p, nil
	}
}

// cancelProcess applies the cancellation guard and writes the outcome into status.
func (s *Server) cancelProcess(ctx context.Context, p *metav1alpha1.WorkflowProcess, actor, reason string) error {
	w := s.store.Load().Workflows[p.Spec.Definition]
	if w == nil {
		return &workflow.Error{Reason: "unknown-definition", Message: fmt.Sprintf("workflow %q does not exist", p.Spec.Definition)}
	}
	if p.Status.Phase == "" {
		workflow.Start(w, &p.Status, actor, metav1.Now())
	}
	if err := workflow.Cancel(w, &p.Status, actor, reason, metav1.Now()); err != nil {
		return err
	}
	p.Status.Cancellation = &metav1alpha1.CancellationStatus{Accepted: true, Message: reason}
	return s.client.Status().Update(ctx, p)
}

// processEvents wakes whoever waits on a process (tasks/result, progress) when the
// informer sees it change.
type processEvents struct {
	mu      sync.Mutex
	waiters map[string][]chan struct{}
}

func (e *processEvents) wait(key string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := make(chan struct{})
	e.waiters[key] = append(e.waiters[key], ch)
	return ch
}

// forget drops a waiter that stopped waiting before its process changed.
func (e *processEvents) forget(key string, ch chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	list := e.waiters[key]
	for i, c := range list {
		if c == ch {
			e.waiters[key] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(e.waiters[key]) == 0 {
		delete(e.waiters, key)
	}
}

func (e *processEvents) notify(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, ok := o.(client.Object)
	if !ok {
		return
	}
	key := m.GetNamespace() + "/" + m.GetName()
	e.mu.Lock()
	chans := e.waiters[key]
	delete(e.waiters, key)
	e.mu.Unlock()
	for _, ch := range chans {
		close(ch)
	}
}

// watchProcesses starts waking waiters on process changes.
func (s *Server) watchProcesses(ctx context.Context) error {
	inf, err := s.informers.GetInformer(ctx, &metav1alpha1.WorkflowProcess{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    s.events.notify,
		UpdateFunc: func(_, o any) { s.events.notify(o) },
		DeleteFunc: s.events.notify,
	})
	return err
}

// waitTask blocks until a task ends (or the request is cancelled).
func (s *Server) waitTask(ctx context.Context, acct *catalog.Account, id string) (*metav1alpha1.WorkflowProcess, error) {
	key := acct.Namespace + "/" + id
	for {
		changed := s.events.wait(key)
		p, err := s.getTask(ctx, acct, id)
		if err != nil || workflow.Terminal(&p.Status) {
			s.events.forget(key, changed)
			return p, err
		}
		select {
		case <-ctx.Done():
			s.events.forget(key, changed)
			return nil, ctx.Err()
		case <-changed:
		case <-time.After(30 * time.Second): // a safety net, should an event be missed
			s.events.forget(key, changed)
		}
	}
}

// follow sends notifications/progress for a call that carries a progress token,
// until its process ends or the session closes.
func (s *Server) follow(c *call, p *metav1alpha1.WorkflowProcess) {
	if c.session == nil || c.progressToken == nil {
		return
	}
	session, token, acct, id := c.session, c.progressToken, c.acct, p.Name
	key := acct.Namespace + "/" + id
	go func() {
		// Not the request's context: the request has been answered, and its stream
		// is closed; the notifications go on the session's standalone stream. A
		// process that runs for longer than followFor is followed no longer.
		ctx, cancel := context.WithTimeout(context.Background(), followFor)
		defer cancel()
		last := ""
		for {
			changed := s.events.wait(key)
			cur, err := s.getTask(ctx, acct, id)
			if err != nil {
				s.events.forget(key, changed)
				return
			}
			params := &mcp.ProgressNotificationParams{ProgressToken: token, Message: taskOf(cur).StatusMessage}
			if pr := cur.Status.Progress; pr != nil {
				params.Progress, params.Total = float64(pr.Done), float64(pr.Total)
			}
			if sent := fmt.Sprintf("%v/%v/%s", params.Progress, params.Total, params.Message); sent != last {
				last = sent
				if err := session.NotifyProgress(ctx, params); err != nil {
					s.events.forget(key, changed)
					return
				}
			}
			if workflow.Terminal(&cur.Status) {
				s.events.forget(key, changed)
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				s.events.forget(key, changed)
				return
			case <-time.After(30 * time.Second):
				s.events.forget(key, changed)
			}
		}
	}()
}
