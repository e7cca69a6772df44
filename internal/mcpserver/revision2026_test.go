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
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
)

// The details of the stateless revision (2026-07-28): list order, cache hints,
// mirrored headers, the session-based handshake after a discovery, the Tasks
// extension's input path, resultType on every result.

// rawAnswer is an HTTP answer's status and headers, and the JSON-RPC response in it.
type rawAnswer struct {
	status int
	header http.Header
	rpcResponse
}

// postRaw sends msg to url with the token and exactly the MCP headers given, and
// reads the JSON-RPC response: the answer's one JSON object, or the event of its
// stream that carries an id.
func postRaw(t testing.TB, url, tok string, headers map[string]string, msg any) rawAnswer {
	t.Helper()
	body, err := json.Marshal(msg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			data = sc.Text()
		}
		var m struct {
			ID json.RawMessage `json:"id"`
			rpcResponse
		}
		if strings.HasPrefix(data, "{") && json.Unmarshal([]byte(data), &m) == nil && len(m.ID) > 0 {
			return rawAnswer{resp.StatusCode, resp.Header, m.rpcResponse}
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return rawAnswer{status: resp.StatusCode, header: resp.Header}
}

// statelessMessage is a request of the stateless revision, its _meta included.
func statelessMessage(id int, method string, params map[string]any) map[string]any {
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    revision2026,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}}
	for k, v := range params {
		p[k] = v
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p}
}

