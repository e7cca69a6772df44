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

// Package tasks adapts MCP Tasks onto go-sdk v1.8.0, which has no Tasks support, in
// both forms: revision 2025-11-25's (it declares the tasks capability and each tool's
// execution.taskSupport, turns task-augmented tools/call requests into tasks, and
// serves tasks/get, tasks/result, tasks/list and tasks/cancel), and the extension
// io.modelcontextprotocol/tasks of the stateless revision 2026-07-28 (declared in
// server/discover; a long-running tool answers a client that declared it with a
// task; tasks/get carries the result once the task ends, and the question of a
// process that waits for a transition, which tasks/update answers; tasks/cancel is
// acknowledged). Every task is a WorkflowProcess, handled by the
// process service, so either form reads a task on any replica.
//
// This package is a shim: delete it when the SDK supports Tasks, and register the
// process service with the SDK's own hooks instead. The register of the room
// (package sdkgap) names the tests that fail once it does.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): go-sdk#626 (Tasks) and
// go-sdk#942 (the Tasks extension) would remove this file; go-sdk#1052 and #1261, its
// Params.

// header carries a tools/call's params.task from the HTTP layer, which sees the raw
// request, to the middleware, which does not: the SDK drops params.task when it parses.
const header = "Sandbar-Task"

const relatedTaskKey = "io.modelcontextprotocol/related-task"

// Support values of execution.taskSupport.
const (
	Optional  = "optional"
	Forbidden = "forbidden"
)

// Extension is the Tasks extension of the stateless revision.
const Extension = "io.modelcontextprotocol/tasks"

// resultType is the discriminator of the stateless revision's results: a task is
// "task", every other answer "complete".
const (
	resultTask     = "task"
	resultComplete = "complete"
)

// detailedTask is a task in the extension's form: ttlMs and pollIntervalMs, and
// once it has ended the result the tool call would have returned.
type detailedTask struct {
	mcp.ResultBase
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	Result         *completeResult `json:"result,omitempty"`
	// InputRequests are the questions of a task that is input_required (input.go).
	InputRequests map[string]any `json:"inputRequests,omitempty"`
}

// completeResult is the tool result a task carries once it has ended: a result of
// the stateless revision, so with its resultType "complete" as the tool call
// would have had it.
type completeResult struct {
	toolResult
	ResultType string `json:"resultType"`
}

// ack is the extension's empty acknowledgement (tasks/update, tasks/cancel).
type ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

type updateParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses,omitempty"`
}

type statelessKey struct{}

// isStateless says whether ctx is a request's of the stateless revision (see
// Middleware).
func isStateless(ctx context.Context) bool {
	v, _ := ctx.Value(statelessKey{}).(bool)
	return v
}

// capabilities are the capabilities the client of req declared (in initialize, or
// with every request of the stateless revision), nil for none.
func capabilities(req mcp.Request) *mcp.ClientCapabilities {
	if r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		return r.ClientCapabilities()
	}
	return nil
}

// declaresExtension says whether the client declared the Tasks extension on req
// (its capabilities travel with every request of the stateless revision).
func declaresExtension(req mcp.Request) bool {
	caps := capabilities(req)
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[Extension]
	return ok
}

type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// resultParams are the params of tasks/result; continue (Sandbar's) asks for the
// next page of a result that comes in pages (an export's).
type resultParams struct {
	mcp.ParamsBase
	TaskID   string `json:"taskId"`
	Continue string `json:"continue,omitempty"`
}

type listParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type taskResult struct {
	mcp.ResultBase
	process.Task
}

