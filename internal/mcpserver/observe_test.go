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
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
)

// logLines captures what a logger writes, a JSON object a line.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]any
	raw   []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.NewJSON(func(obj string) {
		var m map[string]any
		_ = json.Unmarshal([]byte(obj), &m)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines, l.raw = append(l.lines, m), append(l.raw, obj)
	}, funcr.Options{Verbosity: 1}) // --zap-log-level=debug
}

// request is the request log's line with a field's value, or nil.
func (l *logLines) request(key string, value any) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.lines {
		if m["msg"] == "MCP request" && m[key] == value {
			return m
		}
	}
	return nil
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.raw...)
}

// loggedServer serves MCP with the manager's logger writing into lines, and audit
// events (no trace export) into a file; it returns the server's URL and the file.
func loggedServer(t *testing.T, lines *logLines) (string, string) {
	t.Helper()
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := telemetry.OpenSink(path)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sink.Close() })
	tel, err := telemetry.New(context.Background(), telemetry.Config{Audit: sink})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), lines.logger()))
	t.Cleanup(cancel)
	url, err := startServerIn(ctx, store, mcpserver.Options{Telemetry: tel})
	g.Expect(err).NotTo(HaveOccurred())
	return url, path
}

// Every MCP request is a line of the manager's log, named mcp, with the server's
// id of the request, the account, the method, the tool, the duration and the
// outcome, and no argument value; the tool result's _meta and the audit event carry
// the same id. A success is a debug line (V(1)); a refusal an info line.
func TestEveryRequestIsLoggedWithTheIDOnItsResult(t *testing.T) {
	g := NewWithT(t)
	lines := &logLines{}
	url, path := loggedServer(t, lines)
	cs := connect(t, url, token, nil)

	secretish := unique("argument-value")
	name := unique("logged")
	res := callTool(t, cs, "sandbar_entity_create", map[string]any{
		"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": secretish}, "metadata": map[string]any{"name": name},
	})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	id, _ := res.Meta[telemetry.MetaRequestID].(string)
	g.Expect(id).NotTo(BeEmpty(), "the result's _meta names the request")

	g.Eventually(func() map[string]any { return lines.request("requestId", id) }).WithTimeout(timeout).WithPolling(poll).NotTo(BeNil())
	line := lines.request("requestId", id)
	g.Expect(line).To(HaveKeyWithValue("logger", "mcp"))
	g.Expect(line).To(HaveKeyWithValue("method", "tools/call"))
	g.Expect(line).To(HaveKeyWithValue("tool", "sandbar_entity_create"))
	g.Expect(line).To(HaveKeyWithValue("account", "default/claude"))
	g.Expect(line).To(HaveKeyWithValue("outcome", "ok"))
	g.Expect(line).To(HaveKeyWithValue("level", BeNumerically("==", 1)), "a success is a debug line")
	g.Expect(line).To(HaveKey("durationMs"))
	g.Expect(line).To(HaveKey("jsonrpcId"))

	events, raw := readAudit(t, path)
	created := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_entity_create" })
	g.Expect(created).NotTo(BeNil(), raw)
	g.Expect(created.ID).To(Equal(id), "the audit event has the request's id")

	// A refusal: a tool this account is not served.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_no_such_tool", Arguments: map[string]any{"x": secretish}})
	g.Expect(err).To(HaveOccurred())
	g.Eventually(func() map[string]any { return lines.request("tool", "sandbar_no_such_tool") }).WithTimeout(timeout).WithPolling(poll).NotTo(BeNil())
	denied := lines.request("tool", "sandbar_no_such_tool")
	g.Expect(denied).To(HaveKeyWithValue("outcome", "denied"))
	g.Expect(denied).To(HaveKeyWithValue("level", BeNumerically("==", 0)), "a refusal is an info line")

	for _, l := range lines.all() {
		g.Expect(l).NotTo(ContainSubstring(secretish), "no argument value is logged at debug level")
		g.Expect(l).NotTo(ContainSubstring(token), "no token is logged")
	}
}

// logMessage is a notifications/message.
//
//nolint:staticcheck // logging is deprecated in 2026-07-28 only; the revisions served here have it
type logMessage = mcp.LoggingMessageParams

// loggingClient connects a session that records the notifications/message it gets,
// and sets its level.
//
//nolint:staticcheck // logging is deprecated in 2026-07-28 only
func loggingClient(t *testing.T, url string, level mcp.LoggingLevel) (*mcp.ClientSession, chan *logMessage) {
	t.Helper()
	got := make(chan *logMessage, 64)
	cs := connect(t, url, token, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { got <- r.Params },
	})
	NewWithT(t).Expect(cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: level})).To(Succeed())
	return cs, got
}

// taskMessages are the task ids of the task messages received so far.
func taskMessages(got chan *logMessage, seen map[string]*logMessage) {
	for {
		select {
		case m := <-got:
			if m.Logger != process.LoggerName {
				continue
			}
			data, _ := m.Data.(map[string]any)
			if id, _ := data["taskId"].(string); id != "" {
				seen[id] = m
			}
		default:
			return
		}
	}
}