// listedNames are the names of a tools/list result's tools, in its order.
func listedNames(t testing.TB, result json.RawMessage) []string {
	t.Helper()
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	NewWithT(t).Expect(json.Unmarshal(result, &list)).To(Succeed())
	names := make([]string, 0, len(list.Tools))
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// toolsJSON is a tools/list result's tools as sent.
func toolsJSON(t testing.TB, result json.RawMessage) string {
	t.Helper()
	var list struct {
		Tools json.RawMessage `json:"tools"`
	}
	NewWithT(t).Expect(json.Unmarshal(result, &list)).To(Succeed())
	return string(list.Tools)
}

// A catalog's tools are listed in one order (by name) on both revisions, by every
// replica, whichever started when, and on every call: a client that caches or
// compares the list (or a model's prompt cache) sees no change where there is none.
// A list in the order of a map's iteration would not be sorted, nor the same twice.
func TestToolsListOrderIsTheSameOnEveryReplicaAndCall(t *testing.T) {
	g := NewWithT(t)
	// Replicas started now, each with its own maps, beside the suite's.
	urls := []string{mcpURL, serve(t, mcpserver.Options{}), serve(t, mcpserver.Options{})}
	lists := func() (session, stateless []string) {
		for _, url := range urls {
			for range 2 {
				res := newRawSession(t, url, token).call("tools/list", map[string]any{})
				g.Expect(res.Error).To(BeNil())
				session = append(session, toolsJSON(t, res.Result))
				out := newStatelessRaw(t, url, token, false).call("tools/list", "", nil)
				g.Expect(out.Error).To(BeNil())
				stateless = append(stateless, toolsJSON(t, out.Result))
				for _, names := range [][]string{listedNames(t, res.Result), listedNames(t, out.Result)} {
					g.Expect(len(names)).To(BeNumerically(">", 10))
					g.Expect(slices.IsSorted(names)).To(BeTrue(), "the tools are listed by name: %v", names)
					g.Expect(slices.Compact(slices.Clone(names))).To(HaveLen(len(names)), "no tool twice")
				}
			}
		}
		return session, stateless
	}
	// (Eventually: another test's cleanup may still change the catalog in between.)
	g.Eventually(func() bool {
		session, stateless := lists()
		return len(slices.Compact(session)) == 1 && len(slices.Compact(stateless)) == 1
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "every replica lists the same tools in the same order, every time")
}

// The lists and reads of the stateless revision say how long a client may keep them
// and that no cache shared between accounts may: what follows the catalog for a
// short while, instances not at all. tools/call and prompts/get carry no such hint.
func TestStatelessListsAndReadsSayHowLongToKeepThem(t *testing.T) {
	g := NewWithT(t)
	name := unique("cached-boot")
	newBoot(t, "default", name, map[string]any{"name": "Cached"})
	s := newStatelessRaw(t, mcpURL, token, false)
	uri := resources.InstanceURI("zorp", "SpaceBoot", "default", name)
	for _, c := range []struct {
		method, name string
		params       map[string]any
		ttl          float64
	}{
		{"server/discover", "", nil, 800},
		{"tools/list", "", nil, 800},
		{"prompts/list", "", nil, 800},
		{"resources/templates/list", "", nil, 800},
		{"resources/list", "", nil, 0},
		{"resources/read", uri, map[string]any{"uri": uri}, 0},
	} {
		out := s.result(c.method, c.name, c.params)
		g.Expect(out).To(HaveKeyWithValue("cacheScope", "private"), "%s: an account's answer is not for a cache shared between accounts", c.method)
		g.Expect(out).To(HaveKeyWithValue("ttlMs", c.ttl), c.method)
	}
	for _, c := range []struct {
		method, name string
		params       map[string]any
	}{
		{"tools/call", "sandbar_entity_find", map[string]any{"name": "sandbar_entity_find", "arguments": map[string]any{"class": "zorp/SpaceBoot"}}},
		{"prompts/get", "sandbar_workflow_order_fulfillment", map[string]any{"name": "sandbar_workflow_order_fulfillment", "arguments": map[string]any{"order": "o"}}},
	} {
		out := s.result(c.method, c.name, c.params)
		g.Expect(out).NotTo(HaveKey("ttlMs"), c.method)
		g.Expect(out).NotTo(HaveKey("cacheScope"), c.method)
	}
}

// A request of the stateless revision whose Mcp-Method or Mcp-Name header is
// missing or says otherwise than its body is refused (400, -32020) with both
// values, and does nothing; one whose Mcp-Name comes in the revision's Base64 form
// is served.
func TestStatelessHeadersMustRepeatTheBody(t *testing.T) {
	name := unique("header-boot")
	create := map[string]any{"name": "sandbar_class_zorp_SpaceBoot", "arguments": map[string]any{"name": "H", "metadata": map[string]any{"name": name}}}
	uri := resources.InstanceURI("zorp", "SpaceBoot", "default", "x")
	for _, c := range []struct {
		desc, method, header, mcpName string
		params                        map[string]any
		want                          []string
	}{
		{"no Mcp-Method", "tools/list", "", "", nil, []string{"Mcp-Method header is missing", `"tools/list"`}},
		{"another Mcp-Method", "tools/list", "tools/call", "", nil, []string{`"tools/call"`, `"tools/list"`}},
		{"discover named otherwise", "server/discover", "initialize", "", nil, []string{`"initialize"`, `"server/discover"`}},
		{"tools/call naming another tool", "tools/call", "tools/call", "sandbar_entity_find", create,
			[]string{`"sandbar_entity_find"`, `"sandbar_class_zorp_SpaceBoot"`}},
		{"tools/call without Mcp-Name", "tools/call", "tools/call", "", create, []string{"Mcp-Name header is missing", `"sandbar_class_zorp_SpaceBoot"`}},
		{"prompts/get naming another prompt", "prompts/get", "prompts/get", "other",
			map[string]any{"name": "sandbar_workflow_order_fulfillment", "arguments": map[string]any{"order": "o"}},
			[]string{`"other"`, `"sandbar_workflow_order_fulfillment"`}},
		{"resources/read naming another URI", "resources/read", "resources/read", "mcp://sandbar/other",
			map[string]any{"uri": uri}, []string{`"mcp://sandbar/other"`, `"` + uri + `"`}},
		{"Mcp-Name not Base64", "tools/call", "tools/call", "=?base64?***?=", create, []string{"not valid Base64", `"sandbar_class_zorp_SpaceBoot"`}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			g := NewWithT(t)
			h := map[string]string{"MCP-Protocol-Version": revision2026, "Mcp-Method": c.header, "Mcp-Name": c.mcpName}
			res := postRaw(t, mcpURL, token, h, statelessMessage(7, c.method, c.params))
			g.Expect(res.status).To(Equal(http.StatusBadRequest))
			g.Expect(res.Error).NotTo(BeNil())
			g.Expect(res.Error.Code).To(Equal(int64(mcp.CodeHeaderMismatch)))
			for _, w := range c.want {
				g.Expect(res.Error.Message).To(ContainSubstring(w))
			}
		})
	}
	boot := &unstructured.Unstructured{}
	boot.SetAPIVersion("zorp.sandbar.dev/v1")
	boot.SetKind("SpaceBoot")
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, boot)
	NewWithT(t).Expect(client.IgnoreNotFound(err)).To(Succeed())
	NewWithT(t).Expect(err).To(HaveOccurred(), "a refused tools/call created nothing")

	// The Base64 form (which a client must use for a name that is not plain ASCII)
	// is read decoded.
	encoded := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("sandbar_entity_find")) + "?="
	h := map[string]string{"MCP-Protocol-Version": revision2026, "Mcp-Method": "tools/call", "Mcp-Name": encoded}
	res := postRaw(t, mcpURL, token, h, statelessMessage(8, "tools/call",
		map[string]any{"name": "sandbar_entity_find", "arguments": map[string]any{"class": "zorp/SpaceBoot"}}))
	NewWithT(t).Expect(res.status).To(Equal(http.StatusOK))
	NewWithT(t).Expect(res.Error).To(BeNil())
}

