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
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/testenv"
	"github.com/sandbar-dev/sandbar/internal/testenv/faults"
)

// revision2026 is the stateless protocol revision.
const revision2026 = "2026-07-28"

// sessionIDs counts the answers that carried an Mcp-Session-Id.
type sessionIDs struct {
	base http.RoundTripper
	seen atomic.Int32
}

func (s *sessionIDs) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(r)
	if err == nil && resp.Header.Get("Mcp-Session-Id") != "" {
		s.seen.Add(1)
	}
	return resp, err
}

// connectAt opens a go-sdk client at a protocol revision; the returned counter says
// how many answers carried a session id.
func connectAt(t *testing.T, url, tok, revision string, opts *mcp.ClientOptions) (*mcp.ClientSession, *sessionIDs) {
	t.Helper()
	ids := &sessionIDs{base: testenv.Bearer{Token: tok}}
	c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: ids}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connecting at %s: %v", revision, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, ids
}

func TestStatelessRevisionServesToolsResourcesPromptsAndCompletions(t *testing.T) {
	g := NewWithT(t)
	cs, ids := connectAt(t, mcpURL, token, revision2026, nil)
	g.Expect(cs.InitializeResult().ProtocolVersion).To(Equal(revision2026), "a 2026-07-28 client is not told to fall back")
	g.Expect(cs.InitializeResult().ServerInfo.Name).To(Equal("sandbar"))

	tools := listTools(t, cs)
	g.Expect(tools).To(HaveKey("sandbar_class_zorp_SpaceBoot"))
	g.Expect(tools).To(HaveKey("sandbar_entity_find"))

	name := unique("stateless-boot")
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Stateless", "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), getBoot(t, name)) })
	g.Expect(getBoot(t, name).Object["spec"]).To(HaveKeyWithValue("name", "Stateless"), "the tool made a Kubernetes object")

	read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.InstanceURI("zorp", "SpaceBoot", "default", name)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(read.Contents[0].Text).To(ContainSubstring(`"name": "Stateless"`))
	var rpc *jsonrpc.Error
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.InstanceURI("zorp", "SpaceBoot", "kube-system", "x")})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(Equal("Resource not found"), "another namespace reads as not found, as on the session-based revisions")

	prompts, err := cs.ListPrompts(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(prompts.Prompts).NotTo(BeEmpty())
	prompt, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "sandbar_workflow_order_fulfillment",
		Arguments: map[string]string{"order": "ord-1"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(prompt.Messages).NotTo(BeEmpty())
	_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "sandbar_workflow_order_fulfillment"})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Message).To(ContainSubstring("needs the argument(s): order"), "the same clear errors as on the session-based revisions")

	g.Eventually(func() []string {
		done, err := cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "stateless-"},
		})
		if err != nil {
			return nil
		}
		return done.Completion.Values
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(name))

	g.Expect(ids.seen.Load()).To(BeZero(), "the stateless revision has no sessions")

	// The session-based revisions are served beside it, on the same path.
	old, oldIDs := connectAt(t, mcpURL, token, "2025-11-25", nil)
	g.Expect(old.InitializeResult().ProtocolVersion).To(Equal("2025-11-25"))
	g.Expect(listTools(t, old)).To(HaveKey("sandbar_class_zorp_SpaceBoot"))
	g.Expect(oldIDs.seen.Load()).NotTo(BeZero(), "a 2025-11-25 client gets a session")
}

func TestStatelessRevisionChecksTheAccount(t *testing.T) {
	g := NewWithT(t)
	// A wrong token is a 401 before anything is served, server/discover included.
	st := newStatelessRaw(t, mcpURL, "sandbar_bad.token", false)
	resp := st.post("server/discover", "", map[string]any{})
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(resp.Header.Get("WWW-Authenticate")).To(HavePrefix("Bearer"))

	// An account sees, and may call, what it sees on the session-based revisions.
	_, reader := newAccount(t, unique("stateless-reader"), metav1alpha1.Permissions{ReadOnly: true})
	cs, _ := connectAt(t, mcpURL, reader, revision2026, nil)
	tools := listTools(t, cs)
	g.Expect(tools).To(HaveKey("sandbar_entity_find"))
	g.Expect(tools).NotTo(HaveKey("sandbar_class_zorp_SpaceBoot"), "a read-only account is not offered a create tool")
	name := unique("refused-boot")
	res := callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "No"}, "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring("forbidden"))
	boot := &unstructured.Unstructured{}
	boot.SetAPIVersion("zorp.sandbar.dev/v1")
	boot.SetKind("SpaceBoot")
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, boot)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing was created: %v", err)
}

