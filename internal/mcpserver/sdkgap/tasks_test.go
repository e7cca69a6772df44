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

package sdkgap

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const tasksPath = "internal/mcpserver/sdkgap/tasks"

// Tasks of revision 2025-11-25: the SDK declares no tasks capability, gives a tool
// no execution.taskSupport, and knows none of the tasks/* methods.
func TestCanarySDKHasNoTasks(t *testing.T) {
	r := connect(t, newServer(nil))

	caps := members(t, members(t, r.init)["capabilities"])
	if _, ok := caps["tasks"]; ok {
		caughtUp(t, "declares the tasks capability in initialize", "tasks.Adapter's capability", tasksPath)
	}
	if jsonNames(reflect.TypeFor[mcp.ServerCapabilities]())["tasks"] {
		caughtUp(t, "has ServerCapabilities.Tasks", "tasks.Adapter's capability", tasksPath)
	}
	if jsonNames(reflect.TypeFor[mcp.Tool]())["execution"] {
		caughtUp(t, "has Tool.Execution (execution.taskSupport)", "tasks.Adapter's toolWithExecution", tasksPath)
	}
	list, rpcErr := r.call("tools/list", `{}`)
	if rpcErr != nil {
		t.Fatalf("tools/list: %v", rpcErr)
	}
	var tools struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(list, &tools); err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools/list answered %s (%v)", list, err)
	}
	if _, ok := tools.Tools[0]["execution"]; ok {
		caughtUp(t, "lists a tool's execution.taskSupport", "tasks.Adapter's toolWithExecution", tasksPath)
	}
	for _, method := range []string{"tasks/get", "tasks/list", "tasks/result", "tasks/cancel"} {
		_, rpcErr := r.call(method, `{"taskId":"t-1"}`)
		if rpcErr == nil || rpcErr.Code != jsonrpc.CodeMethodNotFound {
			caughtUp(t, "serves "+method+" (answered "+describe(rpcErr)+")", "tasks.Adapter and its tasks/* methods", tasksPath)
		}
	}
}

// The Tasks extension of the stateless revision (io.modelcontextprotocol/tasks): the
// SDK's stateless handler does not declare it in server/discover, and knows no
// tasks/get, even for a client that declared the extension.
func TestCanarySDKHasNoTasksExtension(t *testing.T) {
	const extension = "io.modelcontextprotocol/tasks"
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(nil) }, &mcp.StreamableHTTPOptions{Stateless: true})

	rec := post(h, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":`+statelessParams(extension)+`}`, statelessHeader("server/discover"))
	res, rpcErr := answerOf(t, rec.Body.Bytes())
	if rpcErr != nil {
		t.Fatalf("server/discover: %d %v", rec.Code, rpcErr)
	}
	var discover struct {
		Capabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &discover); err != nil {
		t.Fatalf("server/discover answered %s: %v", res, err)
	}
	if _, ok := discover.Capabilities.Extensions[extension]; ok {
		caughtUp(t, "declares "+extension+" in server/discover", "tasks.Adapter's discover", tasksPath)
	}

	params := strings.Replace(statelessParams(extension), "{", `{"taskId":"t-1",`, 1)
	rec = post(h, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":`+params+`}`, statelessHeader("tasks/get"))
	if _, rpcErr := answerOf(t, rec.Body.Bytes()); rpcErr == nil || rpcErr.Code != jsonrpc.CodeMethodNotFound {
		caughtUp(t, "serves the extension's tasks/get (answered "+describe(rpcErr)+")", "tasks.Adapter's stateless form", tasksPath)
	}
}

// params.task of a task-augmented tools/call: the SDK's CallToolParams has no such
// member, and the params the middleware get, as the handler does, have lost it.
// transport.Peek reads it before the SDK parses, and tasks.Capture hands it on in a
// header.
func TestCanarySDKDropsParamsTask(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[mcp.CallToolParams](), reflect.TypeFor[mcp.CallToolParamsRaw]()} {
		if jsonNames(typ)["task"] {
			caughtUp(t, "has "+typ.Name()+".Task", "tasks.Capture and transport.Peek's Params.Task", tasksPath+", internal/mcpserver/sdkgap/transport/capture.go")
		}
	}
	s := newServer(nil)
	var mu sync.Mutex
	var seen []byte
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				b, _ := json.Marshal(req.GetParams())
				mu.Lock()
				seen = b
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	r := connect(t, s)
	if _, rpcErr := r.call("tools/call", `{"name":"long","arguments":{},"task":{"ttl":60000}}`); rpcErr != nil {
		t.Fatalf("tools/call: %v", rpcErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen == nil {
		t.Fatal("the middleware saw no tools/call")
	}
	if strings.Contains(string(seen), `"task"`) {
		caughtUp(t, "hands params.task to the middleware ("+string(seen)+")", "tasks.Capture and transport.Peek's Params.Task",
			tasksPath+", internal/mcpserver/sdkgap/transport/capture.go")
	}
}

// A request of a custom method without params: the SDK hands the middleware a
// typed nil params pointer, whose GetMeta panics in a goroutine of the SDK's.
// tasks.Adapter.Params gives such a request empty params.
func TestCanarySDKHandsCustomMethodsNilParams(t *testing.T) {
	type params struct {
		mcp.ParamsBase
		TaskID string `json:"taskId"`
	}
	type result struct{ mcp.ResultBase }
	s := newServer(nil)
	if err := mcp.AddReceivingCustomMethod(s, "canary/get", func(context.Context, *mcp.ServerSession, *params) (*result, error) {
		return &result{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	nilParams, seen := false, false
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "canary/get" {
				p := req.GetParams()
				mu.Lock()
				seen = true
				nilParams = p != nil && reflect.ValueOf(p).Kind() == reflect.Pointer && reflect.ValueOf(p).IsNil()
				mu.Unlock()
				if nilParams {
					return &result{}, nil // as tasks.Adapter.Params would, without the panic
				}
			}
			return next(ctx, method, req)
		}
	})
	r := connect(t, s)
	_, rpcErr := r.call("canary/get", "")
	mu.Lock()
	defer mu.Unlock()
	if !seen {
		caughtUp(t, "refuses a custom method's request without params before the middleware ("+describe(rpcErr)+")",
			"tasks.Adapter.Params", tasksPath)
		return
	}
	if !nilParams {
		caughtUp(t, "hands a custom method's request without params non-nil params", "tasks.Adapter.Params", tasksPath)
	}
}

// notifications/tasks/status: the SDK sends only the notifications it knows, and a
// session has no method to send another. The process service tells the session
// that started a task of its changes by notifications/message instead.
// https://github.com/modelcontextprotocol/go-sdk/issues/745 asks for one.
func TestCanarySDKSendsNoCustomNotification(t *testing.T) {
	for m := range reflect.TypeFor[*mcp.ServerSession]().Methods() {
		if !strings.Contains(m.Name, "Notif") {
			continue
		}
		for i := range m.Type.NumIn() {
			if m.Type.In(i).Kind() == reflect.String {
				t.Errorf("go-sdk now sends a notification of any method (ServerSession.%s): send notifications/tasks/status "+
					"with it from the process service's announcer (internal/mcpserver/process/announce.go), and from tasks.Adapter's forms", m.Name)
			}
		}
	}
}

// describe is an error as a canary's message shows it.
func describe(err *jsonrpc.Error) string {
	if err == nil {
		return "a result"
	}
	b, _ := json.Marshal(err)
	return string(b)
}
