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

// One account cannot exhaust the server: the processes it holds, the bytes they hold
// and the processes it follows are bounded. Every refusal says the limit and how to
// free room, and leaves the cluster as it was.

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

// held is the names of the WorkflowProcesses of namespace default that the account owns.
func held(t *testing.T, account string) []string {
	t.Helper()
	var list metav1alpha1.WorkflowProcessList
	NewWithT(t).Expect(k8s.List(context.Background(), &list, client.InNamespace("default"))).To(Succeed())
	var names []string
	for _, p := range list.Items {
		if p.Spec.Owner == account {
			names = append(names, p.Name)
		}
	}
	return names
}

// startOrder starts a process of the sample workflow order.fulfillment (about no
// instance), which runs until someone moves it; a progress token asks for progress
// notifications.
func startOrder(t *testing.T, cs *mcp.ClientSession, input any, progressToken any) *mcp.CallToolResult {
	t.Helper()
	params := &mcp.CallToolParams{Name: "sandbar_workflow_start-process", Arguments: map[string]any{
		"workflow": "order.fulfillment", "input": input}}
	if progressToken != nil {
		params.SetProgressToken(progressToken)
	}
	res, err := cs.CallTool(context.Background(), params)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return res
}

func taskID(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	m, _ := res.StructuredContent.(map[string]any)
	id, _ := m["taskId"].(string)
	NewWithT(t).Expect(id).To(HavePrefix("task-"), text(res))
	return id
}

// An account that holds its limit of processes (a read-only one, exporting) is
// refused the next start on every path, before anything is created, with the limit,
// what it holds and how to free room; deleting one makes room again.
func TestAccountAtItsProcessLimitCannotStartMore(t *testing.T) {
	g := NewWithT(t)
	const limit = 3
	url := serve(t, mcpserver.Options{MaxProcessesPerAccount: limit, FinishedProcessTTL: time.Hour})
	reader, readerTok := newAccount(t, unique("reader"), metav1alpha1.Permissions{ReadOnly: true})
	writer, writerTok := newAccount(t, unique("writer"), metav1alpha1.Permissions{})
	rs := connect(t, url, readerTok, nil)
	export := map[string]any{"class": "zorp/SpaceBoot"}

	var started []string
	for range limit {
		res := callTool(t, rs, "sandbar_project_export", export)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		started = append(started, taskID(t, res))
	}
	g.Expect(held(t, reader.Name)).To(ConsistOf(started))

	refused := And(
		HavePrefix("refused: this account holds 3 processes"),
		ContainSubstring("its limit (--max-processes-per-account); nothing was started"),
		ContainSubstring("kubectl delete workflowprocess -n default"),
		ContainSubstring("a finished process is deleted 1h0m0s after it ends"),
		ContainSubstring("ask an admin to raise --max-processes-per-account"))
	res := callTool(t, rs, "sandbar_project_export", export)
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(refused)

	// As a task: the call is answered with the refusal, and no task is made.
	raw := newRawSession(t, url, readerTok)
	reply := raw.call("tools/call", map[string]any{"name": "sandbar_project_export", "arguments": export, "task": map[string]any{}})
	g.Expect(reply.Error).To(BeNil())
	var asTask struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Task any `json:"task"`
	}
	g.Expect(json.Unmarshal(reply.Result, &asTask)).To(Succeed())
	g.Expect(asTask.IsError).To(BeTrue())
	g.Expect(asTask.Task).To(BeNil())
	g.Expect(asTask.Content).NotTo(BeEmpty())
	g.Expect(asTask.Content[0].Text).To(refused)
	g.Expect(held(t, reader.Name)).To(ConsistOf(started), "nothing new in the cluster")

	// Every other path that starts a process, for an account that may write.
	ws := connect(t, url, writerTok, nil)
	for range limit {
		g.Expect(startOrder(t, ws, nil, nil).IsError).To(BeFalse())
	}
	before := held(t, writer.Name)
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"sandbar_workflow_start-process", map[string]any{"workflow": "order.fulfillment"}},
		{"sandbar_validation_start", map[string]any{"class": "zorp/SpaceBoot"}},
		{"sandbar_validation_run", map[string]any{"class": "zorp/SpaceBoot", "waitSeconds": 1}},
		{"sandbar_project_import", map[string]any{"bundle": map[string]any{"items": []any{}}}},
		{"sandbar_project_export", export},
	} {
		res := callTool(t, ws, call.tool, call.args)
		g.Expect(res.IsError).To(BeTrue(), "%s: %s", call.tool, text(res))
		g.Expect(text(res)).To(And(HavePrefix("refused: this account holds 3 processes"), ContainSubstring("None has finished")), call.tool)
	}
	g.Expect(held(t, writer.Name)).To(ConsistOf(before), "nothing new in the cluster")

	// Deleting one of the reader's makes room for one more, and no more.
	g.Expect(k8s.Delete(context.Background(), &metav1alpha1.WorkflowProcess{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: started[0]}})).To(Succeed())
	g.Eventually(func() bool {
		return !callTool(t, rs, "sandbar_project_export", export).IsError
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	g.Expect(held(t, reader.Name)).To(HaveLen(limit))
	g.Expect(callTool(t, rs, "sandbar_project_export", export).IsError).To(BeTrue())
	g.Expect(held(t, reader.Name)).To(HaveLen(limit))
}

// The bytes an account's processes hold (their inputs, their results) are bounded
// too: a start that would pass the limit is refused, and nothing is created.
func TestAccountAtItsByteLimitCannotStartMore(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{MaxProcessBytesPerAccount: 1 << 20})
	writer, tok := newAccount(t, unique("filler"), metav1alpha1.Permissions{})
	cs := connect(t, url, tok, nil)
	big := strings.Repeat("x", 400<<10)
	for range 2 {
		res := startOrder(t, cs, map[string]any{"note": big}, nil)
		g.Expect(res.IsError).To(BeFalse(), text(res))
	}
	before := held(t, writer.Name)
	res := startOrder(t, cs, map[string]any{"note": big}, nil)
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(And(
		HavePrefix("refused: this account's processes hold 800.0 KiB of inputs and results, and this one may add 400.0 KiB"),
		ContainSubstring("over the account's limit of 1.0 MiB (--max-process-bytes-per-account); nothing was started"),
		ContainSubstring("kubectl delete workflowprocess -n default")))
	g.Expect(held(t, writer.Name)).To(ConsistOf(before), "nothing new in the cluster")
	// A small one still fits.
	g.Expect(startOrder(t, cs, map[string]any{"note": "small"}, nil).IsError).To(BeFalse())
}