func TestStatelessSubscriptionsListenDeliversListChangesAndUpdates(t *testing.T) {
	g := NewWithT(t)
	toolsChanged := make(chan struct{}, 64)
	updated := make(chan string, 64)
	cs, _ := connectAt(t, mcpURL, token, revision2026, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})

	// A new Class is a new tool, announced on the subscriptions/listen stream.
	kind := "Cap" + strings.ToUpper(unique("x")[2:])
	ident := "zorp." + strings.ToLower(kind)
	prop := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: ident + ".peak"}, Spec: metav1alpha1.PropertySpec{Range: metav1alpha1.RangeNumber}}
	class := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: ident}, Spec: metav1alpha1.ClassSpec{
		Prefix: "zorp", Kind: kind, Slots: []metav1alpha1.SlotRef{{Property: prop.Name}},
	}}
	g.Expect(k8s.Create(context.Background(), prop)).To(Succeed())
	g.Expect(k8s.Create(context.Background(), class)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), class); _ = k8s.Delete(context.Background(), prop) })
	g.Eventually(toolsChanged).WithTimeout(timeout).Should(Receive(), "notifications/tools/list_changed on the listen stream")
	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey("sandbar_class_zorp_" + kind))

	// A subscribed instance changed with the Kubernetes API, as kubectl edit does.
	name := unique("listen-boot")
	boot := newBoot(t, "default", name, map[string]any{"name": "Listen"})
	uri := resources.InstanceURI("zorp", "SpaceBoot", "default", name)
	g.Expect(cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})).To(Succeed())
	patch := func(price float64) {
		g.Expect(k8s.Patch(context.Background(), boot, client.RawPatch("application/merge-patch+json",
			[]byte(`{"spec":{"price":`+jsonNumber(price)+`}}`)))).To(Succeed())
	}
	// The listen stream is opened asynchronously: patch until the update arrives.
	g.Eventually(func() []string {
		patch(float64(time.Now().UnixNano() % 1000))
		var got []string
		for {
			select {
			case u := <-updated:
				got = append(got, u)
			case <-time.After(200 * time.Millisecond):
				return got
			}
		}
	}).WithTimeout(timeout).Should(ContainElement(uri))
	g.Expect(cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri})).To(Succeed())

	// Subscribing to what the account may not read is refused.
	forbidden := resources.InstanceURI("zorp", "SpaceBoot", "kube-system", "x")
	err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: forbidden})
	if err == nil {
		// The SDK opens the stream in the background; the refusal ends it, and no
		// update of that namespace is ever delivered.
		g.Consistently(updated).WithTimeout(time.Second).ShouldNot(Receive(Equal(forbidden)))
	}
}

// statelessRaw speaks the stateless revision by hand, for the Tasks extension,
// which the go-sdk client does not speak.
type statelessRaw struct {
	t     testing.TB
	url   string
	token string
	// tasks declares the extension on every request; elicits declares elicitation
	// (form mode).
	tasks   bool
	elicits bool
	id      atomic.Int64
}

func newStatelessRaw(t testing.TB, url, token string, tasks bool) *statelessRaw {
	return &statelessRaw{t: t, url: url, token: token, tasks: tasks}
}

func (s *statelessRaw) post(method, name string, params map[string]any) *http.Response {
	caps := map[string]any{}
	if s.tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	if s.elicits {
		caps["elicitation"] = map[string]any{}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    revision2026,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.id.Add(1), "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Mcp-Protocol-Version", revision2026)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	return resp
}

// call sends one request and returns its response.
func (s *statelessRaw) call(method, name string, params map[string]any) rpcResponse {
	s.t.Helper()
	resp := s.post(method, name, params)
	defer resp.Body.Close()
	NewWithT(s.t).Expect(resp.Header.Get("Mcp-Session-Id")).To(BeEmpty())
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		// A stream of events, or one JSON-RPC error (HTTP 400 or 404 in this revision).
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok && !strings.HasPrefix(sc.Text(), "{") {
			continue
		}
		if !ok {
			data = sc.Text()
		}
		var msg struct {
			ID json.RawMessage `json:"id"`
			rpcResponse
		}
		if json.Unmarshal([]byte(data), &msg) == nil && len(msg.ID) > 0 {
			return msg.rpcResponse
		}
	}
	s.t.Fatalf("no response to %s (HTTP %d)", method, resp.StatusCode)
	return rpcResponse{}
}

