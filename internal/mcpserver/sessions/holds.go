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

package sessions

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
)

var (
	holdRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbar_mcp_hold_refusals_total",
		Help: "Sessions and streams refused with 429, by the limit they would have passed (the flag that sets it).",
	}, []string{"limit"})
	openSessions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sandbar_mcp_open_sessions",
		Help: "MCP sessions open in this replica (the session-based revisions and legacy SSE).",
	})
	openStreams = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sandbar_mcp_open_streams",
		Help: "Long-lived MCP streams open in this replica (sessions' GET streams, legacy SSE, subscriptions/listen).",
	})
)

func init() { metrics.Registry.MustRegister(holdRefusals, openSessions, openStreams) }

// HoldRetryAfter is the Retry-After, in seconds, of a session or a stream refused at
// a limit: a slot frees when one of the holder's sessions or streams ends, which
// nothing announces.
const HoldRetryAfter = 30

// HoldLimits bound what clients hold open in one replica (0: no limit): sessions per
// holder and in all, and streams per holder and in all.
type HoldLimits struct {
	SessionsPerAccount, Sessions int
	StreamsPerAccount, Streams   int
}

// Holds counts what clients hold open in one replica, and refuses past its limits
// with 429: sessions (of the session-based revisions, made by an initialize, and of
// legacy SSE) and streams (a session's GET stream, a legacy SSE stream, the
// stateless revision's subscriptions/listen). Each costs memory for as long as it is
// open, whether or not it is used: an idle session about 13.5 KiB, a stream 40 to
// 70 KiB (BenchmarkIdleSessions, BenchmarkIdleStreams).
//
// The holder is the ServiceAccount (namespace/name), or for an OAuth token the person
// it names (its user): every person is held to the limit on their own.
//
// A slot is taken, under the same lock as the check, when the request that would
// open a session or a stream comes in, before the SDK makes anything: concurrent
// requests never pass a limit. It is given back when what it opened ends (a session
// when the SDK closes it: DELETE, the idle timeout, a lock-out; a stream when its
// request ends), or at once when nothing opened.
type Holds struct {
	sessions, streams tally
	// refused, when set, is told of each refusal (the audit).
	refused func(r *http.Request, method, reason string)
}

// NewHolds counts against limits; refused, when set, is told of each refusal with
// the request (its token info holds the account), the MCP method (or "http GET" for
// a legacy stream) and what the client is told.
func NewHolds(limits HoldLimits, refused func(r *http.Request, method, reason string)) *Holds {
	return &Holds{
		sessions: tally{kind: "session", perHolder: limits.SessionsPerAccount, all: limits.Sessions,
			holderFlag: "max-sessions-per-account", allFlag: "max-sessions", held: map[string]int{}, open: openSessions},
		streams: tally{kind: "stream", perHolder: limits.StreamsPerAccount, all: limits.Streams,
			holderFlag: "max-streams-per-account", allFlag: "max-streams", held: map[string]int{}, open: openStreams},
		refused: refused,
	}
}

// tally is the count of one kind of thing held, by holder and in all.
type tally struct {
	kind                string
	perHolder, all      int
	holderFlag, allFlag string
	open                prometheus.Gauge

	mu    sync.Mutex
	held  map[string]int
	total int
}

// limit is a limit a request would pass.
type limit struct {
	kind, flag string
	max        int
	// holder: the holder's limit; else the replica's.
	holder bool
}

// take takes a slot for holder, or says which limit is reached: the holder's first.
func (t *tally) take(holder string) *limit {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.perHolder > 0 && t.held[holder] >= t.perHolder {
		return &limit{kind: t.kind, flag: t.holderFlag, max: t.perHolder, holder: true}
	}
	if t.all > 0 && t.total >= t.all {
		return &limit{kind: t.kind, flag: t.allFlag, max: t.all}
	}
	t.held[holder]++
	t.total++
	t.open.Inc()
	return nil
}

// give gives back a slot of holder's.
func (t *tally) give(holder string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.held[holder]; n > 1 {
		t.held[holder] = n - 1
	} else {
		delete(t.held, holder)
	}
	t.total--
	t.open.Dec()
}

// Holder is the key an account's sessions and streams are counted under: an OAuth
// person's user ("person " and the user name: no ServiceAccount key has a space), or
// a ServiceAccount's namespace/name.
func Holder(acct *catalog.Account) string {
	switch {
	case acct == nil:
		return ""
	case acct.User != "":
		return "person " + acct.User
	}
	return acct.Namespace + "/" + acct.Name
}

