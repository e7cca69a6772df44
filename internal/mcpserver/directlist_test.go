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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// sessionLists records the Content-Type of every answer to a tools/list of a
// session: a list answered as it was kept is one JSON body, the SDK's a stream.
type sessionLists struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (l *sessionLists) RoundTrip(r *http.Request) (*http.Response, error) {
	list := false
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		list = bytes.Contains(body, []byte(`"method":"tools/list"`))
	}
	resp, err := l.base.RoundTrip(r)
	if err == nil && list {
		l.mu.Lock()
		l.seen = append(l.seen, resp.Header.Get("Content-Type"))
		l.mu.Unlock()
	}
	return resp, err
}

func (l *sessionLists) answers() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

func connectRecording(t *testing.T, url, tok string) (*mcp.ClientSession, *sessionLists) {
	t.Helper()
	rec := &sessionLists{base: testenv.Bearer{Token: tok}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, rec
}

func toolNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	b, _ := json.Marshal(res.Tools)
	return string(b)
}

// Sessions of one account list their tools from the answer rendered once: the first
// list is the SDK's, every list after it (the same session's or another's) is the
// answer kept, sent whole, the same to the byte; another account's sessions have
// their own.
func TestSessionsListTheirToolsFromTheAnswerKept(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	first, rec := connectRecording(t, url, token)
	want := toolNames(t, first)
	g.Expect(rec.answers()).To(Equal([]string{"text/event-stream"}), "the first list is the SDK's")
	second, rec2 := connectRecording(t, url, token)
	// (Eventually: a catalog change that another test's cleanup makes in between
	// has the next list rendered again.)
	g.Eventually(func() bool {
		a, b := toolNames(t, first), toolNames(t, second)
		ra, rb := rec.answers(), rec2.answers()
		return a == b && strings.HasPrefix(ra[len(ra)-1], "application/json") && strings.HasPrefix(rb[len(rb)-1], "application/json")
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(),
		"a list asked again, in the session and in another of the account, is the answer kept, the same")

	tn := newTenant(t, metav1alpha1.Permissions{Tools: []string{"sandbar_entity_*"}})
	other, _ := connectRecording(t, url, tn.token)
	own := toolNames(t, other)
	g.Expect(own).NotTo(Equal(want))
	g.Expect(own).NotTo(ContainSubstring(`"name":"sandbar_class_`))
	g.Expect(want).To(ContainSubstring(`"name":"sandbar_class_`))
	g.Expect(toolNames(t, first)).To(ContainSubstring(`"name":"sandbar_class_`))
}

// rawList posts a tools/list to a session with a token and returns the status and body.
func rawList(t *testing.T, url, tok, sessionID string) (int, string) {
	t.Helper()
	return rawPost(t, url, tok, sessionID, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`)
}

// rawPost posts a message to a session with a token and returns the status and body.
func rawPost(t *testing.T, url, tok, sessionID, message string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(message))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Mcp-Session-Id", sessionID)
	req.Header.Set("Mcp-Protocol-Version", sessionRevision)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A list answered from the answer kept is answered only where the SDK would answer
// it: not to another account presenting a session's id, not to a session that was
// closed, and never to a session that does not exist. And only to what the SDK reads
// as a list: member names are matched exactly (a ping that also carries a "Method"
// member is a ping), and a message without the JSON-RPC version is refused.
func TestAListKeptIsNotAnsweredWhereTheSDKWouldRefuse(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	owner, _ := connectRecording(t, url, token)
	toolNames(t, owner)
	code, body := rawList(t, url, token, owner.ID())
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(HavePrefix(`{"jsonrpc":"2.0","id":7,"result":{`), "the owner's list is the answer kept")

	code, body = rawPost(t, url, token, owner.ID(), `{"jsonrpc":"2.0","id":8,"method":"ping","Method":"tools/list","params":{}}`)
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`"id":8,"result":{}`), "a ping's answer")
	g.Expect(body).NotTo(ContainSubstring(`"tools"`))
	code, body = rawPost(t, url, token, owner.ID(), `{"id":9,"method":"tools/list","params":{}}`)
	g.Expect(code).To(Equal(http.StatusBadRequest), body)
	g.Expect(body).To(ContainSubstring("version"))
	g.Expect(body).NotTo(ContainSubstring(`"tools"`))

	// The other account's own list is kept too (its session listed it).
	tn := newTenant(t, metav1alpha1.Permissions{})
	toolNames(t, connect(t, url, tn.token, nil))
	code, body = rawList(t, url, tn.token, owner.ID())
	g.Expect(code).To(Equal(http.StatusForbidden), "another account presenting the session's id: %s", body)
	g.Expect(body).NotTo(ContainSubstring(`"tools"`))

	code, body = rawList(t, url, token, "no-such-session")
	g.Expect(code).To(Equal(http.StatusNotFound), body)

	g.Expect(owner.Close()).To(Succeed()) // DELETE
	code, body = rawList(t, url, token, owner.ID())
	g.Expect(code).To(Equal(http.StatusNotFound), "a closed session: %s", body)
}

// A session that only lists its tools, or only pings, is not ended by its idle
// timeout: lists and pings answered ahead of the SDK do not reset the SDK's idle
// timer, so one in every half timeout goes to the SDK.
func TestASessionThatOnlyListsItsToolsOutlivesItsIdleTimeout(t *testing.T) {
	const idle = 2 * time.Second
	url := serve(t, mcpserver.Options{SessionTimeout: idle})
	for _, method := range []string{"tools/list", "ping"} {
		t.Run(method, func(t *testing.T) {
			g := NewWithT(t)
			cs, _ := connectRecording(t, url, token)
			end := time.Now().Add(2*idle + idle/2)
			calls, sdk := 0, 0
			for time.Now().Before(end) {
				code, body := rawPost(t, url, token, cs.ID(), fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":{}}`, method))
				g.Expect(code).To(Equal(http.StatusOK), "the session ended while it called %s: %s", method, body)
				calls++
				if !strings.HasPrefix(body, `{"jsonrpc"`) {
					sdk++ // the SDK's stream
				}
			}
			g.Expect(sdk).To(BeNumerically("<", calls), fmt.Sprintf("some are answered ahead of the SDK: %d of %d went to it", sdk, calls))
			g.Expect(sdk).To(BeNumerically(">", 1), "one in every half timeout goes to the SDK")
		})
	}
}