func (s *statelessRaw) result(method, name string, params map[string]any) map[string]any {
	s.t.Helper()
	res := s.call(method, name, params)
	NewWithT(s.t).Expect(res.Error).To(BeNil(), "%s: %+v", method, res.Error)
	var out map[string]any
	NewWithT(s.t).Expect(json.Unmarshal(res.Result, &out)).To(Succeed())
	return out
}

func TestStatelessTasksExtension(t *testing.T) {
	g := NewWithT(t)
	s := newStatelessRaw(t, mcpURL, token, true)

	disc := s.result("server/discover", "", nil)
	g.Expect(disc["supportedVersions"]).To(ContainElements(revision2026, "2025-11-25"))
	g.Expect(disc["capabilities"]).To(HaveKeyWithValue("extensions", HaveKey("io.modelcontextprotocol/tasks")))
	g.Expect(disc["capabilities"]).NotTo(HaveKey("tasks"), "2025-11-25's tasks capability is not the extension's")

	// tools/list has no 2025-11-25 execution.taskSupport: the server decides.
	list := s.result("tools/list", "", nil)
	g.Expect(list["resultType"]).To(Equal("complete"))
	g.Expect(list["cacheScope"]).To(Equal("private"), "an account's tools are not for an intermediary to serve to another")
	for _, tl := range list["tools"].([]any) {
		g.Expect(tl).NotTo(HaveKey("execution"))
	}

	// A long-running tool answers a client that declared the extension with a task.
	created := s.result("tools/call", "sandbar_project_export", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}})
	g.Expect(created).To(HaveKeyWithValue("resultType", "task"))
	g.Expect(created).To(HaveKey("ttlMs"))
	g.Expect(created).To(HaveKeyWithValue("pollIntervalMs", BeNumerically(">", 0)))
	g.Expect(created).NotTo(HaveKey("task"), "the task is flat, not 2025-11-25's {task: ...}")
	id := created["taskId"].(string)
	var proc metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &proc)).To(Succeed(),
		"the task is a WorkflowProcess")

	// tasks/get carries the result once the task has ended.
	var got map[string]any
	g.Eventually(func() any {
		got = s.result("tasks/get", id, map[string]any{"taskId": id})
		return got["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))
	g.Expect(got).To(HaveKeyWithValue("resultType", "complete"))
	g.Expect(got).To(HaveKeyWithValue("result", HaveKeyWithValue("structuredContent", HaveKey("items"))))
	// The result is one of the revision's results, as the tool call would have had it.
	g.Expect(got).To(HaveKeyWithValue("result", HaveKeyWithValue("resultType", "complete")))

	// tasks/update and tasks/cancel are acknowledged; an ended task stays as it ended.
	ack := And(HaveKeyWithValue("resultType", "complete"), HaveLen(2), HaveKey("_meta"))
	g.Expect(s.result("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{}}})).To(ack)
	g.Expect(s.result("tasks/cancel", id, map[string]any{"taskId": id})).To(ack)
	g.Expect(s.result("tasks/get", id, map[string]any{"taskId": id})["status"]).To(Equal("completed"))

	// An unknown task, or another account's, is -32602 for every method.
	_, other := newAccount(t, unique("stateless-other"), metav1alpha1.Permissions{})
	o := newStatelessRaw(t, mcpURL, other, true)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		for _, c := range []struct {
			raw *statelessRaw
			id  string
		}{{s, "task-doesnotexist"}, {o, id}} {
			res := c.raw.call(m, c.id, map[string]any{"taskId": c.id})
			g.Expect(res.Error).NotTo(BeNil(), m)
			g.Expect(res.Error.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)), m)
		}
	}

	// 2025-11-25's tasks/result and tasks/list are not part of the extension.
	for _, m := range []string{"tasks/result", "tasks/list"} {
		res := s.call(m, id, map[string]any{"taskId": id})
		g.Expect(res.Error).NotTo(BeNil(), m)
		g.Expect(res.Error.Code).To(Equal(int64(jsonrpc.CodeMethodNotFound)), m)
	}

	// A client that did not declare the extension gets the full answer, never a task.
	plain := newStatelessRaw(t, mcpURL, token, false)
	full := plain.result("tools/call", "sandbar_project_export", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}})
	g.Expect(full["resultType"]).NotTo(Equal("task"))
	g.Expect(full).To(HaveKey("content"))
}

