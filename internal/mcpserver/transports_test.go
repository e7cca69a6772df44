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
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// seedCurlBody is the body of the seed's curl example (sandbar-mcp-server.txt).
const seedCurlBody = `{
"jsonrpc": "2.0",
"id": 1,
"method": "initialize",
"params": {
"protocolVersion": "2025-11-25",
"clientInfo": {"name": "curl", "version": "1.0"}
}
}`

// plainPost posts a body with only the headers given (and the bearer token): no
// Accept unless the headers name one.
func plainPost(t *testing.T, url, body string, headers map[string]string) (reply, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return reply{StatusCode: resp.StatusCode, Header: resp.Header}, b
}

// The seed's curl example works as written: a POST without Accept (or with curl's
// */*, or application/json alone) gets one JSON-RPC response as application/json,
// and the session it opened goes on the same way.
func TestSeedCurlGetsPlainJSON(t *testing.T) {
	for _, accept := range []string{"", "*/*", "application/json"} {
		t.Run("accept "+accept, func(t *testing.T) {
			g := NewWithT(t)
			headers := map[string]string{}
			if accept != "" {
				headers["Accept"] = accept
			}
			resp, body := plainPost(t, mcpURL, seedCurlBody, headers)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
			var init struct {
				JSONRPC string `json:"jsonrpc"`
				ID      int    `json:"id"`
				Result  struct {
					ProtocolVersion string                     `json:"protocolVersion"`
					Capabilities    map[string]json.RawMessage `json:"capabilities"`
					ServerInfo      struct{ Name string }      `json:"serverInfo"`
				} `json:"result"`
			}
			g.Expect(json.Unmarshal(body, &init)).To(Succeed(), "the body is one JSON value: %s", body)
			g.Expect(init.JSONRPC).To(Equal("2.0"))
			g.Expect(init.ID).To(Equal(1))
			g.Expect(init.Result.ProtocolVersion).To(Equal("2025-11-25"))
			g.Expect(init.Result.ServerInfo.Name).To(Equal("sandbar"))
			g.Expect(init.Result.Capabilities).To(HaveKey("tools"))
			sid := resp.Header.Get("Mcp-Session-Id")
			g.Expect(sid).NotTo(BeEmpty(), "the session id comes with the JSON answer")

			session := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
			if accept != "" {
				session["Accept"] = accept
			}
			resp, body = plainPost(t, mcpURL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
			g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted), string(body))

			resp, body = plainPost(t, mcpURL, `{"jsonrpc":"2.0","id":"two","method":"tools/list"}`, session)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
			var list struct {
				ID     string `json:"id"`
				Result struct {
					Tools []struct{ Name string } `json:"tools"`
				} `json:"result"`
			}
			g.Expect(json.Unmarshal(body, &list)).To(Succeed(), "the body is one JSON value: %s", body)
			g.Expect(list.ID).To(Equal("two"))
			g.Expect(list.Result.Tools).To(ContainElement(HaveField("Name", "sandbar_entity_create")))

			// A JSON-RPC error is JSON too; an unknown session is the handler's 404.
			resp, body = plainPost(t, mcpURL, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"sandbar://nowhere"}}`, session)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
			var rpcErr struct {
				ID    int                 `json:"id"`
				Error *struct{ Code int } `json:"error"`
			}
			g.Expect(json.Unmarshal(body, &rpcErr)).To(Succeed(), "the body is one JSON value: %s", body)
			g.Expect(rpcErr.ID).To(Equal(3))
			g.Expect(rpcErr.Error).NotTo(BeNil(), string(body))
			session["Mcp-Session-Id"] = "not-a-session"
			resp, _ = plainPost(t, mcpURL, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, session)
			g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
		})
	}
}

// A client that accepts a stream still gets one.
func TestStreamingClientsStillGetSSE(t *testing.T) {
	resp, body := plainPost(t, mcpURL, seedCurlBody, map[string]string{"Accept": "application/json, text/event-stream"})
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	NewWithT(t).Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	NewWithT(t).Expect(string(body)).To(ContainSubstring(`data: {"jsonrpc":"2.0","id":1,"result":`))
}

// legacyURL is the legacy HTTP+SSE endpoint of a server whose /mcp is url.
func legacyURL(url string) string { return url + "/sse" }

// connectSSE opens an MCP session over the legacy HTTP+SSE transport with the Go
// SDK's client.
func connectSSE(t *testing.T, url, tok string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-sse-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{
		Endpoint:   legacyURL(url),
		HTTPClient: &http.Client{Transport: testenv.Bearer{Token: tok}},
	}, nil)
	if err != nil {
		t.Fatalf("connecting over SSE: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// spaceBoot is the SpaceBoot key/name of the default namespace, as an object.
func spaceBoot(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot"})
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

func deleteBootLater(t *testing.T, name string) {
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), spaceBoot(name)); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting SpaceBoot %s: %v", name, err)
		}
	})
}

// A client that speaks only the legacy HTTP+SSE transport lists and calls the same
// tools at /mcp/sse.
func TestLegacySSEClientListsAndCallsTools(t *testing.T) {
	g := NewWithT(t)
	cs := connectSSE(t, mcpURL, token)
	g.Expect(cs.InitializeResult().ServerInfo.Name).To(Equal("sandbar"))
	g.Expect(listTools(t, cs)).To(HaveKey("sandbar_class_zorp_SpaceBoot"))

	name := unique("sse-boot")
	deleteBootLater(t, name)
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "SSE Boot", "price": 2, "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	u := spaceBoot(name)
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u)).To(Succeed())
	g.Expect(u.Object["spec"]).To(HaveKeyWithValue("name", "SSE Boot"))
}

// legacyStream is a raw HTTP+SSE session: its stream's events and the endpoint it
// named.
type legacyStream struct {
	t        *testing.T
	endpoint string
	messages chan json.RawMessage
	id       atomic.Int64
	// others are the ids of the responses call passed over.
	others []string
}

// openLegacy opens a stream at a legacy SSE URL with a token ("" for none); it
// returns the response when the server refuses.
func openLegacy(t *testing.T, sseURL, tok string) (*legacyStream, reply) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sseURL, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	if resp.StatusCode != http.StatusOK {
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return nil, reply{StatusCode: resp.StatusCode, Header: resp.Header}
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	s := &legacyStream{t: t, messages: make(chan json.RawMessage, 100)}
	endpoint := make(chan string, 1)
	go func() {
		defer close(s.messages)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		var event string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				if event == "endpoint" {
					endpoint <- v
				} else {
					s.messages <- json.RawMessage(v)
				}
			}
		}
	}()
	select {
	case e := <-endpoint:
		base, _ := url.Parse(sseURL)
		ref, err := base.Parse(e)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		s.endpoint = ref.String()
	case <-time.After(timeout):
		t.Fatal("no endpoint event")
	}
	return s, reply{StatusCode: resp.StatusCode, Header: resp.Header}
}

// streamLegacy opens a stream that the server must accept.
func streamLegacy(t *testing.T, sseURL, tok string) *legacyStream {
	t.Helper()
	s, r := openLegacy(t, sseURL, tok)
	if s == nil {
		t.Fatalf("opening the legacy stream %s: HTTP %d", sseURL, r.StatusCode)
	}
	return s
}

// post sends a message to the session's endpoint with a token.
func (s *legacyStream) post(tok string, msg map[string]any) (int, string) {
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, s.endpoint, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// call sends a request with a token and waits for its response on the stream.
func (s *legacyStream) call(tok, method string, params any) rpcResponse {
	s.t.Helper()
	id := s.id.Add(1)
	code, body := s.post(tok, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	NewWithT(s.t).Expect(code).To(Equal(http.StatusAccepted), body)
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-s.messages:
			if !ok {
				s.t.Fatalf("the stream ended before the response to %s", method)
			}
			var msg struct {
				ID json.RawMessage `json:"id"`
				rpcResponse
			}
			if json.Unmarshal(m, &msg) == nil && string(msg.ID) == jsonNumber(float64(id)) {
				return msg.rpcResponse
			}
			if len(msg.ID) > 0 {
				s.others = append(s.others, string(msg.ID))
			}
		case <-deadline:
			s.t.Fatalf("no response to %s", method)
		}
	}
}

// initialize opens the MCP session on the stream.
func (s *legacyStream) initialize(tok string) {
	s.t.Helper()
	res := s.call(tok, "initialize", map[string]any{"protocolVersion": "2024-11-05", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-sse", "version": "1"}})
	NewWithT(s.t).Expect(res.Error).To(BeNil())
	code, body := s.post(tok, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	NewWithT(s.t).Expect(code).To(Equal(http.StatusAccepted), body)
}

// The legacy transport is behind the same authentication as /mcp: no token, no
// stream and no message.
func TestLegacySSEWithoutTokenGets401(t *testing.T) {
	g := NewWithT(t)
	_, resp := openLegacy(t, legacyURL(mcpURL), "")
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(resp.Header.Get("WWW-Authenticate")).To(Equal(`Bearer realm="sandbar-mcp"`))

	s := streamLegacy(t, legacyURL(mcpURL), token)
	code, _ := s.post("", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	g.Expect(code).To(Equal(http.StatusUnauthorized))
}

// A legacy session answers only the account that opened it: another account's
// token, posting to its endpoint, is refused and creates nothing.
func TestLegacySSESessionRefusesAnotherAccountsToken(t *testing.T) {
	g := NewWithT(t)
	_, otherTok := newAccount(t, unique("intruder"), metav1alpha1.Permissions{})
	s := streamLegacy(t, legacyURL(mcpURL), token)
	s.initialize(token)

	name := unique("hijack-boot")
	deleteBootLater(t, name)
	code, body := s.post(otherTok, map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": map[string]any{
		"name": "sandbar_class_zorp_SpaceBoot", "arguments": map[string]any{"name": "Hijack", "metadata": map[string]any{"name": name}}}})
	g.Expect(code).To(Equal(http.StatusForbidden))
	g.Expect(body).To(ContainSubstring("session user mismatch"))
	u := spaceBoot(name)
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing was created: %v", err)

	// The owner's session goes on.
	res := s.call(token, "tools/list", map[string]any{})
	g.Expect(res.Error).To(BeNil())
}

// The legacy transport counts against the account's rate limit, as /mcp does.
func TestLegacySSEIsRateLimited(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{RateLimit: 0.01, RateBurst: 2})
	s := streamLegacy(t, legacyURL(url), token)
	res := s.call(token, "initialize", map[string]any{"protocolVersion": "2024-11-05", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-sse", "version": "1"}})
	g.Expect(res.Error).To(BeNil())
	code, body := s.post(token, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	g.Expect(code).To(Equal(http.StatusTooManyRequests), body)
	g.Expect(body).To(ContainSubstring("rate limit exceeded"))
}

// Locking an account out closes its legacy sessions as it closes its /mcp ones.
func TestLockedOutAccountsLegacyStreamStops(t *testing.T) {
	g := NewWithT(t)
	sa, tok := newAccount(t, unique("sse-streamer"), metav1alpha1.Permissions{})
	cs := connectSSE(t, mcpURL, tok)
	_, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	ended := make(chan struct{})
	go func() { _ = cs.Wait(); close(ended) }()

	g.Expect(k8s.Patch(context.Background(), sa, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"active":false}}`)))).To(Succeed())
	g.Eventually(ended).WithTimeout(timeout).Should(BeClosed(), "the server ends the locked-out session")
}