// Following processes (progress notifications, waiting for a result) is bounded per
// account and in all: beyond the caps a call is answered at once, says to poll, and
// starts no goroutine; a follower that ends gives its place back.
func TestProcessFollowersAreBounded(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{MaxFollowersPerAccount: 2, MaxFollowers: 3})
	_, tokA := newAccount(t, unique("follower-a"), metav1alpha1.Permissions{})
	_, tokB := newAccount(t, unique("follower-b"), metav1alpha1.Permissions{})
	a, b := connect(t, url, tokA, nil), connect(t, url, tokB, nil)
	following := func(res *mcp.CallToolResult) bool {
		g.Expect(res.IsError).To(BeFalse(), text(res))
		m, _ := res.StructuredContent.(map[string]any)
		_, degraded := m["progress"]
		if degraded {
			g.Expect(m["progress"]).To(ContainSubstring("poll with sandbar_tasks_get"))
		}
		return !degraded
	}

	first := startOrder(t, a, nil, "a1")
	g.Expect(following(first)).To(BeTrue())
	g.Expect(following(startOrder(t, a, nil, "a2"))).To(BeTrue())
	g.Expect(following(startOrder(t, a, nil, "a3"))).To(BeFalse(), "over the account's cap")

	// Waiting for a result is following too: refused at once, not blocked.
	raw := newRawSession(t, url, tokA)
	_, rpcErr := raw.task("tasks/result", taskID(t, first))
	g.Expect(rpcErr).NotTo(BeNil())
	g.Expect(rpcErr.Error.Code).To(Equal(int64(jsonrpc.CodeInvalidRequest)))
	g.Expect(rpcErr.Error.Message).To(ContainSubstring("poll tasks/get instead"))

	g.Expect(following(startOrder(t, b, nil, "b1"))).To(BeTrue())
	g.Expect(following(startOrder(t, b, nil, "b2"))).To(BeFalse(), "over the server's cap")

	// Calls beyond the caps start no goroutines that outlive them.
	base := runtime.NumGoroutine()
	for i := range 30 {
		g.Expect(following(startOrder(t, b, nil, i))).To(BeFalse())
	}
	g.Eventually(runtime.NumGoroutine).WithTimeout(timeout).WithPolling(poll).Should(BeNumerically("<", base+15))

	// A process that ends lets its follower go, and its place is free again.
	res := callTool(t, a, "sandbar_tasks_cancel", map[string]any{"taskId": taskID(t, first)})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Eventually(func() bool { return following(startOrder(t, a, nil, "again")) }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
}
