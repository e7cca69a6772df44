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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// rawSession speaks JSON-RPC over Streamable HTTP by hand, for the tasks/* methods
// that the Go SDK's client does not send.
type rawSession struct {
	t     testing.TB
	url   string
	token string
	sid   string
	id    atomic.Int64
	// init is the initialize result.
	init json.RawMessage
}

type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func newRawSession(t testing.TB, url, token string) *rawSession {
	s := &rawSession{t: t, url: url, token: token}
	res := s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	NewWithT(t).Expect(res.Error).To(BeNil())
	s.init = res.Result
	resp := s.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	_ = resp.Body.Close()
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusAccepted), "a notification is accepted with 202")
	return s
}

func (s *rawSession) post(msg map[string]any) *http.Response {
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	return resp
}

// call sends a request and returns its response (the SSE stream's data line for it).
func (s *rawSession) call(method string, params any) rpcResponse {
	s.t.Helper()
	id := s.id.Add(1)
	resp := s.post(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20) // grows as a line needs, to 8 MiB
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			if strings.HasPrefix(line, "{") {
				data = line
			} else {
				continue
			}
		}
		var msg struct {
			ID json.RawMessage `json:"id"`
			rpcResponse
		}
		if json.Unmarshal([]byte(data), &msg) == nil && string(msg.ID) == jsonNumber(float64(id)) {
			return msg.rpcResponse
		}
	}
	s.t.Fatalf("no response to %s (HTTP %d)", method, resp.StatusCode)
	return rpcResponse{}
}

func (s *rawSession) task(method, id string) (map[string]any, *rpcResponse) {
	res := s.call(method, map[string]any{"taskId": id})
	if res.Error != nil {
		return nil, &res
	}
	var out map[string]any
	NewWithT(s.t).Expect(json.Unmarshal(res.Result, &out)).To(Succeed())
	return out, nil
}