// A legacy SSE session is a session whatever revision its requests claim: one whose
// messages carry the stateless revision's _meta (which the SDK serves on any
// transport), or whose initialize asks for that revision, is closed by its account's
// lock-out (deactivation or a new key) within a few seconds, as every other session is.
func TestLockedOutAccountsLegacyStreamStopsWhateverRevisionItsRequestsClaim(t *testing.T) {
	meta := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    revision2026,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-sse", "version": "1"},
	}}
	for _, tc := range []struct {
		name string
		// open makes the session's requests on the stream.
		open func(g Gomega, s *legacyStream, tok string)
		// lock locks the account out.
		lock func(t *testing.T, sa *metav1alpha1.ServiceAccount)
	}{
		{"stateless _meta, deactivated", func(g Gomega, s *legacyStream, tok string) {
			for _, method := range []string{"tools/list", "resources/list"} {
				res := s.call(tok, method, meta)
				g.Expect(res.Error).To(BeNil(), method)
			}
		}, deactivate},
		{"stateless _meta, a new key", func(g Gomega, s *legacyStream, tok string) {
			res := s.call(tok, "tools/list", meta)
			g.Expect(res.Error).To(BeNil())
		}, reissue},
		{"initialize asking for the stateless revision, deactivated", func(g Gomega, s *legacyStream, tok string) {
			res := s.call(tok, "initialize", map[string]any{"protocolVersion": revision2026, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "raw-sse", "version": "1"}})
			g.Expect(res.Error).To(BeNil())
			code, body := s.post(tok, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
			g.Expect(code).To(Equal(http.StatusAccepted), body)
			res = s.call(tok, "tools/list", nil)
			g.Expect(res.Error).To(BeNil())
		}, deactivate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa, tok := newAccount(t, unique("sse-meta"), metav1alpha1.Permissions{})
			s := streamLegacy(t, legacyURL(mcpURL), tok)
			tc.open(NewWithT(t), s, tok)
			ended := make(chan struct{})
			go func() {
				for range s.messages {
				}
				close(ended)
			}()
			tc.lock(t, sa)
			NewWithT(t).Eventually(ended).WithTimeout(5*time.Second).Should(BeClosed(), "the server ends the locked-out session's stream")
		})
	}
}

