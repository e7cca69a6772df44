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

package tasks_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
)

// server is the MCP server over a fake cluster that runs workflows: a built-in job
// ends within the call that starts it.
func server(t *testing.T) *mcptest.Server { return mcptest.Running(t) }

// answer is a JSON-RPC answer: its result, or its error's code and message.
type answer struct {
	result  json.RawMessage
	code    int64
	message string
}

// call sends a request in the server's 2025-11-25 session, as a client that
// speaks the Tasks methods (the go-sdk client does not send them).
func call(t *testing.T, s *mcptest.Server, method string, params map[string]any) answer {
	t.Helper()
	m, _ := s.Request(t, mcptest.VariantSession, method, params)
	code, msg := mcptest.ErrorOf(m)
	return answer{result: m.Result, code: code, message: msg}
}

// object is an answer's result as JSON, failing the test on an error.
func (a answer) object(t *testing.T) map[string]any {
	t.Helper()
	if a.code != 0 {
		t.Fatalf("error %d: %s", a.code, a.message)
	}
	var out map[string]any
	if err := json.Unmarshal(a.result, &out); err != nil {
		t.Fatalf("result %s: %v", a.result, err)
	}
	return out
}

// taskCall makes a task-augmented tools/call and answers the task it created.
func taskCall(t *testing.T, s *mcptest.Server, tool string, arguments map[string]any) map[string]any {
	t.Helper()
	out := call(t, s, "tools/call", map[string]any{"name": tool, "arguments": arguments, "task": map[string]any{"ttl": 600000}}).object(t)
	task, _ := out["task"].(map[string]any)
	if task == nil {
		t.Fatalf("a task-augmented call answers no task: %v", out)
	}
	return task
}

func TestTasksCapabilityAndToolSupport(t *testing.T) {
	g := NewWithT(t)
	s := server(t)
	g.Expect(string(s.Initialized)).To(ContainSubstring(`"tasks":{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}`))
	var tools struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	g.Expect(json.Unmarshal(call(t, s, "tools/list", map[string]any{}).result, &tools)).To(Succeed())
	support := map[string]string{}
	for _, tool := range tools.Tools {
		support[tool.Name] = tool.Execution.TaskSupport
	}
	g.Expect(support).To(HaveKeyWithValue("sandbar_project_export", "optional"))
	g.Expect(support).To(HaveKeyWithValue("sandbar_validation_start", "optional"))
	g.Expect(support).To(HaveKeyWithValue("sandbar_entity_create", "forbidden"))

	// A task on a tool that does not run as one is refused.
	a := call(t, s, "tools/call", map[string]any{"name": "sandbar_entity_create",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}, "task": map[string]any{}})
	g.Expect(a.code).To(Equal(int64(-32601)), a.message)
}

func TestATaskAugmentedCallRunsToItsResult(t *testing.T) {
	g := NewWithT(t)
	s := server(t)
	task := taskCall(t, s, "sandbar_project_export", map[string]any{"class": "zorp/SpaceBoot"})
	id, _ := task["taskId"].(string)
	g.Expect(id).To(HavePrefix("task-"))
	g.Expect(task["ttl"]).To(Equal(600000.0))
	g.Expect(task).To(HaveKey("createdAt"))

	g.Expect(call(t, s, "tasks/get", map[string]any{"taskId": id}).object(t)).To(HaveKeyWithValue("status", "completed"))

	var out struct {
		Meta              map[string]any `json:"_meta"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	g.Expect(json.Unmarshal(call(t, s, "tasks/result", map[string]any{"taskId": id}).result, &out)).To(Succeed())
	g.Expect(out.IsError).To(BeFalse())
	g.Expect(out.Meta).To(HaveKeyWithValue("io.modelcontextprotocol/related-task", map[string]any{"taskId": id}))
	g.Expect(out.StructuredContent).To(HaveKeyWithValue("format", "json"))
	g.Expect(out.StructuredContent).To(HaveKey("items"))

	// Every page of tasks/list, as a client pages: the task is on one of them.
	var ids []string
	params := map[string]any{}
	for range 100 {
		page := call(t, s, "tasks/list", params).object(t)
		for _, it := range page["tasks"].([]any) {
			ids = append(ids, it.(map[string]any)["taskId"].(string))
		}
		next, _ := page["nextCursor"].(string)
		if next == "" {
			break
		}
		params = map[string]any{"cursor": next}
	}
	g.Expect(ids).To(ContainElement(id))

	// A finished task cannot be cancelled.
	a := call(t, s, "tasks/cancel", map[string]any{"taskId": id})
	g.Expect(a.code).To(Equal(int64(-32602)))
	g.Expect(a.message).To(ContainSubstring("already-completed"))
}

func TestUnknownTasksAndMethods(t *testing.T) {
	g := NewWithT(t)
	s := server(t)
	a := call(t, s, "tasks/get", map[string]any{"taskId": "task-doesnotexist"})
	g.Expect(a.code).To(Equal(int64(-32602)))
	g.Expect(a.message).To(Equal(`unknown task "task-doesnotexist"`))
	a = call(t, s, "tasks/result", map[string]any{"taskId": "not-a-task"})
	g.Expect(a.code).To(Equal(int64(-32602)))
	a = call(t, s, "tasks/update", map[string]any{"taskId": "task-doesnotexist"})
	g.Expect(a.code).To(Equal(int64(-32601)), "tasks/update is the 2026-07-28 extension's, not this revision's")
}

func TestCancellingARunningTask(t *testing.T) {
	g := NewWithT(t)
	s := server(t)
	task := taskCall(t, s, "sandbar_workflow_start-process", map[string]any{"workflow": "order.fulfillment"})
	g.Expect(task["status"]).To(Equal("working"))
	id := task["taskId"].(string)
	g.Expect(call(t, s, "tasks/cancel", map[string]any{"taskId": id}).object(t)).To(HaveKeyWithValue("status", "cancelled"))
	g.Expect(call(t, s, "tasks/get", map[string]any{"taskId": id}).object(t)).To(HaveKeyWithValue("status", "cancelled"))
}

func TestAFailedProcessIsAFailedTask(t *testing.T) {
	g := NewWithT(t)
	s := server(t)
	id := taskCall(t, s, "sandbar_workflow_start-process", map[string]any{"workflow": "validation.resource"})["taskId"].(string)
	for _, transition := range []string{"start", "fail"} {
		out := call(t, s, "tools/call", map[string]any{"name": "sandbar_workflow_transition",
			"arguments": map[string]any{"taskId": id, "transition": transition}}).object(t)
		g.Expect(out["isError"]).NotTo(Equal(true), "%s: %v", transition, out)
	}
	g.Expect(call(t, s, "tasks/get", map[string]any{"taskId": id}).object(t)).To(HaveKeyWithValue("status", "failed"))
	var out struct {
		IsError bool `json:"isError"`
	}
	g.Expect(json.Unmarshal(call(t, s, "tasks/result", map[string]any{"taskId": id}).result, &out)).To(Succeed())
	g.Expect(out.IsError).To(BeTrue())
}