// A client that discovers the server with the stateless revision and then opens a
// session of 2025-11-25 on the same endpoint (Claude Code 2.1.280 does) gets a
// session that works.
func TestInitializeAfterServerDiscover(t *testing.T) {
	g := NewWithT(t)
	disc := postRaw(t, mcpURL, token, map[string]string{"MCP-Protocol-Version": revision2026, "Mcp-Method": "server/discover"},
		statelessMessage(1, "server/discover", nil))
	g.Expect(disc.status).To(Equal(http.StatusOK))
	g.Expect(disc.Error).To(BeNil())
	g.Expect(string(disc.Result)).To(ContainSubstring(`"2025-11-25"`), "the discovery offers the session-based revision too")

	init := postRaw(t, mcpURL, token, nil, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "claude-code", "version": "2.1.280"}}})
	g.Expect(init.status).To(Equal(http.StatusOK))
	g.Expect(init.Error).To(BeNil())
	var result struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	g.Expect(json.Unmarshal(init.Result, &result)).To(Succeed())
	g.Expect(result.ProtocolVersion).To(Equal("2025-11-25"))
	sid := init.header.Get("Mcp-Session-Id")
	g.Expect(sid).NotTo(BeEmpty(), "initialize opened a session")

	session := map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}
	g.Expect(postRaw(t, mcpURL, token, session, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}).status).
		To(Equal(http.StatusAccepted))
	list := postRaw(t, mcpURL, token, session, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": map[string]any{}})
	g.Expect(list.status).To(Equal(http.StatusOK))
	g.Expect(list.Error).To(BeNil())
	g.Expect(listedNames(t, list.Result)).To(ContainElements("sandbar_entity_find", "sandbar_class_zorp_SpaceBoot"))
}

// taskOfCall is the task id of a tools/call answered with a task.
func taskOfCall(t testing.TB, out map[string]any) string {
	t.Helper()
	NewWithT(t).Expect(out).To(HaveKeyWithValue("resultType", "task"))
	return out["taskId"].(string)
}