// A Streamable HTTP session whose initialize asked for the stateless revision (the
// SDK answers with a session-based one) is closed by a lock-out too: its GET stream
// ends.
func TestLockedOutSessionThatAskedForTheStatelessRevisionStops(t *testing.T) {
	g := NewWithT(t)
	sa, tok := newAccount(t, unique("asked-2026"), metav1alpha1.Permissions{})
	send := func(method string, body map[string]any, session, revision string) *http.Response {
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, mcpURL, r)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if method == http.MethodGet {
			req.Header.Set("Accept", "text/event-stream")
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", revision)
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		return resp
	}
	resp := send(http.MethodPost, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": revision2026, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}}, "", "")
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	session := resp.Header.Get("Mcp-Session-Id")
	g.Expect(session).NotTo(BeEmpty())
	for _, msg := range []map[string]any{
		{"jsonrpc": "2.0", "method": "notifications/initialized"},
		{"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
	} {
		resp := send(http.MethodPost, msg, session, sessionRevision)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(BeElementOf(http.StatusOK, http.StatusAccepted), string(body))
	}
	stream := send(http.MethodGet, nil, session, sessionRevision)
	defer func() { _ = stream.Body.Close() }()
	g.Expect(stream.StatusCode).To(Equal(http.StatusOK))
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stream.Body)
		close(ended)
	}()

	deactivate(t, sa)
	g.Eventually(ended).WithTimeout(5*time.Second).Should(BeClosed(), "the server ends the locked-out session's stream")
}

