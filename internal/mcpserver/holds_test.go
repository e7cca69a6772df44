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
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sessions"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
)

// What clients hold open in a replica (sessions, streams) is bounded per account,
// per OAuth person and in all: the request that would open one more gets 429 with
// Retry-After and which limit, before anything is opened, however many come at once.

// opened is the answer to a request that opens a session or a stream: a stream the
// server accepted stays open until close.
type opened struct {
	status int
	header http.Header
	body   string
	// session is the id of the session an initialize opened.
	session string
	close   func()
	err     error
}

// holding is a request that opens something: a session (an initialize, answered
// whole) or a stream (left open once accepted).
type holding struct {
	*http.Request
	stream bool
}

// open sends a request and keeps what it opens: an accepted stream's response is
// left open (its headers have come), anything else is read whole. It is safe in any
// goroutine: it reports failures in err, not through t.
func open(t *testing.T, h holding) opened {
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := http.DefaultClient.Do(h.WithContext(ctx))
	if err != nil {
		cancel()
		return opened{err: err, close: func() {}}
	}
	if h.stream && resp.StatusCode == http.StatusOK {
		closeIt := func() { cancel(); _ = resp.Body.Close() }
		t.Cleanup(closeIt)
		return opened{status: resp.StatusCode, header: resp.Header, close: closeIt}
	}
	defer cancel()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return opened{status: resp.StatusCode, header: resp.Header, body: string(b), session: resp.Header.Get("Mcp-Session-Id"),
		close: func() {}, err: err}
}