func TestTaskLifecycle(t *testing.T) {
	g := NewWithT(t)
	s := newRawSession(t, mcpURL, token)

	// The capability and each tool's execution.taskSupport.
	g.Expect(string(s.init)).To(ContainSubstring(`"tasks":{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}`))
	var tools struct {
		Tools []map[string]any `json:"tools"`
	}
	g.Expect(json.Unmarshal(s.call("tools/list", map[string]any{}).Result, &tools)).To(Succeed())
	support := map[string]any{}
	for _, tool := range tools.Tools {
		support[tool["name"].(string)] = tool["execution"].(map[string]any)["taskSupport"]
	}
	g.Expect(support).To(HaveKeyWithValue("sandbar_project_export", "optional"))
	g.Expect(support).To(HaveKeyWithValue("sandbar_validation_start", "optional"))
	g.Expect(support).To(HaveKeyWithValue("sandbar_entity_create", "forbidden"))

	// A task-augmented call answers at once with the task.
	res := s.call("tools/call", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}, "task": map[string]any{"ttl": 600000}})
	g.Expect(res.Error).To(BeNil())
	var created struct {
		Task map[string]any `json:"task"`
	}
	g.Expect(json.Unmarshal(res.Result, &created)).To(Succeed())
	id, _ := created.Task["taskId"].(string)
	g.Expect(id).To(HavePrefix("task-"))
	g.Expect(created.Task["ttl"]).To(Equal(600000.0))
	g.Expect(created.Task).To(HaveKey("createdAt"))

	g.Eventually(func() any {
		got, _ := s.task("tasks/get", id)
		return got["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))

	result := s.call("tasks/result", map[string]any{"taskId": id})
	g.Expect(result.Error).To(BeNil())
	var out struct {
		Meta              map[string]any `json:"_meta"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	g.Expect(json.Unmarshal(result.Result, &out)).To(Succeed())
	g.Expect(out.IsError).To(BeFalse())
	g.Expect(out.Meta).To(HaveKeyWithValue("io.modelcontextprotocol/related-task", map[string]any{"taskId": id}))
	g.Expect(out.StructuredContent).To(HaveKeyWithValue("format", "json"))
	g.Expect(out.StructuredContent).To(HaveKey("items"))

	list, _ := s.task("tasks/list", "")
	g.Expect(list["tasks"]).To(ContainElement(HaveKeyWithValue("taskId", id)))

	// Errors: cancelling a finished task, unknown ids, another account's task,
	// a task on a tool that does not run as one.
	_, rpcErr := s.task("tasks/cancel", id)
	g.Expect(rpcErr).NotTo(BeNil())
	g.Expect(rpcErr.Error.Code).To(Equal(int64(-32602)))
	g.Expect(rpcErr.Error.Message).To(ContainSubstring("already-completed"))
	_, rpcErr = s.task("tasks/get", "task-doesnotexist")
	g.Expect(rpcErr.Error.Code).To(Equal(int64(-32602)))
	_, rpcErr = s.task("tasks/update", id)
	g.Expect(rpcErr).NotTo(BeNil(), "tasks/update is the 2026-07-28 extension's, not this revision's")
	g.Expect(rpcErr.Error.Code).To(Equal(int64(-32601)))
	_, otherTok := newAccount(t, "snoop", metav1alpha1.Permissions{})
	other := newRawSession(t, mcpURL, otherTok)
	_, rpcErr = other.task("tasks/get", id)
	g.Expect(rpcErr).NotTo(BeNil(), "another account's task is unknown")
	g.Expect(rpcErr.Error.Message).To(Equal(`unknown task "` + id + `"`))
	otherList, _ := other.task("tasks/list", "")
	g.Expect(otherList["tasks"]).To(BeEmpty())
	res = s.call("tools/call", map[string]any{"name": "sandbar_entity_create",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}, "task": map[string]any{}})
	g.Expect(res.Error).NotTo(BeNil())
	g.Expect(res.Error.Code).To(Equal(int64(-32601)))

	// A failed process is a failed task.
	res = s.call("tools/call", map[string]any{"name": "sandbar_workflow_start-process",
		"arguments": map[string]any{"workflow": "validation.resource"}, "task": map[string]any{}})
	g.Expect(json.Unmarshal(res.Result, &created)).To(Succeed())
	failed := created.Task["taskId"].(string)
	for _, tr := range []string{"start", "fail"} {
		moved := s.call("tools/call", map[string]any{"name": "sandbar_workflow_transition",
			"arguments": map[string]any{"taskId": failed, "transition": tr}})
		g.Expect(moved.Error).To(BeNil())
		g.Expect(string(moved.Result)).NotTo(ContainSubstring(`"isError":true`))
	}
	g.Eventually(func() any {
		got, _ := s.task("tasks/get", failed)
		return got["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("failed"))
	g.Expect(json.Unmarshal(s.call("tasks/result", map[string]any{"taskId": failed}).Result, &out)).To(Succeed())
	g.Expect(out.IsError).To(BeTrue())
}

func TestTaskCancellationAndWorkflowTransitions(t *testing.T) {
	g := NewWithT(t)
	s := newRawSession(t, mcpURL, token)
	start := func() string {
		res := s.call("tools/call", map[string]any{"name": "sandbar_workflow_start-process",
			"arguments": map[string]any{"workflow": "order.fulfillment"},
			"task":      map[string]any{}})
		g.Expect(res.Error).To(BeNil())
		var created struct {
			Task map[string]any `json:"task"`
		}
		g.Expect(json.Unmarshal(res.Result, &created)).To(Succeed())
		return created.Task["taskId"].(string)
	}

	first := start()
	got, rpcErr := s.task("tasks/cancel", first)
	g.Expect(rpcErr).To(BeNil())
	g.Expect(got["status"]).To(Equal("cancelled"))

	cs := connect(t, mcpURL, token, nil)
	second := start()
	for _, tr := range []string{"confirm", "ship"} {
		res := callTool(t, cs, "sandbar_workflow_transition", map[string]any{"taskId": second, "transition": tr, "reason": "test"})
		g.Expect(res.IsError).To(BeFalse(), text(res))
	}
	res := callTool(t, cs, "sandbar_workflow_transition", map[string]any{"taskId": second, "transition": "confirm"})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring(`transition "confirm" starts from pending, but the process is in "shipped"; from there: deliver`))

	_, rpcErr = s.task("tasks/cancel", second)
	g.Expect(rpcErr).NotTo(BeNil())
	g.Expect(rpcErr.Error.Message).To(ContainSubstring("not-cancellable"))

	res = callTool(t, cs, "sandbar_workflow_process-history", map[string]any{"taskId": second})
	g.Expect(text(res)).To(ContainSubstring(`"transition": "ship"`))
	res = callTool(t, cs, "sandbar_workflow_transition", map[string]any{"taskId": second, "transition": "deliver"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Eventually(func() any {
		got, _ := s.task("tasks/get", second)
		return got["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))
}

func TestTasksForClientsWithoutTasks(t *testing.T) {
	g := NewWithT(t)
	progress := make(chan *mcp.ProgressNotificationParams, 64)
	cs := connect(t, mcpURL, token, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
	})
	items := []any{}
	prefix := unique("imported")
	for i := 0; i < 150; i++ {
		items = append(items, map[string]any{"class": "zorp/SpaceBoot", "name": prefix + "-" + jsonNumber(float64(i)),
			"attributes": map[string]any{"name": "Imported"}})
	}
	params := &mcp.CallToolParams{Name: "sandbar_project_import", Arguments: map[string]any{"bundle": map[string]any{"items": items}}}
	params.SetProgressToken("import-1")
	res, err := cs.CallTool(context.Background(), params)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var started struct {
		TaskID string `json:"taskId"`
	}
	g.Expect(json.Unmarshal([]byte(text(res)), &started)).To(Succeed())
	g.Expect(started.TaskID).To(HavePrefix("task-"))

	res = callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": started.TaskID, "waitSeconds": 30})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`"created": 150`))
	g.Eventually(progress).WithTimeout(timeout).Should(Receive(HaveField("ProgressToken", "import-1")))

	res = callTool(t, cs, "sandbar_tasks_get", map[string]any{"taskId": started.TaskID})
	g.Expect(text(res)).To(ContainSubstring(`"status": "completed"`))
	res = callTool(t, cs, "sandbar_tasks_cancel", map[string]any{"taskId": started.TaskID})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring("already-completed"))

	res = callTool(t, cs, "sandbar_validation_run", map[string]any{"class": "zorp/SpaceBoot", "waitSeconds": 30})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`"checked"`))
}
