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

package process

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// PollInterval is how often clients are asked to poll a task, in milliseconds.
const PollInterval = 1000

// Task statuses (MCP revision 2025-11-25).
const (
	Working   = "working"
	Completed = "completed"
	Failed    = "failed"
	Cancelled = "cancelled"
)

// Task is a process as an MCP task.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// Status is a process's task status.
func Status(p *metav1alpha1.WorkflowProcess) string {
	switch p.Status.Phase {
	case metav1alpha1.PhaseSucceeded:
		return Completed
	case metav1alpha1.PhaseFailed:
		return Failed
	case metav1alpha1.PhaseCancelled:
		return Cancelled
	}
	return Working
}

// TaskOf is a process as a task.
func TaskOf(p *metav1alpha1.WorkflowProcess) Task {
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
	if pr := p.Status.Progress; pr != nil && Status(p) == Working && pr.Message != "" {
		msg = pr.Message
	}
	var ttl *int64
	if s := p.Spec.TTLSecondsAfterFinished; s != nil {
		ms := *s * 1000
		ttl = &ms
	}
	return Task{
		TaskID: p.Name, Status: Status(p), StatusMessage: msg,
		CreatedAt: created.UTC().Format(time.RFC3339), LastUpdatedAt: updated.UTC().Format(time.RFC3339),
		TTL: ttl, PollInterval: PollInterval,
	}
}

// ResultOf is what the tool call that started a process would have returned, once
// the process has ended.
func ResultOf(p *metav1alpha1.WorkflowProcess) *mcp.CallToolResult {
	var structured any = map[string]any{}
	if p.Status.Result != nil {
		_ = json.Unmarshal(p.Status.Result.Raw, &structured)
	}
	if _, ok := structured.(map[string]any); !ok {
		structured = map[string]any{"result": structured}
	}
	switch Status(p) {
	case Completed:
		res := tool.JSONResult(structured)
		if by := ApprovedBy(p); by != nil {
			// The call ran once people approved it: who, beside what it answered.
			res.Meta = mcp.Meta{"dev.sandbar/approval": map[string]any{"name": p.Name, "approvedBy": by}}
		}
		return res
	case Working:
		return tool.ErrorResult("the task is still working: " + p.Status.StatusMessage)
	}
	return tool.ErrorResult(fmt.Sprintf("the task %s: %s", Status(p), p.Status.StatusMessage))
}

// ApprovedBy are the people who approved the call of an approval process (the
// actor of its approve transition), nil for any other process.
func ApprovedBy(p *metav1alpha1.WorkflowProcess) []string {
	if p.Spec.Definition != builtin.Approval {
		return nil
	}
	for _, h := range p.Status.History {
		if h.Transition == builtin.ApproveCall && h.Actor != "" {
			return strings.Split(h.Actor, ",")
		}
	}
	return nil
}