// initializeReq is an initialize of the session-based revision with a token.
func initializeReq(url, tok string) holding {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+
		sessionRevision+`","capabilities":{},"clientInfo":{"name":"holder","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return holding{Request: req}
}

// listenReq is a subscriptions/listen of the stateless revision to tool list
// changes, which stays open until the client goes.
func listenReq(url, tok string) holding {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"toolsListChanged": true},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    revision2026,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "holder", "version": "1"},
		}}})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", revision2026)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	return holding{Request: req, stream: true}
}

// legacyReq opens a legacy SSE stream (and its session).
func legacyReq(url, tok string) holding {
	req, _ := http.NewRequest(http.MethodGet, legacyURL(url), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	return holding{Request: req, stream: true}
}

// sessionStreamReq opens the GET stream of a session.
func sessionStreamReq(url, tok, session string) holding {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", sessionRevision)
	return holding{Request: req, stream: true}
}

// deleteSession ends a session.
func deleteSession(t *testing.T, url, tok, session string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusNoContent))
}

// atOnce sends n requests together (each made by req) and returns their answers.
func atOnce(t *testing.T, n int, req func() holding) []opened {
	t.Helper()
	out := make([]opened, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range out {
		r := req()
		wg.Go(func() {
			<-start
			out[i] = open(t, r)
		})
	}
	close(start)
	wg.Wait()
	for _, o := range out {
		NewWithT(t).Expect(o.err).NotTo(HaveOccurred())
	}
	return out
}

// byStatus splits answers into those accepted (200) and those refused (429); it
// fails on any other.
func byStatus(t *testing.T, answers []opened) (accepted, refused []opened) {
	t.Helper()
	for _, o := range answers {
		switch o.status {
		case http.StatusOK:
			accepted = append(accepted, o)
		case http.StatusTooManyRequests:
			refused = append(refused, o)
		default:
			t.Fatalf("HTTP %d: %s", o.status, o.body)
		}
	}
	return accepted, refused
}

// expectRefusedAt checks a refusal: 429, Retry-After, and a JSON body that names the
// limit and its value.
func expectRefusedAt(g Gomega, o opened, limit string, max int) {
	g.Expect(o.status).To(Equal(http.StatusTooManyRequests), o.body)
	g.Expect(o.header.Get("Retry-After")).To(Equal(strconv.Itoa(sessions.HoldRetryAfter)))
	g.Expect(o.header.Get("Content-Type")).To(Equal("application/json"))
	var body struct {
		Error string `json:"error"`
		Limit string `json:"limit"`
		Max   int    `json:"max"`
	}
	g.Expect(json.Unmarshal([]byte(o.body), &body)).To(Succeed(), o.body)
	g.Expect(body.Limit).To(Equal(limit))
	g.Expect(body.Max).To(Equal(max))
	g.Expect(body.Error).To(HavePrefix("too many open"))
}

// holdRefusals is the count of refusals at a limit, in the registry the manager's
// metrics endpoint serves.
func holdRefusals(t *testing.T, limit string) float64 {
	return counter(t, "sandbar_mcp_hold_refusals_total", "limit", limit)
}

// counter is the value of a counter with a label's value, in the registry the
// manager's metrics endpoint serves (0: not counted yet).
func counter(t testing.TB, name, label, value string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Ten initializes of one account at once, with room for three sessions: three
// sessions open and seven get 429 with Retry-After, are counted and audited. Closing
// a session lets one more in, and no more; another account opens its own meanwhile.
func TestConcurrentInitializesOpenNoMoreSessionsThanTheAccountMay(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := telemetry.OpenSink(path)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sink.Close() })
	tel, err := telemetry.New(context.Background(), telemetry.Config{Audit: sink})
	g.Expect(err).NotTo(HaveOccurred())
	url := serve(t, mcpserver.Options{MaxSessionsPerAccount: 3, Telemetry: tel})
	before := holdRefusals(t, "max-sessions-per-account")

	accepted, refused := byStatus(t, atOnce(t, 10, func() holding { return initializeReq(url, token) }))
	g.Expect(accepted).To(HaveLen(3))
	g.Expect(refused).To(HaveLen(7))
	for _, o := range accepted {
		g.Expect(o.session).NotTo(BeEmpty())
	}
	for _, o := range refused {
		expectRefusedAt(g, o, "max-sessions-per-account", 3)
		g.Expect(o.session).To(BeEmpty())
	}
	g.Expect(holdRefusals(t, "max-sessions-per-account") - before).To(BeNumerically(">=", 7))
	g.Eventually(func(g Gomega) {
		events, raw := readAudit(t, path)
		n := 0
		for _, e := range events {
			if e.Outcome == telemetry.Denied && e.Method == "initialize" && strings.Contains(e.Reason, "max-sessions-per-account") {
				g.Expect(e.Account).To(Equal(&telemetry.Ref{Namespace: "default", Name: "claude"}), raw)
				g.Expect(e.Client).NotTo(BeEmpty())
				n++
			}
		}
		g.Expect(n).To(Equal(7), raw)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// Another account is not held to this one's sessions.
	other := unique("holder")
	_, otherTok := newAccount(t, other, metav1alpha1.Permissions{Tools: []string{"*"}})
	g.Expect(open(t, initializeReq(url, otherTok)).status).To(Equal(http.StatusOK))

	// A session closed gives its room back: one more opens, and no more.
	expectRefusedAt(g, open(t, initializeReq(url, token)), "max-sessions-per-account", 3)
	deleteSession(t, url, token, accepted[0].session)
	g.Eventually(func() int { return open(t, initializeReq(url, token)).status }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(http.StatusOK))
	expectRefusedAt(g, open(t, initializeReq(url, token)), "max-sessions-per-account", 3)

	// A POST without a session that is not an initialize makes a session the SDK
	// closes at once: it holds no room.
	for range 5 {
		h := initializeReq(url, otherTok)
		h.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		h.ContentLength = -1
		g.Expect(open(t, h).status).NotTo(Equal(http.StatusTooManyRequests))
	}
	g.Eventually(func() int { return open(t, initializeReq(url, otherTok)).status }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(http.StatusOK))
}

// Ten subscriptions/listen streams of one account at once, with room for three
// streams: three open and seven get 429. Legacy SSE streams and a session's GET
// stream count against the same limit; a stream closed lets one more in; another
// account opens its own meanwhile.
func TestConcurrentStreamsOpenNoMoreThanTheAccountMay(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{MaxStreamsPerAccount: 3})
	accepted, refused := byStatus(t, atOnce(t, 10, func() holding { return listenReq(url, token) }))
	g.Expect(accepted).To(HaveLen(3))
	g.Expect(refused).To(HaveLen(7))
	for _, o := range refused {
		expectRefusedAt(g, o, "max-streams-per-account", 3)
	}
	expectRefusedAt(g, open(t, legacyReq(url, token)), "max-streams-per-account", 3)

	// A session opens (sessions are not streams), but its GET stream waits for room.
	init := open(t, initializeReq(url, token))
	g.Expect(init.status).To(Equal(http.StatusOK), init.body)
	expectRefusedAt(g, open(t, sessionStreamReq(url, token, init.session)), "max-streams-per-account", 3)

	other := unique("streamer")
	_, otherTok := newAccount(t, other, metav1alpha1.Permissions{Tools: []string{"*"}})
	g.Expect(open(t, listenReq(url, otherTok)).status).To(Equal(http.StatusOK))
	g.Expect(open(t, legacyReq(url, otherTok)).status).To(Equal(http.StatusOK))

	// Ten legacy streams at once with room for one (after a listen closes): one opens.
	accepted[0].close()
	g.Eventually(func() int {
		got := atOnce(t, 10, func() holding { return legacyReq(url, token) })
		n := 0
		for _, o := range got {
			if o.status == http.StatusOK {
				n++
			}
		}
		return n
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(1))
	expectRefusedAt(g, open(t, listenReq(url, token)), "max-streams-per-account", 3)

	// Closing another lets the session's GET stream in.
	accepted[1].close()
	g.Eventually(func() int { return open(t, sessionStreamReq(url, token, init.session)).status }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal(http.StatusOK))
	expectRefusedAt(g, open(t, listenReq(url, token)), "max-streams-per-account", 3)
}

// The replica's own limits hold across accounts: with room for three sessions and
// two streams in all, two accounts together open no more, a legacy stream (which is
// a session too) waits for a session's room, and what one closes another may use.
func TestTheReplicaCapsSessionsAndStreamsInAll(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{MaxSessions: 3, MaxStreams: 2, MaxSessionsPerAccount: 10, MaxStreamsPerAccount: 10})
	other := unique("sharer")
	_, otherTok := newAccount(t, other, metav1alpha1.Permissions{Tools: []string{"*"}})

	// Both accounts at once, in turns.
	toks := []string{token, otherTok}
	n := 0
	answers := atOnce(t, 10, func() holding { n++; return initializeReq(url, toks[n%2]) })
	accepted, refused := byStatus(t, answers)
	g.Expect(accepted).To(HaveLen(3))
	g.Expect(refused).To(HaveLen(7))
	for _, o := range refused {
		expectRefusedAt(g, o, "max-sessions", 3)
	}
	expectRefusedAt(g, open(t, legacyReq(url, otherTok)), "max-sessions", 3)

	// A session closed, whichever account's, makes room for either.
	for i, o := range answers {
		if o.status == http.StatusOK {
			deleteSession(t, url, toks[(i+1)%2], o.session)
			break
		}
	}
	g.Eventually(func() int { return open(t, initializeReq(url, otherTok)).status }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(http.StatusOK))
	expectRefusedAt(g, open(t, initializeReq(url, token)), "max-sessions", 3)

	open2, refused := byStatus(t, atOnce(t, 6, func() holding { n++; return listenReq(url, toks[n%2]) }))
	g.Expect(open2).To(HaveLen(2))
	for _, o := range refused {
		expectRefusedAt(g, o, "max-streams", 2)
	}
	open2[0].close()
	g.Eventually(func() int { return open(t, listenReq(url, otherTok)).status }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(http.StatusOK))
	expectRefusedAt(g, open(t, listenReq(url, token)), "max-streams", 2)
}

// OAuth people share no account object's room: each person is held to the limit on
// their own, on the OAuth route, and the refusal speaks to the person.
func TestEachOAuthPersonHoldsSessionsOfTheirOwn(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServerWith(t, mcpserver.Options{MaxSessionsPerAccount: 2, MaxStreamsPerAccount: 1})
	alice, bob := s.token(unique("alice"), nil), s.token(unique("bob"), nil)

	accepted, refused := byStatus(t, atOnce(t, 6, func() holding { return initializeReq(s.oauth, alice) }))
	g.Expect(accepted).To(HaveLen(2))
	g.Expect(refused).To(HaveLen(4))
	for _, o := range refused {
		expectRefusedAt(g, o, "max-sessions-per-account", 2)
		g.Expect(o.body).To(ContainSubstring("one person"))
	}
	accepted, _ = byStatus(t, atOnce(t, 6, func() holding { return initializeReq(s.oauth, bob) }))
	g.Expect(accepted).To(HaveLen(2))

	// A legacy stream is a session too; streams are held per person as well.
	expectRefusedAt(g, open(t, legacyReq(s.oauth, alice)), "max-sessions-per-account", 2)
	g.Expect(open(t, listenReq(s.oauth, alice)).status).To(Equal(http.StatusOK))
	expectRefusedAt(g, open(t, listenReq(s.oauth, alice)), "max-streams-per-account", 1)
	g.Expect(open(t, listenReq(s.oauth, bob)).status).To(Equal(http.StatusOK))
}

// A legacy SSE session that gets no message for the idle timeout ends with its
// stream, as a Streamable HTTP session does, and gives its room back.
func TestIdleLegacySSESessionsExpire(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{SessionTimeout: 2 * time.Second, MaxStreamsPerAccount: 1})
	s := streamLegacy(t, legacyURL(url), token)
	s.initialize(token)
	ended := make(chan struct{})
	go func() {
		for range s.messages {
		}
		close(ended)
	}()
	g.Eventually(ended).WithTimeout(timeout).Should(BeClosed(), "the idle stream ends")
	g.Eventually(func() int { return open(t, legacyReq(url, token)).status }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(http.StatusOK))
}

// subscriptions/listen belongs to the stateless revision: a session of an older one,
// which the SDK would park it in as a stream nothing counts, is told there is no
// such method.
func TestSubscriptionsListenInASessionIsRefused(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{MaxStreamsPerAccount: 1})
	s := newRawSession(t, url, token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.sid)
	req.Header.Set("Mcp-Protocol-Version", sessionRevision)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred(), "the answer comes, the request is not parked: %s", answer)
	g.Expect(string(answer)).To(ContainSubstring(`"code":-32601`))
	g.Expect(open(t, listenReq(url, token)).status).To(Equal(http.StatusOK), "the stateless revision's listen is served")
}