// transitionAsked is the key and the transitions of the question of a task that is
// input_required.
func transitionAsked(t testing.TB, task map[string]any) (string, []any) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(task).To(HaveKeyWithValue("status", "input_required"))
	g.Expect(task).To(HaveKeyWithValue("resultType", "complete"))
	asks := task["inputRequests"].(map[string]any)
	g.Expect(asks).To(HaveLen(1))
	for key, q := range asks {
		g.Expect(q).To(HaveKeyWithValue("method", "elicitation/create"))
		schema := q.(map[string]any)["params"].(map[string]any)["requestedSchema"].(map[string]any)
		return key, schema["properties"].(map[string]any)["transition"].(map[string]any)["enum"].([]any)
	}
	return "", nil
}

// processState is the state a process is in.
func processState(t testing.TB, id string) string {
	var p metav1alpha1.WorkflowProcess
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p)).To(Succeed())
	return p.Status.State
}

// A process of a user workflow waits in each state for a transition: to a client of
// the Tasks extension that can be asked (elicitation), its task is input_required
// with one form that asks which transition to take, and the client's tasks/update
// takes it. An answer to a question asked before, a declined form and a transition
// the state does not have move nothing; a client that cannot be asked sees the task
// working.
func TestStatelessTaskAsksForTheNextTransition(t *testing.T) {
	g := NewWithT(t)
	s := newStatelessRaw(t, mcpURL, token, true)
	s.elicits = true
	id := taskOfCall(t, s.result("tools/call", "sandbar_workflow_start-process", map[string]any{"name": "sandbar_workflow_start-process",
		"arguments": map[string]any{"workflow": "order.fulfillment", "input": map[string]any{"order": "ord-asked"}}}))
	get := func() map[string]any { return s.result("tasks/get", id, map[string]any{"taskId": id}) }
	update := func(key string, answer map[string]any) rpcResponse {
		return s.call("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{key: answer}})
	}
	accept := func(transition string) map[string]any {
		return map[string]any{"action": "accept", "content": map[string]any{"transition": transition, "reason": "asked"}}
	}
	// The question after the one of key prev: tasks/get reads what the server's cache
	// has seen, which may be a moment behind the move.
	asked := func(prev string) (key string, choices []any) {
		g.Eventually(func() string {
			key, choices = transitionAsked(t, get())
			return key
		}).WithTimeout(timeout).WithPolling(poll).ShouldNot(Equal(prev), "a new question has a new key")
		return key, choices
	}

	g.Eventually(func() any { return get()["status"] }).WithTimeout(timeout).WithPolling(poll).Should(Equal("input_required"))
	first, choices := transitionAsked(t, get())
	g.Expect(choices).To(ConsistOf("confirm", "cancel"))
	// The question is asked of the workflow's initial state before the controller has
	// written it into the process: what "moves nothing" compares with is its write.
	g.Eventually(processState).WithArguments(t, id).WithTimeout(timeout).WithPolling(poll).Should(Equal("pending"), "the controller starts the process")
	g.Expect(update(first, map[string]any{"action": "decline"}).Error).To(BeNil())
	g.Expect(processState(t, id)).To(Equal("pending"), "a declined form moves nothing")
	g.Expect(update(first, accept("confirm")).Error).To(BeNil())
	g.Expect(processState(t, id)).To(Equal("confirmed"), "the answer took the transition")

	next, choices := asked(first)
	g.Expect(choices).To(ConsistOf("ship", "cancel"))
	g.Expect(update(first, accept("cancel")).Error).To(BeNil(), "an answer to an earlier question is ignored")
	g.Expect(processState(t, id)).To(Equal("confirmed"))
	res := update(next, accept("deliver"))
	g.Expect(res.Error).NotTo(BeNil(), "deliver does not leave confirmed")
	g.Expect(res.Error.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))
	g.Expect(processState(t, id)).To(Equal("confirmed"))

	plain := newStatelessRaw(t, mcpURL, token, true)
	working := plain.result("tasks/get", id, map[string]any{"taskId": id})
	g.Expect(working).To(HaveKeyWithValue("status", "working"), "a client that cannot be asked is not")
	g.Expect(working).NotTo(HaveKey("inputRequests"))

	// An account that may not move processes may not answer either.
	_, starter := newAccount(t, unique("starter"), metav1alpha1.Permissions{Tools: []string{"sandbar_workflow_start-process", "sandbar_tasks_*"}})
	o := newStatelessRaw(t, mcpURL, starter, true)
	o.elicits = true
	theirs := taskOfCall(t, o.result("tools/call", "sandbar_workflow_start-process", map[string]any{"name": "sandbar_workflow_start-process",
		"arguments": map[string]any{"workflow": "order.fulfillment", "input": map[string]any{"order": "ord-theirs"}}}))
	var key string
	g.Eventually(func() any {
		task := o.result("tasks/get", theirs, map[string]any{"taskId": theirs})
		if task["status"] == "input_required" {
			key, _ = transitionAsked(t, task)
		}
		return task["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("input_required"))
	g.Eventually(processState).WithArguments(t, theirs).WithTimeout(timeout).WithPolling(poll).Should(Equal("pending"), "the controller starts the process")
	res = o.call("tasks/update", theirs, map[string]any{"taskId": theirs, "inputResponses": map[string]any{key: accept("confirm")}})
	g.Expect(res.Error).NotTo(BeNil())
	g.Expect(res.Error.Message).To(ContainSubstring("sandbar_workflow_transition"))
	g.Expect(processState(t, theirs)).To(Equal("pending"))

	for _, step := range []string{"ship", "deliver"} {
		g.Expect(update(next, accept(step)).Error).To(BeNil())
		if step != "deliver" {
			next, _ = asked(next)
		}
	}
	g.Eventually(func() any { return get()["status"] }).WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))
	g.Expect(get()).NotTo(HaveKey("inputRequests"))
}

// resultTypeCase is a request of the stateless revision and the resultType of its
// answer.
type resultTypeCase struct {
	desc, method, name string
	params             map[string]any
	raw                *statelessRaw
	want               string
}

// Every result of the stateless revision says what it is (resultType): every
// method the server answers on it, a tool's error inside its result, a refusal made
// before the tool runs, a task and the tasks/* answers, a list answered from what
// the server kept. (subscriptions/listen answers with a stream of notifications,
// and no result while the client listens.)
func TestStatelessEveryResultHasAResultType(t *testing.T) {
	name := unique("typed-boot")
	newBoot(t, "default", name, map[string]any{"name": "Typed"})
	uri := resources.InstanceURI("zorp", "SpaceBoot", "default", name)
	plain := newStatelessRaw(t, mcpURL, token, false)
	s := newStatelessRaw(t, mcpURL, token, true)
	s.elicits = true
	_, reader := newAccount(t, unique("typed-reader"), metav1alpha1.Permissions{ReadOnly: true})
	readOnly := newStatelessRaw(t, mcpURL, reader, false)

	export := map[string]any{"name": "sandbar_project_export", "arguments": map[string]any{"class": "zorp/SpaceBoot"}}
	exported := taskOfCall(t, s.result("tools/call", "sandbar_project_export", export))
	waiting := taskOfCall(t, s.result("tools/call", "sandbar_workflow_start-process", map[string]any{"name": "sandbar_workflow_start-process",
		"arguments": map[string]any{"workflow": "order.fulfillment", "input": map[string]any{"order": "ord-typed"}}}))
	g := NewWithT(t)
	g.Eventually(func() any { return s.result("tasks/get", exported, map[string]any{"taskId": exported})["status"] }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))
	g.Eventually(func() any { return s.result("tasks/get", waiting, map[string]any{"taskId": waiting})["status"] }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal("input_required"))

	find := func(class string) map[string]any {
		return map[string]any{"name": "sandbar_entity_find", "arguments": map[string]any{"class": class}}
	}
	complete := "complete"
	for _, c := range []resultTypeCase{
		{"server/discover", "server/discover", "", nil, plain, complete},
		{"tools/list", "tools/list", "", nil, plain, complete},
		{"tools/list kept", "tools/list", "", nil, plain, complete},
		{"tools/call", "tools/call", "sandbar_entity_find", find("zorp/SpaceBoot"), plain, complete},
		{"tools/call with isError", "tools/call", "sandbar_entity_find", find("nope/Nope"), plain, complete},
		{"tools/call refused", "tools/call", "sandbar_class_zorp_SpaceBoot",
			map[string]any{"name": "sandbar_class_zorp_SpaceBoot", "arguments": map[string]any{"name": "No"}}, readOnly, complete},
		{"tools/call as a task", "tools/call", "sandbar_project_export", export, s, "task"},
		{"tools/call without the extension", "tools/call", "sandbar_project_export", export, plain, complete},
		{"resources/list", "resources/list", "", nil, plain, complete},
		{"resources/templates/list", "resources/templates/list", "", nil, plain, complete},
		{"resources/read", "resources/read", uri, map[string]any{"uri": uri}, plain, complete},
		{"prompts/list", "prompts/list", "", nil, plain, complete},
		{"prompts/get", "prompts/get", "sandbar_workflow_order_fulfillment",
			map[string]any{"name": "sandbar_workflow_order_fulfillment", "arguments": map[string]any{"order": "o"}}, plain, complete},
		{"completion/complete", "completion/complete", "", map[string]any{
			"ref":      map[string]any{"type": "ref/resource", "uri": "mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}"},
			"argument": map[string]any{"name": "name", "value": "typed-"}}, plain, complete},
		{"tasks/get of an ended task", "tasks/get", exported, map[string]any{"taskId": exported}, s, complete},
		{"tasks/get of a task that asks", "tasks/get", waiting, map[string]any{"taskId": waiting}, s, complete},
		{"tasks/update", "tasks/update", waiting, map[string]any{"taskId": waiting, "inputResponses": map[string]any{}}, s, complete},
		{"tasks/cancel", "tasks/cancel", waiting, map[string]any{"taskId": waiting}, s, complete},
	} {
		t.Run(c.desc, func(t *testing.T) {
			out := c.raw.result(c.method, c.name, c.params)
			NewWithT(t).Expect(out).To(HaveKeyWithValue("resultType", c.want))
			if r, ok := out["result"].(map[string]any); ok {
				NewWithT(t).Expect(r).To(HaveKeyWithValue("resultType", complete), "the result a task carries")
			}
		})
	}
}

