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

package fuzz

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
)

// panicTool is the served name of a verb that panics, in a verb table of the tests'.
const panicTool = "sandbar_test_panic"

// lockedBuffer is an audit stream the test reads while the server writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A verb that panics costs its call, not the process: the client gets -32603 with
// the request's id, the panic is counted and audited, and the next call, of either
// revision, is answered. (Before, the go-sdk's handler goroutine took the process
// down: this test binary with it.)
func TestAPanickingVerbAnswersAnInternalErrorAndTheServerGoesOn(t *testing.T) {
	audit := &lockedBuffer{}
	tel, err := telemetry.New(context.Background(), telemetry.Config{Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	e, err := mcptest.Start(func(o *mcpserver.Options) {
		o.Telemetry = tel
		o.Verbs = func(env *verbs.Env) []*tool.Def {
			return append(env.All(), tool.Verb(tool.Spec{Group: "test", Name: "panic", Title: "Panic", ReadOnly: true,
				Description: "Panics, as a bug would."}, func(context.Context, *tool.Call, struct{}) (struct{ Class string }, error) {
				var classes []string
				return struct{ Class string }{classes[len(classes)-1]}, nil // index out of range
			}))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	before := testutil.ToFloat64(contain.Panics.WithLabelValues("mcp"))

	// Raw JSON-RPC, as each revision's client sends it.
	for _, v := range []int{mcptest.VariantSession, mcptest.VariantStateless} {
		id := e.NextID()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": mcptest.Params(v, map[string]any{"name": panicTool, "arguments": map[string]any{}})})
		rec := e.Post(v, body)
		msgs, err := mcptest.Messages(rec)
		if err != nil || rec.Code != http.StatusOK {
			t.Fatalf("variant %d: HTTP %d: %v", v, rec.Code, err)
		}
		answer := mcptest.AnswerOf(t, panicTool, rec, msgs)
		code, msg := mcptest.ErrorOf(answer)
		if code != jsonrpc.CodeInternalError || !strings.Contains(msg, "goes on serving") {
			t.Fatalf("variant %d: the answer to a panicking call is %d %q, not -32603", v, code, msg)
		}
		if string(answer.ID) != jsonNumber(id) {
			t.Errorf("variant %d: the error answers id %s, not the request's %d", v, answer.ID, id)
		}
		e.CallOK(t, v, "sandbar_schema_classes")
	}

	// Through the go-sdk client, at both revisions: the call fails, the next succeeds.
	for _, revision := range []string{mcptest.SessionRevision, mcptest.StatelessRevision} {
		cs := e.Client(t, revision)
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: panicTool, Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%s: a panicking call answers %v, not an internal error", revision, err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_schema_classes", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s: the call after the panic: %v %v", revision, err, res)
		}
	}

	if got := testutil.ToFloat64(contain.Panics.WithLabelValues("mcp")) - before; got != 4 {
		t.Errorf("sandbar_panics_recovered_total{where=\"mcp\"} went up by %v, not 4", got)
	}
	events := 0
	for line := range strings.Lines(audit.String()) {
		var ev telemetry.Event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Tool == panicTool {
			events++
			if ev.Outcome != telemetry.Error || ev.Reason != "-32603: panic" || ev.Account == nil || ev.Account.Name != "claude" {
				t.Errorf("the audit event of a panic: %s", line)
			}
		}
	}
	if events != 4 {
		t.Errorf("%d audit events of the panicking calls, not 4:\n%s", events, audit)
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A token site is a request that takes back a token the server handed out.
type tokenSite struct {
	name string
	// kind and scope are what the server seals the site's tokens for (package seal),
	// as the account "claude" of namespace default calls it.
	kind, scope string
	// request is the JSON-RPC method and params with the token in place.
	request func(token string) (string, map[string]any)
	// sessions: the method is of the session-based revisions only (2026-07-28 has
	// no tasks/list).
	sessions bool
}

// account is the sample account's part of a token's scope.
var account = []any{mcptest.Home, "claude", ""}

func toolScope(name string, query ...any) string {
	return seal.Scope(append(append([]any{name}, account...), query...)...)
}

// windowScope is the scope of a result's continue token for a tool called with args.
func windowScope(name, args string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	b, _ := json.Marshal(m)
	sum := sha256.Sum256(b)
	return toolScope(name, hex.EncodeToString(sum[:16]))
}

func callWith(name string, args map[string]any) (string, map[string]any) {
	return "tools/call", map[string]any{"name": name, "arguments": args}
}

// tokenSites are every request that takes a token back, the verbs' and the protocol's.
var tokenSites = []tokenSite{
	{"entity.find continue", "entity-find", toolScope("sandbar_entity_find", "zorp/SpaceBoot", mcptest.Home, nil, "", ""),
		func(tok string) (string, map[string]any) {
			return callWith("sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "continue": tok})
		}, false},
	{"class.instances continue", "entity-find", toolScope("sandbar_class_instances", "zorp/SpaceBoot", mcptest.Home, nil, "", ""),
		func(tok string) (string, map[string]any) {
			return callWith("sandbar_class_instances", map[string]any{"class": "zorp/SpaceBoot", "continue": tok})
		}, false},
	{"schema.classes continue", "page", toolScope("sandbar_schema_classes", nil),
		func(tok string) (string, map[string]any) {
			return callWith("sandbar_schema_classes", map[string]any{"continue": tok})
		}, false},
	{"class.slots continue", "page", toolScope("sandbar_class_slots", "zorp/SpaceBoot"),
		func(tok string) (string, map[string]any) {
			return callWith("sandbar_class_slots", map[string]any{"class": "zorp/SpaceBoot", "continue": tok})
		}, false},
	{"tasks.list cursor", "tasks-list", seal.Scope(account...),
		func(tok string) (string, map[string]any) {
			return callWith("sandbar_tasks_list", map[string]any{"cursor": tok})
		}, false},
	{"resultContinue", "result-window", windowScope("sandbar_class_describe", `{"class":"zorp/SpaceBoot"}`),
		func(tok string) (string, map[string]any) {
			return callWith("sandbar_class_describe", map[string]any{"class": "zorp/SpaceBoot", "resultContinue": tok})
		}, false},
	{"tasks/list cursor", "tasks-list", seal.Scope(account...),
		func(tok string) (string, map[string]any) { return "tasks/list", map[string]any{"cursor": tok} }, true},
	{"resources/list cursor", "resources-list", seal.Scope(account...),
		func(tok string) (string, map[string]any) { return "resources/list", map[string]any{"cursor": tok} }, false},
}

// variants are the revisions whose clients make the site's request.
func (s tokenSite) variants() []int {
	if s.sessions {
		return []int{mcptest.VariantSession}
	}
	return []int{mcptest.VariantSession, mcptest.VariantStateless}
}

// send makes a site's request with a token, as a client of variant v, and returns
// its answer: a JSON-RPC error, or a result (isError or not).
func send(t *testing.T, e *mcptest.Server, v int, site tokenSite, token string) mcptest.Message {
	t.Helper()
	method, params := site.request(token)
	answer, status := e.Request(t, v, method, params)
	if !designed[status] {
		t.Fatalf("%s: HTTP %d", site.name, status)
	}
	return answer
}

// refusal is the message of a refused token: the JSON-RPC error's, or the text of
// an isError result ("" when the request was answered).
func refusal(m mcptest.Message) (int64, string) {
	if code, msg := mcptest.ErrorOf(m); code != 0 {
		return code, msg
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(m.Result, &res) == nil && res.IsError && len(res.Content) > 0 {
		return 0, res.Content[0].Text
	}
	return 0, ""
}

// A token a client forged (well-formed base64 JSON with positions of its own, the
// way the seeds' cursors were made), took from another account or query, or changed
// is refused at every site with a message that says to start over, on both
// revisions; the process lives on, and the same request without the token is
// answered. entity.find's {"c":-1} ended the manager before.
func TestForgedTokensAreRefusedAtEverySite(t *testing.T) {
	e := mcptest.Shared(t)
	other, _ := seal.New([]byte("another replica's key, not this server's at all"))
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, site := range tokenSites {
		sealed := mustSealer(t).Seal(site.kind, site.scope, map[string]any{})
		forged := map[string]string{
			"base64 JSON of a negative class":      b64(`{"c":-1}`),
			"base64 JSON of a huge offset":         b64(`{"o":9223372036854775807,"h":"x"}`),
			"base64 JSON of a position":            b64(`{"m":"","c":"zorp/SpaceBoot","n":"elsewhere","k":"x"}`),
			"sealed with another key":              other.Seal(site.kind, site.scope, map[string]any{"c": -1}),
			"sealed for another account":           mustSealer(t).Seal(site.kind, seal.Scope("team-b", "claude", ""), map[string]any{}),
			"a sealed token with one byte changed": sealed[:len(sealed)-2] + string(rune(sealed[len(sealed)-2]^1)) + sealed[len(sealed)-1:],
			"not base64":                           "%%%",
		}
		for what, token := range forged {
			for _, v := range site.variants() {
				t.Run(site.name+"/"+what, func(t *testing.T) {
					answer := send(t, e, v, site, token)
					code, msg := refusal(answer)
					if msg == "" {
						t.Fatalf("variant %d: the token was taken: %s", v, answer.Result)
					}
					if code != 0 && code != jsonrpc.CodeInvalidParams {
						t.Fatalf("variant %d: refused with %d %q, not -32602", v, code, msg)
					}
					if !strings.Contains(msg, "start") && !strings.Contains(msg, "without it") {
						t.Errorf("variant %d: the refusal does not say to start over: %q", v, msg)
					}
				})
			}
		}
		if _, msg := refusal(send(t, e, mcptest.VariantSession, site, "")); msg != "" {
			t.Errorf("%s: without a token: %s", site.name, msg)
		}
	}
	e.CheckHome(t)
}

func mustSealer(t testing.TB) *seal.Sealer {
	s, err := seal.New(mcptest.TokenKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Any position, sealed as the server would seal it (so past the seal, into the code
// that uses what opens), gets an answer at every token site: never a panic, never an
// internal error. The seeds are positions a client could not make once tokens are
// sealed, but that a list changing under a client's feet can: a class index past
// the classes, offsets past the items, a Kubernetes continue token that is not one.
func FuzzSealedPositions(f *testing.F) {
	for i := range tokenSites {
		for _, pos := range []string{
			`{"c":-1}`, `{"c":1000000}`, `{"c":0,"k":"not-a-continue-token","a":"zz"}`, `{"o":-5}`, `{"o":1000000}`,
			`{"o":10,"h":"x"}`, `{"t":-1,"n":""}`, `{"t":9999999999,"n":"zzz"}`, `{"m":"","c":"zorp/SpaceBoot","n":"elsewhere","k":"x"}`,
			`{"c":"zorp/Nothing"}`, `{"m":"!!"}`, `{}`, `null`, `[]`, `"x"`, `3`,
		} {
			f.Add(uint8(i), []byte(pos), false)
			f.Add(uint8(i), []byte(pos), true)
		}
	}
	f.Fuzz(func(t *testing.T, index uint8, position []byte, statelessRevision bool) {
		if !json.Valid(position) {
			return // the server seals only JSON
		}
		e := mcptest.Shared(t)
		site := tokenSites[int(index)%len(tokenSites)]
		token := mustSealer(t).Seal(site.kind, site.scope, json.RawMessage(position))
		v := mcptest.VariantSession
		if statelessRevision && !site.sessions {
			v = mcptest.VariantStateless
		}
		if code, msg := mcptest.ErrorOf(send(t, e, v, site, token)); code == jsonrpc.CodeInternalError {
			t.Fatalf("%s with %s: internal error: %s", site.name, position, msg)
		}
		e.CheckHome(t)
	})
}