type listResult struct {
	mcp.ResultBase
	Tasks      []process.Task `json:"tasks"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

type createTaskResult struct {
	mcp.ResultBase
	Task process.Task `json:"task"`
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

// toolWithExecution is a tool with execution.taskSupport, which the SDK's Tool lacks.
type toolWithExecution struct {
	*mcp.Tool
	Execution toolExecution `json:"execution"`
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// Capture copies params.task of a tools/call into a header of the request; any such
// header the client sent itself is dropped. limit is the body limit of the handler
// behind it.
func Capture(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(header)
		r, msg := transport.Peek(r, limit)
		if msg != nil && msg.Method == "tools/call" && len(msg.Params.Task) > 0 && string(msg.Params.Task) != "null" {
			r.Header.Set(header, string(msg.Params.Task))
		}
		next.ServeHTTP(w, r)
	})
}

// Adapter serves Tasks for one SDK server.
type Adapter struct {
	served    *tool.Table
	processes *process.Service
	// bounds bound a tasks/result (0: no bound); resultTool is the served name of
	// the verb that gives a longer one in parts.
	bounds     tool.Bounds
	resultTool string
	// moveTool is the served name of the verb that moves a process, which the
	// answer to a task's question takes the place of (input.go).
	moveTool string
}

// New registers the tasks/* methods on a server; add Middleware to its receiving
// middleware. A tasks/result longer than bounds.Bytes (0: no bound) is cut, and its
// note names resultTool, which gives the whole result in parts; a result stored in
// pages (an export's) is given a page at a time. moveTool is the served name of
// the verb that moves a process: an answer to a task's question (tasks/update)
// needs the right to call it.
func New(server *mcp.Server, served *tool.Table, processes *process.Service, bounds tool.Bounds, resultTool, moveTool string) (*Adapter, error) {
	a := &Adapter{served: served, processes: processes, bounds: bounds, resultTool: resultTool, moveTool: moveTool}
	return a, a.register(server)
}

// support says whether a tool may run as a task: the long-running ones may (clients
// without Tasks get the task id in the result instead).
func (a *Adapter) support(name string) string {
	if info, ok := a.served.Lookup(name); ok && info.LongRunning {
		return Optional
	}
	return Forbidden
}

// Params gives a tasks/* request that came without params (or with null) empty
// ones. The SDK hands such a request of a custom method on with a nil params
// pointer whose methods (GetMeta, the request's ProtocolVersion) panic (go-sdk
// v1.8.0), in a goroutine of the SDK's where nothing recovers it: the process would
// end. With empty params the handlers answer (tasks/list) or refuse what is missing
// (tasks/get: no taskId). It must be the outermost receiving middleware.
func (a *Adapter) Params(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ServerRequest[*taskParams]:
			r.Params = orEmpty(r.Params)
		case *mcp.ServerRequest[*updateParams]:
			r.Params = orEmpty(r.Params)
		case *mcp.ServerRequest[*resultParams]:
			r.Params = orEmpty(r.Params)
		case *mcp.ServerRequest[*listParams]:
			r.Params = orEmpty(r.Params)
		}
		return next(ctx, method, req)
	}
}

func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// Middleware adds the tasks capability and each tool's execution.taskSupport, and
// turns task-augmented tools/call requests into tasks.
func (a *Adapter) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// Custom methods get no token info of their own.
		if acct := caller.Of(req.GetExtra()); acct != nil {
			ctx = caller.WithAccount(ctx, acct)
		}
		if transport.StatelessRequest(req) {
			ctx = context.WithValue(ctx, statelessKey{}, true)
			return a.stateless(ctx, method, req, next)
		}
		// What the adapter changes runs in frames of its own: what stays on the
		// stack while next serves any other request is this small one.
		switch method {
		case "tasks/update", "initialize", "tools/list":
			return a.adapt(ctx, method, req, next)
		case "tools/call":
			if h := req.GetExtra(); h != nil && h.Header != nil {
				if raw := h.Header.Get(header); raw != "" {
					return a.asTask(ctx, method, req, next, raw)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// adapt serves what 2025-11-25's Tasks change of initialize and tools/list (the
// capability, each tool's execution.taskSupport), and refuses tasks/update.
func (a *Adapter) adapt(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	switch method {
	case "tasks/update":
		// The extension's; 2025-11-25's Tasks have no such method.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
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
			out.Tools = append(out.Tools, toolWithExecution{Tool: t, Execution: toolExecution{TaskSupport: a.support(t.Name)}})
		}
		return out, nil
	}
	return next(ctx, method, req)
}

// asTask serves a task-augmented tools/call (raw is its params.task): the task the
// tool started, or the tool's answer when it failed before it started one.
func (a *Adapter) asTask(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler, raw string) (mcp.Result, error) {
	name := req.(*mcp.CallToolRequest).Params.Name
	if a.support(name) != Optional {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("tool %q does not run as a task (execution.taskSupport is forbidden)", name)}
	}
	var task struct {
		TTL *int64 `json:"ttl"`
	}
	_ = transport.Unmarshal([]byte(raw), &task)
	r := &process.Request{TTLMillis: task.TTL}
	res, err := next(process.WithRequest(ctx, r), method, req)
	if err != nil || r.Started == nil {
		return res, err // the tool failed before it started a process
	}
	return &createTaskResult{Task: process.TaskOf(r.Started)}, nil
}

// stateless serves a request of the stateless revision: the extension's form of
// Tasks, and nothing of 2025-11-25's (no capability of that name, no
// execution.taskSupport, no params.task).
func (a *Adapter) stateless(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	switch method {
	case "server/discover":
		return discover(ctx, method, req, next)
	case "tools/call":
		if a.support(req.(*mcp.CallToolRequest).Params.Name) == Optional && declaresExtension(req) {
			return a.statelessTask(ctx, method, req, next)
		}
		// Else the tool answers in full, as to any client without Tasks.
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !declaresExtension(req) {
			return nil, missingExtension(method)
		}
		ctx = context.WithValue(ctx, elicitsKey{}, declaresElicitation(req))
	case "tasks/list", "tasks/result":
		// Not part of the extension: tasks/get carries a task's result once it has
		// ended. (The SDK says "method not found" whatever the message.)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
	}
	return next(ctx, method, req)
}

// discover is the server/discover of next with the Tasks extension among the
// capabilities.
func discover(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	if d, ok := res.(*mcp.DiscoverResult); ok && d.Capabilities != nil {
		caps := *d.Capabilities
		caps.Extensions = maps.Clone(caps.Extensions)
		caps.AddExtension(Extension, map[string]any{})
		d.Capabilities = &caps
	}
	return res, nil
}

// statelessTask serves a tools/call of a tool that runs as a task to a client of
// the extension: the task, as tools/call answers it.
func (a *Adapter) statelessTask(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	r := &process.Request{}
	res, err := next(process.WithRequest(ctx, r), method, req)
	if err != nil || r.Started == nil {
		return res, err // the tool failed before it started a process
	}
	t, _ := a.detailed(ctx, r.Started, false) // without the result: no error
	return t, nil
}

// missingExtension refuses a method of the extension to a request that did not
// declare it: -32021 (HTTP 400), with the capability the request lacks, as the
// stateless revision has it for a missing client capability.
func missingExtension(method string) error {
	// A map, not mcp.ClientCapabilities, which always writes roots.
	data, err := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{Extension: map[string]any{}}}})
	if err != nil {
		return err
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: method + " is a method of the Tasks extension: declare " + Extension +
			" in the request's _meta clientCapabilities.extensions"}
}

// detailed is a process as the extension's task: as tools/call answers it (full
// false: resultType task) or as tasks/get does (the result once it has ended). A
// tool result with isError is a completed task, as the extension has it: a
// process that failed or was refused answers completed, with the result that
// says why; only a cancelled one is cancelled.
func (a *Adapter) detailed(ctx context.Context, proc *metav1alpha1.WorkflowProcess, full bool) (*detailedTask, error) {
	t := process.TaskOf(proc)
	out := &detailedTask{ResultType: resultTask, TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt, TTLMs: t.TTL, PollIntervalMs: t.PollInterval}
	if !full {
		return out, nil
	}
	out.ResultType = resultComplete
	if t.Status == process.Failed {
		out.Status = process.Completed
	}
	if out.Status == process.Completed {
		res, err := a.result(ctx, proc, "")
		if err != nil {
			return nil, err
		}
		out.Result = &completeResult{ResultType: resultComplete,
			toolResult: toolResult{ResultBase: mcp.ResultBase{Meta: res.Meta}, Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}}
	}
	return out, nil
}

// result is what the tool call that started proc would have returned, cut to the
// server's bound on a result. A result stored in pages (an export's) is the page
// token asks for (the first when empty), within the bounds, whose note says how to
// ask for the next.
func (a *Adapter) result(ctx context.Context, proc *metav1alpha1.WorkflowProcess, token string) (*mcp.CallToolResult, error) {
	result := process.ResultOf(proc)
	if st := process.Stored(proc); st != nil {
		page, err := a.processes.ResultPage(ctx, proc, st, token, a.bounds, func(next string) string {
			return fmt.Sprintf("Call %s with {\"taskId\": %q, \"continue\": %q} for the next page "+
				"(on a session, tasks/result with these params gives it too)", a.resultTool, proc.Name, next)
		})
		if errors.Is(err, process.ErrBadToken) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params.continue is " + err.Error()}
		}
		if err != nil {
			return nil, rpcError(err)
		}
		result = tool.JSONResult(page)
	} else if token != "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("params.continue: the result of task %s does not come in pages", proc.Name)}
	}
	return tool.Cut(result, tool.Bounds{Bytes: a.bounds.Bytes, Scrub: redact.String}, func(shown, total int) string {
		return fmt.Sprintf("[result cut: the first %d of %d bytes (the server's bound on a result). %s with {\"taskId\": %q} "+
			"gives the whole result, in parts]", shown, total, a.resultTool, proc.Name)
	}), nil
}

// rpcError maps the process service's errors to the protocol: an unknown task or
// cursor is -32602, a refused cancellation -32602 with the guard's reason, what the
// account may not do -32600 with what was refused.
func rpcError(err error) error {
	var unknown *process.UnknownError
	var refused *workflow.Error
	var busy *process.TooManyFollowersError
	switch {
	case errors.As(err, &busy):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: busy.Error()}
	case errors.As(err, &unknown):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: unknown.Error()}
	case errors.Is(err, process.ErrBadCursor):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	case errors.As(err, &refused):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: refused.Message,
			Data: json.RawMessage(fmt.Sprintf(`{"reason":%q}`, refused.Reason))}
	}
	return authorize.RPCError(err)
}

// get serves tasks/get.
func (a *Adapter) get(ctx context.Context, in *taskParams) (mcp.Result, error) {
	proc, err := a.processes.Get(ctx, caller.FromContext(ctx), in.TaskID)
	if err != nil {
		return nil, rpcError(err)
	}
	if isStateless(ctx) {
		t, err := a.detailed(ctx, proc, true)
		if err != nil {
			return nil, err
		}
		if elicits(ctx) {
			a.asking(t, proc)
		}
		return t, nil
	}
	return &taskResult{Task: process.TaskOf(proc)}, nil
}

// GetRequest is the request of a session's tasks/get, with params (a JSON object),
// as the SDK hands it to the receiving middleware: nil when the params do not
// decode as the SDK decodes them (or there are none), and the SDK is left to
// refuse them.
func GetRequest(ss *mcp.ServerSession, params json.RawMessage, extra *mcp.RequestExtra) mcp.Request {
	in := &taskParams{}
	if len(params) == 0 || transport.Unmarshal(params, in) != nil {
		return nil
	}
	return &mcp.ServerRequest[*taskParams]{Session: ss, Params: in, Extra: extra}
}

// Get serves a request of GetRequest behind the receiving middleware, as the
// handler the SDK calls for tasks/get does.
func (a *Adapter) Get(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
	return a.get(ctx, req.(*mcp.ServerRequest[*taskParams]).Params)
}

func (a *Adapter) register(server *mcp.Server) error {
	p := a.processes
	// tasks/get and tasks/cancel answer in the form of the request's revision; the
	// Middleware marks a request of the stateless revision on its context.
	if err := mcp.AddReceivingCustomMethod(server, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, in *taskParams) (mcp.Result, error) {
		return a.get(ctx, in)
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/update", func(ctx context.Context, _ *mcp.ServerSession, in *updateParams) (*ack, error) {
		return a.update(ctx, in)
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/result", func(ctx context.Context, _ *mcp.ServerSession, in *resultParams) (*toolResult, error) {
		acct := caller.FromContext(ctx)
		if acct == nil {
			return nil, rpcError(&process.UnknownError{ID: in.TaskID})
		}
		proc, err := p.Wait(ctx, acct, in.TaskID)
		if err != nil {
			return nil, rpcError(err)
		}
		res, err := a.result(ctx, proc, in.Continue)
		if err != nil {
			return nil, err
		}
		// The receiving middleware redacts it, as every answer.
		out := &toolResult{Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}
		out.Meta = map[string]any{relatedTaskKey: map[string]any{"taskId": proc.Name}}
		return out, nil
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/list", func(ctx context.Context, _ *mcp.ServerSession, in *listParams) (*listResult, error) {
		acct := caller.FromContext(ctx)
		if acct == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no account"}
		}
		procs, next, err := p.List(ctx, acct, in.Cursor)
		if err != nil {
			return nil, rpcError(err)
		}
		out := &listResult{Tasks: []process.Task{}, NextCursor: next}
		for _, proc := range procs {
			out.Tasks = append(out.Tasks, process.TaskOf(proc))
		}
		return out, nil
	}); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(server, "tasks/cancel", func(ctx context.Context, _ *mcp.ServerSession, in *taskParams) (mcp.Result, error) {
		acct := caller.FromContext(ctx)
		if acct == nil {
			return nil, rpcError(&process.UnknownError{ID: in.TaskID})
		}
		proc, err := p.Cancel(ctx, acct, in.TaskID)
		var refused *workflow.Error
		if isStateless(ctx) && errors.As(err, &refused) {
			// The extension's cancellation is a request the server may decline: a task
			// that has ended stays as it ended, and the request is acknowledged.
			return &ack{ResultType: resultComplete}, nil
		}
		if err != nil {
			return nil, rpcError(err)
		}
		if isStateless(ctx) {
			return &ack{ResultType: resultComplete}, nil
		}
		return &taskResult{Task: process.TaskOf(proc)}, nil
	})
}