func balance(t *testing.T, urls ...string) string {
	t.Helper()
	lb, stop, err := faults.Balance(urls...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(stop)
	return lb
}

func TestStatelessClientWorksThroughAnyReplica(t *testing.T) {
	g := NewWithT(t)
	// Two replicas, each with its own HTTP handlers and sessions, behind a balancer
	// that sends each request to the other one.
	lb := balance(t, serve(t, mcpserver.Options{}), serve(t, mcpserver.Options{}))

	cs, _ := connectAt(t, lb, token, revision2026, nil)
	g.Expect(cs.InitializeResult().ProtocolVersion).To(Equal(revision2026))
	for range 4 {
		g.Expect(listTools(t, cs)).To(HaveKey("sandbar_class_zorp_SpaceBoot"))
	}
	name := unique("balanced-boot")
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Balanced", "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), getBoot(t, name)) })
	// The other replica answers a find from its informer cache, which sees the write
	// when its watch brings it (read-your-writes holds on the replica that wrote;
	// docs/performance.md, "entity.find from the cache"): milliseconds, longer on a
	// loaded machine.
	wrote := time.Now()
	g.Eventually(func() string {
		return text(callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": "default"}))
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring(name), "a read on the other replica sees the write")
	t.Logf("the other replica's find saw the write %s after it", time.Since(wrote).Round(time.Millisecond))

	// A task started on one replica is read on the other.
	s := newStatelessRaw(t, lb, token, true)
	created := s.result("tools/call", "sandbar_project_export", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}})
	id := created["taskId"].(string)
	g.Eventually(func() any { return s.result("tasks/get", id, map[string]any{"taskId": id})["status"] }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))

	// What the balancer does to a session-based client: its session lives on one
	// replica, and the other does not know it (404 on notifications/initialized).
	old, err := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: lb, HTTPClient: &http.Client{Transport: testenv.Bearer{Token: token}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
	for i := 0; err == nil && i < 4; i++ {
		_, err = old.ListTools(context.Background(), nil)
	}
	g.Expect(err).To(HaveOccurred(), "without affinity, a session-based client loses its session")
	t.Logf("a %s client behind the balancer: %v", sessionRevision, err)
}

// A call that waits on a task reports progress on its own answer's stream: the
// stateless revision has no other.
func TestStatelessCallsThatWaitReportProgress(t *testing.T) {
	g := NewWithT(t)
	progress := make(chan *mcp.ProgressNotificationParams, 64)
	cs, _ := connectAt(t, mcpURL, token, revision2026, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
	})
	id := taskID(t, startOrder(t, cs, map[string]any{}, nil))
	t.Cleanup(func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_tasks_cancel", Arguments: map[string]any{"taskId": id}})
	})
	params := &mcp.CallToolParams{Name: "sandbar_tasks_result", Arguments: map[string]any{"taskId": id, "waitSeconds": 1}}
	params.SetProgressToken("wait-stateless")
	res, err := cs.CallTool(context.Background(), params)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(text(res)).To(ContainSubstring("has not ended yet"))
	g.Expect(progress).To(Receive(HaveField("ProgressToken", "wait-stateless")), "the progress came before the answer")
}

// A POST of the stateless revision that does not accept a stream (curl's default)
// gets one JSON answer, as the session-based revisions do.
func TestStatelessPlainJSONAnswer(t *testing.T) {
	g := NewWithT(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	post := func(method string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Protocol-Version", revision2026)
		if method != "" {
			req.Header.Set("Mcp-Method", method)
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		return resp
	}
	// The revision has every request name its method in a header as well.
	resp := post("")
	out, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
	g.Expect(string(out)).To(ContainSubstring(`the Mcp-Method header is missing; it must repeat the body's method \"server/discover\"`))

	resp = post("server/discover")
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Content-Type")).To(HavePrefix("application/json"))
	g.Expect(resp.Header.Get("Mcp-Session-Id")).To(BeEmpty())
	var msg struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&msg)).To(Succeed())
	g.Expect(msg.Result.SupportedVersions).To(ContainElement(revision2026))
}

// An OAuth user of the stateless revision acts as their Kubernetes identity, as on
// the session-based revisions; a forged token is refused before anything is served.
func TestStatelessRevisionOnTheOAuthRoute(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{Scopes: []string{"mcp"}})
	sub := unique("stella")
	user := "oidc:" + sub
	mine, theirs := namespaceFor(t, rbacv1.UserKind, user), namespaceFor(t, "", "")

	cs, ids := connectAt(t, s.oauth, s.token(sub, nil), revision2026, nil)
	g.Expect(cs.InitializeResult().ProtocolVersion).To(Equal(revision2026))
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Mine", "metadata": map[string]any{"namespace": mine, "name": "mine"}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(boots(t, mine)).To(Equal([]string{"mine"}))
	res = callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Planted", "metadata": map[string]any{"namespace": theirs, "name": "planted"}})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`User "` + user + `" cannot create resource "spaceboots"`))
	g.Expect(boots(t, theirs)).To(BeEmpty())
	g.Expect(ids.seen.Load()).To(BeZero())

	forged := newStatelessRaw(t, s.oauth, s.token(sub, nil)+"x", false)
	resp := forged.post("server/discover", "", nil)
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(resp.Header.Get("WWW-Authenticate")).To(ContainSubstring("resource_metadata="))
}