// A transition taken by the answer to a task's question changes the process, and is
// audited as a change, with the process.
func TestATransitionTakenByTasksUpdateIsAudited(t *testing.T) {
	g := NewWithT(t)
	url, path := auditedServer(t, false)
	s := newStatelessRaw(t, url, token, true)
	s.elicits = true
	id := taskOfCall(t, s.result("tools/call", "sandbar_workflow_start-process", map[string]any{"name": "sandbar_workflow_start-process",
		"arguments": map[string]any{"workflow": "order.fulfillment", "input": map[string]any{"order": "ord-audited"}}}))
	var key string
	g.Eventually(func() any {
		task := s.result("tasks/get", id, map[string]any{"taskId": id})
		if task["status"] == "input_required" {
			key, _ = transitionAsked(t, task)
		}
		return task["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("input_required"))
	res := s.call("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"transition": "confirm"}}}})
	g.Expect(res.Error).To(BeNil())
	g.Expect(processState(t, id)).To(Equal("confirmed"))

	var update *telemetry.Event
	g.Eventually(func() *telemetry.Event {
		events, _ := readAudit(t, path)
		update = findEvent(events, func(e telemetry.Event) bool { return e.Method == "tasks/update" })
		return update
	}).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeNil())
	g.Expect(update.Outcome).To(Equal(telemetry.Allowed))
	g.Expect(update.Process).To(Equal(&telemetry.Ref{Namespace: "default", Name: id}))
}
