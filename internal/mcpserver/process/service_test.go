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

package process_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
)

// start calls workflow.start-process for an order.fulfillment process and answers
// the task id, or "" and the refusal's text.
func start(t *testing.T, cs *mcp.ClientSession) (id, refusal string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_workflow_start-process",
		Arguments: map[string]any{"workflow": "order.fulfillment"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		return "", text
	}
	var out struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil || out.TaskID == "" {
		t.Fatalf("start-process answered %s", text)
	}
	return out.TaskID, ""
}

// An account holds at most --max-processes-per-account processes, however many
// starts arrive at once; a refusal says how to free room; deleting a finished
// process makes room again.
func TestProcessesPerAccountHoldUnderConcurrentStarts(t *testing.T) {
	g := NewWithT(t)
	const limit = 3
	s, err := mcptest.StartWith(mcptest.Config{RunWorkflows: true, Server: func(o *mcpserver.Options) {
		o.MaxProcessesPerAccount = limit
	}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(s.Stop)

	const starts = 12
	var (
		mu       sync.Mutex
		started  []string
		refusals []string
		wg       sync.WaitGroup
	)
	for range starts {
		cs := s.Client(t, mcptest.StatelessRevision)
		wg.Go(func() {
			id, refusal := start(t, cs)
			mu.Lock()
			defer mu.Unlock()
			if id != "" {
				started = append(started, id)
			} else {
				refusals = append(refusals, refusal)
			}
		})
	}
	wg.Wait()
	g.Expect(started).To(HaveLen(limit), "refusals: %v", refusals)
	g.Expect(refusals).To(HaveLen(starts - limit))
	g.Expect(refusals[0]).To(ContainSubstring("--max-processes-per-account"))

	var held metav1alpha1.WorkflowProcessList
	g.Expect(s.Cluster.List(context.Background(), &held, client.InNamespace(mcptest.Home))).To(Succeed())
	g.Expect(held.Items).To(HaveLen(limit), "the cluster holds what was answered")

	// Cancelled, a process still holds its place until it is deleted.
	cs := s.Client(t, mcptest.SessionRevision)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_tasks_cancel", Arguments: map[string]any{"taskId": started[0]}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsError).To(BeFalse())
	_, refusal := start(t, cs)
	g.Expect(refusal).To(ContainSubstring("--max-processes-per-account"), "a cancelled process still counts")

	var p metav1alpha1.WorkflowProcess
	g.Expect(s.Cluster.Get(context.Background(), client.ObjectKey{Namespace: mcptest.Home, Name: started[0]}, &p)).To(Succeed())
	g.Expect(s.Cluster.Delete(context.Background(), &p)).To(Succeed())
	id, refusal := start(t, cs)
	g.Expect(id).To(HavePrefix("task-"), "deleting a process makes room: %s", refusal)
}