// TestStatelessTasksMethodsNeedTheExtension: tasks/get, tasks/update and
// tasks/cancel from a request that did not declare the Tasks extension are refused
// with -32021 (HTTP 400) naming the missing capability, and leave the task as it was.
func TestStatelessTasksMethodsNeedTheExtension(t *testing.T) {
	g := NewWithT(t)
	s := newStatelessRaw(t, mcpURL, token, true)
	created := s.result("tools/call", "sandbar_project_export", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}})
	id := created["taskId"].(string)
	g.Eventually(func() any { return s.result("tasks/get", id, map[string]any{"taskId": id})["status"] }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))
	var before metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &before)).To(Succeed())

	plain := newStatelessRaw(t, mcpURL, token, false)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := map[string]any{"taskId": id}
		resp := plain.post(m, id, params)
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), m)
		_ = resp.Body.Close()
		res := plain.call(m, id, map[string]any{"taskId": id})
		g.Expect(res.Error).NotTo(BeNil(), m)
		g.Expect(res.Error.Code).To(Equal(int64(mcp.CodeMissingRequiredClientCapabilities)), m)
		g.Expect(res.Error.Message).To(ContainSubstring("io.modelcontextprotocol/tasks"), m)
		g.Expect(string(res.Error.Data)).To(MatchJSON(`{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`), m)
	}
	var after metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the refused requests changed the task")
}

// listAnswers records the Content-Type of every answer to a tools/list.
type listAnswers struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (l *listAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(r)
	if err == nil && r.Header.Get("Mcp-Method") == "tools/list" {
		l.mu.Lock()
		l.seen = append(l.seen, resp.Header.Get("Content-Type"))
		l.mu.Unlock()
	}
	return resp, err
}

// A client of the stateless revision that lists the tools again, with nothing
// changed, gets the answer the server gave it the first time, sent again as one JSON
// body instead of the stream a request of its own would answer on; each list is
// still a line of the request log, the account's, and a list after the tools changed
// has the change.
func TestStatelessListsAskedAgainAreSentAgainAndEachIsLogged(t *testing.T) {
	g := NewWithT(t)
	lines := &logLines{}
	url, _ := loggedServer(t, lines)
	answers := &listAnswers{base: testenv.Bearer{Token: token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: answers}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: revision2026})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cs.Close() })

	list := func() []byte {
		res, err := cs.ListTools(context.Background(), nil)
		g.Expect(err).NotTo(HaveOccurred())
		b, _ := json.Marshal(res.Tools)
		return b
	}
	list()
	answers.mu.Lock()
	g.Expect(answers.seen).To(Equal([]string{"text/event-stream"}), "the first list is the SDK's answer")
	answers.mu.Unlock()
	// (Eventually: a catalog change that another test's cleanup makes in between has
	// the next list rendered again.)
	g.Eventually(func() bool {
		a, b := list(), list()
		answers.mu.Lock()
		defer answers.mu.Unlock()
		n := len(answers.seen)
		return bytes.Equal(a, b) && strings.HasPrefix(answers.seen[n-1], "application/json")
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "a list asked again is sent as it was kept, the same")

	logged := func() int {
		n := 0
		lines.mu.Lock()
		defer lines.mu.Unlock()
		for _, m := range lines.lines {
			if m["msg"] == "MCP request" && m["method"] == "tools/list" && m["account"] == "default/claude" && m["jsonrpcId"] != nil {
				n++
			}
		}
		return n
	}
	answers.mu.Lock()
	sent := len(answers.seen)
	answers.mu.Unlock()
	g.Eventually(logged).WithTimeout(timeout).WithPolling(poll).Should(Equal(sent), "every list is a line of the request log")

	// A new class is in the lists that follow.
	kind := "Direct" + strings.ToUpper(unique("x")[2:])
	zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString})
	g.Eventually(func() string {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			return err.Error()
		}
		b, _ := json.Marshal(res.Tools)
		return string(b)
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring(`"sandbar_class_zorp_` + kind + `"`))
}
