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
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
)

// answerOf reads the response with the JSON-RPC id id (its JSON) from a body: one
// JSON body (an answer given ahead of the SDK) or the SDK's stream.
func answerOf(t *testing.T, body, id string) (direct bool, res rpcResponse) {
	t.Helper()
	direct = strings.HasPrefix(body, `{"jsonrpc"`)
	for line := range strings.SplitSeq(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok && !direct {
			continue
		}
		if direct {
			data = line
		}
		var msg struct {
			ID json.RawMessage `json:"id"`
			rpcResponse
		}
		if json.Unmarshal([]byte(data), &msg) == nil && string(msg.ID) == id {
			return direct, msg.rpcResponse
		}
	}
	t.Fatalf("no response with id %s in %q", id, body)
	return false, rpcResponse{}
}

// asked posts a request of a session, once with a plain id (which may be answered
// ahead of the SDK) and once with an id of the same value spelled with an escape
// (which only the SDK answers), and gives both answers.
func asked(t *testing.T, url, tok, sid, method, params string) (ahead, sdk rpcResponse) {
	t.Helper()
	g := NewWithT(t)
	code, body := rawPost(t, url, tok, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":"d1","method":%q,"params":%s}`, method, params))
	g.Expect(code).To(Equal(http.StatusOK), body)
	direct, ahead := answerOf(t, body, `"d1"`)
	g.Expect(direct).To(BeTrue(), "a %s of a live session is answered ahead of the SDK: %s", method, body)
	code, body = rawPost(t, url, tok, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":"d\u0032","method":%q,"params":%s}`, method, params))
	g.Expect(code).To(Equal(http.StatusOK), body)
	direct, sdk = answerOf(t, body, `"d2"`) // the SDK sends the id back without the escape
	g.Expect(direct).To(BeFalse(), "an id with an escape is the SDK's to answer: %s", body)
	return ahead, sdk
}

// A session's ping and tasks/get are answered ahead of the SDK, through the
// server's own middleware and handlers, with what the SDK answers: the task as it
// stands, the same refusal of a task that is not there or is another account's.
func TestASessionsPingAndTasksGetAreAnsweredAheadOfTheSDKAsItAnswers(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	s := newRawSession(t, url, token)
	id := oneTask(t, s)
	g.Eventually(func() any {
		out, _ := s.task("tasks/get", id)
		return out["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))

	ahead, sdk := asked(t, url, token, s.sid, "tasks/get", fmt.Sprintf(`{"taskId":%q}`, id))
	g.Expect(ahead.Error).To(BeNil())
	g.Expect(ahead.Result).To(MatchJSON(sdk.Result), "the task, as the SDK sends it")
	g.Expect(string(ahead.Result)).To(ContainSubstring(`"taskId":%q`, id))

	ahead, sdk = asked(t, url, token, s.sid, "tasks/get", `{"taskId":"task-not-there"}`)
	g.Expect(ahead.Error).NotTo(BeNil())
	g.Expect(*ahead.Error).To(Equal(*sdk.Error), "the SDK's refusal of a task that is not there")

	tn := newTenant(t, metav1alpha1.Permissions{})
	other := newRawSession(t, url, tn.token)
	ahead, sdk = asked(t, url, tn.token, other.sid, "tasks/get", fmt.Sprintf(`{"taskId":%q}`, id))
	g.Expect(ahead.Error).NotTo(BeNil(), "another account's task: %s", ahead.Result)
	g.Expect(*ahead.Error).To(Equal(*sdk.Error))
	g.Expect(ahead.Error.Message).NotTo(ContainSubstring("completed"))

	ahead, sdk = asked(t, url, token, s.sid, "ping", `{}`)
	g.Expect(ahead.Error).To(BeNil())
	g.Expect(ahead.Result).To(MatchJSON(`{}`))
	g.Expect(ahead.Result).To(MatchJSON(sdk.Result))
	code, body := rawPost(t, url, token, s.sid, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(Equal(`{"jsonrpc":"2.0","id":5,"result":{}}`+"\n"), "a ping without params")
}

// What the SDK would refuse, or answer otherwise, is left to it: params it does not
// take, a request in the stateless revision's form, another account presenting the
// session's id.
func TestAPingOrTasksGetTheSDKWouldRefuseIsLeftToIt(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	s := newRawSession(t, url, token)
	for _, message := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":5}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":["task-x"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"task-x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	} {
		code, body := rawPost(t, url, token, s.sid, message)
		if code != http.StatusOK {
			// Refused before any answer (the stateless revision's form, in a session).
			g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", message, body)
			continue
		}
		direct, res := answerOf(t, body, "1")
		g.Expect(direct).To(BeFalse(), "%s is the SDK's: %s", message, body)
		g.Expect(res.Error).NotTo(BeNil(), "%s is refused: %s", message, body)
	}
	code, body := rawPost(t, url, token, s.sid, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":5}}`)
	g.Expect(code).To(Equal(http.StatusOK))
	_, res := answerOf(t, body, "1")
	g.Expect(res.Error.Code).To(BeEquivalentTo(-32602), "invalid params: %s", body)

	tn := newTenant(t, metav1alpha1.Permissions{})
	newRawSession(t, url, tn.token)
	for _, method := range []string{"ping", "tasks/get"} {
		code, body := rawPost(t, url, tn.token, s.sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"taskId":"task-x"}}`, method))
		g.Expect(code).To(Equal(http.StatusForbidden), "another account presenting the session's id: %s", body)
	}
}

// A ping and a tasks/get answered ahead of the SDK are traced as every request is:
// a span each, of the session and the account, the refusal an error.
func TestAPingAndTasksGetAnsweredAheadOfTheSDKAreTraced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	otlp := newCollector(t)
	tel, err := telemetry.New(ctx, telemetry.Config{OTLPEndpoint: otlp.URL, Version: "test"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	url := serve(t, mcpserver.Options{Telemetry: tel})
	s := newRawSession(t, url, token)
	for _, message := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"task-not-there"}}`,
	} {
		_, body := rawPost(t, url, token, s.sid, message)
		g.Expect(body).To(HavePrefix(`{"jsonrpc"`), "answered ahead of the SDK: %s", message)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(tel.Flush(ctx)).To(Succeed())
		for name, failed := range map[string]bool{"ping": false, "tasks/get": true} {
			sp, ok := otlp.span(name)
			g.Expect(ok).To(BeTrue(), "the span of %s", name)
			g.Expect(sp.Error).To(Equal(failed), name)
			g.Expect(sp.Attrs).To(And(HaveKeyWithValue("mcp.session.id", s.sid), HaveKeyWithValue("sandbar.account", "default/claude")), name)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// Sessions that end leave nothing of theirs running: the server follows each live
// session (for the requests it answers ahead of the SDK) only until it ends.
func TestSessionsThatEndLeaveNothingRunning(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	connect(t, url, token, nil).Close() // the server's own goroutines, once
	base := runtime.NumGoroutine()
	for range 40 {
		cs, _ := connectRecording(t, url, token)
		g.Expect(cs.Ping(context.Background(), nil)).To(Succeed())
		g.Expect(cs.Close()).To(Succeed())
	}
	g.Eventually(runtime.NumGoroutine).WithTimeout(timeout).WithPolling(poll).Should(BeNumerically("<", base+20),
		"40 sessions opened and closed")
}