// A session is told by notifications/message when a task it started changes state,
// at the level it set with logging/setLevel: a session at "error" does not get the
// info message of a completed task; no session gets another's.
//
// Each session keeps its level: a message is sent after the change it tells of, from
// a goroutine of its own, and the level that counts is the one at sending.
//
//nolint:staticcheck // logging is deprecated in 2026-07-28 only
func TestTaskStateChangesAreLoggedToTheSessionThatStartedThem(t *testing.T) {
	g := NewWithT(t)
	url := mcpURL
	a, fromA := loggingClient(t, url, "info")
	b, fromB := loggingClient(t, url, "error")
	c, fromC := loggingClient(t, url, "info")
	seenA, seenB, seenC := map[string]*logMessage{}, map[string]*logMessage{}, map[string]*logMessage{}

	validate := func(cs *mcp.ClientSession) string {
		res := callTool(t, cs, "sandbar_validation_start", map[string]any{"class": "zorp/SpaceBoot"})
		g.Expect(res.IsError).To(BeFalse(), text(res))
		return taskID(t, res)
	}
	completed := func(cs *mcp.ClientSession, id string) {
		g.Eventually(func() string {
			return text(callTool(t, cs, "sandbar_tasks_get", map[string]any{"taskId": id}))
		}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring(`"status": "completed"`))
	}
	told := func(from chan *logMessage, seen map[string]*logMessage, id string) {
		g.Eventually(func() map[string]*logMessage {
			taskMessages(from, seen)
			return seen
		}).WithTimeout(timeout).WithPolling(poll).Should(HaveKey(id))
	}

	quiet := validate(b)
	completed(b, quiet)

	first := validate(a)
	told(fromA, seenA, first)
	msg := seenA[first]
	g.Expect(msg.Level).To(Equal(mcp.LoggingLevel("info")))
	g.Expect(msg.Data).To(HaveKeyWithValue("status", "completed"))
	g.Expect(msg.Data).To(HaveKeyWithValue("previousStatus", "working"))

	second := validate(c)
	told(fromC, seenC, second)
	g.Expect(seenC).NotTo(HaveKey(first), "a session is not told of another's task")
	g.Expect(seenC).NotTo(HaveKey(quiet), "a session is not told of another's task")
	taskMessages(fromA, seenA)
	g.Expect(seenA).NotTo(HaveKey(second), "a session is not told of another's task")
	g.Expect(seenA).NotTo(HaveKey(quiet), "a session is not told of another's task")
	taskMessages(fromB, seenB)
	g.Expect(seenB).To(BeEmpty(), "the session at level error was not sent the info message of its task")
}

// A call that waits on a task (sandbar_tasks_result with waitSeconds) sends
// notifications/progress while it waits, when it carries a progress token.
func TestWaitingForATaskReportsProgress(t *testing.T) {
	g := NewWithT(t)
	progress := make(chan *mcp.ProgressNotificationParams, 64)
	cs := connect(t, mcpURL, token, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
	})
	id := taskID(t, startOrder(t, cs, map[string]any{}, nil))
	t.Cleanup(func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_tasks_cancel", Arguments: map[string]any{"taskId": id}})
	})

	params := &mcp.CallToolParams{Name: "sandbar_tasks_result", Arguments: map[string]any{"taskId": id, "waitSeconds": 1}}
	params.SetProgressToken("wait-1")
	res, err := cs.CallTool(context.Background(), params)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(text(res)).To(ContainSubstring("has not ended yet"))
	g.Eventually(progress).WithTimeout(timeout).Should(Receive(HaveField("ProgressToken", "wait-1")))
}

// A task's change of workflow state reaches the session that started it as
// notifications/message, with the process's status message redacted as every
// message the server sends.
func TestTaskStateMessagesAreRedacted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	leak, key := leakedToken(t)
	cs, got := loggingClient(t, mcpURL, "info")
	id := taskID(t, startOrder(t, cs, map[string]any{}, nil))
	t.Cleanup(func() {
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbar_tasks_cancel", Arguments: map[string]any{"taskId": id}})
	})

	var p metav1alpha1.WorkflowProcess
	g.Eventually(func() string {
		_ = k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: id}, &p)
		return p.Status.State
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("pending"))
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: id}, &p); err != nil {
			return err
		}
		p.Status.State, p.Status.StatusMessage, p.Status.Progress = "confirmed", "confirmed with "+leak, nil
		return k8s.Status().Update(ctx, &p)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// The first message says it is pending; then comes the one of the change above.
	var confirmed map[string]any
	g.Eventually(func() map[string]any {
		for confirmed == nil {
			select {
			case m := <-got:
				if data, _ := m.Data.(map[string]any); data["taskId"] == id && data["state"] == "confirmed" {
					confirmed = data
				}
			default:
				return nil
			}
		}
		return confirmed
	}).WithTimeout(timeout).WithPolling(poll).NotTo(BeNil())
	g.Expect(confirmed).To(HaveKeyWithValue("statusMessage", "confirmed with "+redact.Redacted))
	noKey(g, key, confirmed, "notifications/message")
}
