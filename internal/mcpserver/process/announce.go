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
	"context"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	toolscache "k8s.io/client-go/tools/cache"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): go-sdk#745 and go-sdk#1146
// (sending notifications/tasks/status) would remove the notifications/message this file
// sends instead.

// LoggerName is the logger of the notifications/message that tell a session its
// task changed state.
const LoggerName = "sandbar.tasks"

// Bounds of what the announcer holds: processes followed in all, and sessions told
// of one process (the one that started it, and any that started it again by retry).
const (
	maxAnnounced          = 10000
	maxSessionsPerProcess = 4
)

// announcer tells the session that started a process, by notifications/message,
// when the process changes state: its task status (working, completed, failed,
// cancelled) or its workflow state. The SDK sends a message only at or above the
// level the client set with logging/setLevel, and none before it set one; the
// server's sending middleware keeps it from locked-out sessions and redacts it.
type announcer struct {
	mu       sync.Mutex
	sessions map[string][]*mcp.ServerSession
}

// add has the session told of the process's changes, until the process ends.
func (a *announcer) add(ss *mcp.ServerSession, key string) {
	if ss == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.sessions[key]
	if slices.Contains(list, ss) || len(list) >= maxSessionsPerProcess || (list == nil && len(a.sessions) >= maxAnnounced) {
		return
	}
	a.sessions[key] = append(list, ss)
}

func (a *announcer) drop(key string, ss *mcp.ServerSession) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[key] = slices.DeleteFunc(a.sessions[key], func(s *mcp.ServerSession) bool { return s == ss })
	if len(a.sessions[key]) == 0 {
		delete(a.sessions, key)
	}
}

// changed announces a change of a process the informer saw.
func (a *announcer) changed(old, cur any) {
	before, ok1 := old.(*metav1alpha1.WorkflowProcess)
	p, ok2 := cur.(*metav1alpha1.WorkflowProcess)
	if !ok1 || !ok2 {
		return
	}
	key := p.Namespace + "/" + p.Name
	status, was := Status(p), Status(before)
	if status == was && p.Status.State == before.Status.State {
		return
	}
	a.mu.Lock()
	sessions := slices.Clone(a.sessions[key])
	if workflow.Terminal(&p.Status) {
		delete(a.sessions, key)
	}
	a.mu.Unlock()
	if len(sessions) == 0 {
		return
	}
	data := map[string]any{"taskId": p.Name, "status": status, "previousStatus": was}
	if p.Status.State != "" {
		data["state"] = p.Status.State
	}
	if msg := TaskOf(p).StatusMessage; msg != "" {
		data["statusMessage"] = msg
	}
	for _, ss := range sessions {
		// Not on the informer's goroutine: a slow client must not hold it up.
		contain.Go("task-announce", func() {
			if err := logTo(ss, status == Failed, data); err != nil {
				a.drop(key, ss) // the session is gone
			}
		})
	}
}

// logTo sends a session a message of the task logger, at info, or error if failed.
//
//nolint:staticcheck // logging is deprecated in 2026-07-28 only; the revisions served here have it
func logTo(ss *mcp.ServerSession, failed bool, data map[string]any) error {
	level := mcp.LoggingLevel("info")
	if failed {
		level = "error"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: LoggerName, Data: data})
}

// gone forgets a deleted process.
func (a *announcer) gone(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if p, ok := o.(*metav1alpha1.WorkflowProcess); ok {
		a.mu.Lock()
		delete(a.sessions, p.Namespace+"/"+p.Name)
		a.mu.Unlock()
	}
}