// deactivate sets an account's spec.active to false.
func deactivate(t *testing.T, sa *metav1alpha1.ServiceAccount) {
	t.Helper()
	NewWithT(t).Expect(k8s.Patch(context.Background(), sa,
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"active":false}}`)))).To(Succeed())
}

// reissue gives an account a new key, which locks the old one out.
func reissue(t *testing.T, sa *metav1alpha1.ServiceAccount) {
	t.Helper()
	_, err := apikey.Issue(context.Background(), k8s, sa.Namespace, sa.Name)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}

// A task-augmented tools/call on the legacy transport answers with a task, which
// tasks/get follows on the same stream.
func TestLegacySSETaskAugmentedCall(t *testing.T) {
	g := NewWithT(t)
	s := streamLegacy(t, legacyURL(mcpURL), token)
	s.initialize(token)
	res := s.call(token, "tools/call", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}, "task": map[string]any{"ttl": 600000}})
	g.Expect(res.Error).To(BeNil())
	var created struct {
		Task map[string]any `json:"task"`
	}
	g.Expect(json.Unmarshal(res.Result, &created)).To(Succeed())
	id, _ := created.Task["taskId"].(string)
	g.Expect(id).To(HavePrefix("task-"), string(res.Result))
	g.Eventually(func() any {
		got := s.call(token, "tasks/get", map[string]any{"taskId": id})
		var task map[string]any
		_ = json.Unmarshal(got.Result, &task)
		return task["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))
}

// The TypeScript SDK's SSEClientTransport connects to /mcp/sse with the bearer
// token, lists tools and calls one; without a token it gets 401
// (hack/ts-client/sse.mjs).
func TestTypeScriptSDKSSEClient(t *testing.T) {
	tsClient(t)
	name := unique("ts-sse-boot")
	deleteBootLater(t, name)
	runScript(t, "sse.mjs", "MCP_URL="+legacyURL(mcpURL), "MCP_TOKEN="+token, "MCP_NAME="+name)

	u := spaceBoot(name)
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u)).To(Succeed(), "the script created %s", name)
	NewWithT(t).Expect(u.Object["spec"]).To(HaveKeyWithValue("name", "TS SSE Boot"))
}

// The OAuth route serves the legacy transport too (its path + /sse), to OAuth
// users only, each session to the user who opened it.
func TestOAuthRouteServesLegacySSE(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{})
	alice, bob := unique("alice"), unique("bob")
	cs := connectSSE(t, s.oauth, s.token(alice, nil))
	_, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())

	_, resp := openLegacy(t, legacyURL(s.oauth), token)
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "an API key is not an OAuth access token")

	raw := streamLegacy(t, legacyURL(s.oauth), s.token(alice, nil))
	code, body := raw.post(s.token(bob, nil), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	g.Expect(code).To(Equal(http.StatusForbidden), body)
}

// Calls on the legacy transport are audited as on /mcp: the account, the tool and
// the JSON-RPC id; a stream opened without a token is an audited refusal.
func TestLegacySSECallsAreAudited(t *testing.T) {
	g := NewWithT(t)
	url, path := auditedServer(t, false)
	_, resp := openLegacy(t, legacyURL(url), "")
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))

	s := streamLegacy(t, legacyURL(url), token)
	s.initialize(token)
	name := unique("audited-boot")
	deleteBootLater(t, name)
	res := s.call(token, "tools/call", map[string]any{"name": "sandbar_class_zorp_SpaceBoot",
		"arguments": map[string]any{"name": "Audited", "metadata": map[string]any{"name": name}}})
	g.Expect(res.Error).To(BeNil())
	g.Expect(string(res.Result)).NotTo(ContainSubstring(`"isError":true`))
	callID := strconv.FormatInt(s.id.Load(), 10)

	g.Eventually(func(g Gomega) {
		events, raw := readAudit(t, path)
		call := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_class_zorp_SpaceBoot" })
		g.Expect(call).NotTo(BeNil(), raw)
		g.Expect(call.Outcome).To(Equal(telemetry.Allowed))
		g.Expect(call.Account).To(Equal(&telemetry.Ref{Namespace: "default", Name: "claude"}))
		g.Expect(call.RequestID).To(Equal(callID))
		refused := findEvent(events, func(e telemetry.Event) bool { return e.Method == "http GET" })
		g.Expect(refused).NotTo(BeNil(), raw)
		g.Expect(refused.Reason).To(Equal("no bearer token"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// The legacy transport keeps /mcp's edge: a loopback listener refuses other host
// names (DNS rebinding), cross-origin browser posts get 403, and a body over the
// limit gets 413; none of them reaches the session.
func TestLegacySSEKeepsTheEdgeChecks(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{MaxRequestBytes: 4096})
	req, err := http.NewRequest(http.MethodGet, legacyURL(url), nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Host = "rebound.example.com"
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	// A stream opened by mistake would not end: read only a refusal.
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "a stream was opened")
	body, _ := io.ReadAll(resp.Body)
	g.Expect(string(body)).To(ContainSubstring("invalid Host header"))

	s := streamLegacy(t, legacyURL(url), token)
	s.initialize(token)
	cross, _ := http.NewRequest(http.MethodPost, s.endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":50,"method":"tools/list"}`))
	cross.Header.Set("Content-Type", "application/json")
	cross.Header.Set("Authorization", "Bearer "+token)
	cross.Header.Set("Origin", "https://evil.example.com")
	cross.Header.Set("Sec-Fetch-Site", "cross-site")
	crossResp, err := http.DefaultClient.Do(cross)
	g.Expect(err).NotTo(HaveOccurred())
	defer crossResp.Body.Close()
	g.Expect(crossResp.StatusCode).To(Equal(http.StatusForbidden))

	code, body2 := s.post(token, map[string]any{"jsonrpc": "2.0", "id": 51, "method": "tools/list", "params": map[string]any{"pad": strings.Repeat("x", 5000)}})
	g.Expect(code).To(Equal(http.StatusRequestEntityTooLarge), body2)
	// Neither reached the session: nothing answers them on the stream before the
	// next call's answer.
	res := s.call(token, "ping", map[string]any{})
	g.Expect(res.Error).To(BeNil())
	g.Expect(s.others).NotTo(ContainElements("50", "51"))
}