// accountOf is the account the authentication put in a request's token info.
func accountOf(r *http.Request) *catalog.Account {
	return caller.Of(&mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context())})
}

// Sessions counts the sessions that next, the SDK's Streamable HTTP handler of the
// session-based revisions, makes, and their GET streams. It makes a session for
// every POST without an Mcp-Session-Id (an initialize; any other such POST's session
// it closes before it answers): the slot is held until the session ends, which reg
// (whose receiving middleware sees the session's first request) tells; at once when
// the answer names no session, or a session already gone. A GET is a session's
// stream, held until the GET ends.
func (h *Holds) Sessions(next http.Handler, reg *Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			acct := accountOf(r)
			holder := Holder(acct)
			if l := h.streams.take(holder); l != nil {
				h.refuse(w, r, acct, "http GET", l)
				return
			}
			defer h.streams.give(holder)
		case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "":
			acct := accountOf(r)
			holder := Holder(acct)
			if l := h.sessions.take(holder); l != nil {
				h.refuse(w, r, acct, methodOf(r), l)
				return
			}
			defer func() { reg.OnEnd(w.Header().Get("Mcp-Session-Id"), func() { h.sessions.give(holder) }) }()
		}
		next.ServeHTTP(w, r)
	})
}

// Legacy counts the legacy SSE transport's streams (next is transport.SSE): each GET
// is a session and its stream, held until the GET ends, which ends the session.
func (h *Holds) Legacy(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		acct := accountOf(r)
		holder := Holder(acct)
		l := h.sessions.take(holder)
		if l == nil {
			if l = h.streams.take(holder); l != nil {
				h.sessions.give(holder)
			}
		}
		if l != nil {
			h.refuse(w, r, acct, "http GET", l)
			return
		}
		defer h.sessions.give(holder)
		defer h.streams.give(holder)
		next.ServeHTTP(w, r)
	})
}

// Listens counts the subscriptions/listen streams of the stateless revision (next
// is its handler), each held until its request ends. limit is next's body limit. A
// listen is known by the message the HTTP layer reads (transport.Peek): the SDK
// refuses a batch in this revision, and Registry.Middleware refuses a listen in any
// other session than a stateless request's, so no listen opens unseen.
func (h *Holds) Listens(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m *transport.Message
		r, m = transport.Peek(r, limit)
		if m == nil || m.Method != methodListen {
			next.ServeHTTP(w, r)
			return
		}
		acct := accountOf(r)
		holder := Holder(acct)
		if l := h.streams.take(holder); l != nil {
			h.refuse(w, r, acct, methodListen, l)
			return
		}
		defer h.streams.give(holder)
		next.ServeHTTP(w, r)
	})
}

// methodListen is the stateless revision's long-lived request.
const methodListen = "subscriptions/listen"

// methodOf is the MCP method of a POST as the HTTP layer read it, or "http POST".
func methodOf(r *http.Request) string {
	if _, m := transport.Peek(r, -1); m != nil && m.Method != "" {
		return m.Method
	}
	return "http " + r.Method
}

// refuse answers 429 with Retry-After and which limit, counts it and reports it.
func (h *Holds) refuse(w http.ResponseWriter, r *http.Request, acct *catalog.Account, method string, l *limit) {
	holdRefusals.WithLabelValues(l.flag).Inc()
	var msg string
	switch {
	case l.holder && acct != nil && acct.User != "":
		msg = fmt.Sprintf("too many open %ss: you hold %d, the most one person may (%s); close one or let an idle one expire, then retry", l.kind, l.max, l.flag)
	case l.holder:
		msg = fmt.Sprintf("too many open %ss: this account holds %d, the most it may (%s); close one or let an idle one expire, then retry", l.kind, l.max, l.flag)
	default:
		msg = fmt.Sprintf("too many open %ss on this server: %d, the most it holds (%s); retry later", l.kind, l.max, l.flag)
	}
	if h.refused != nil {
		h.refused(r, method, msg)
	}
	w.Header().Set("Retry-After", strconv.Itoa(HoldRetryAfter))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
		Limit string `json:"limit"`
		Max   int    `json:"max"`
	}{msg, l.flag, l.max})
}
