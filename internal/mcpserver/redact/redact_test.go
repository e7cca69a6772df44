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

package redact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/apikey"
)

// tok is a token in the format the server issues.
var tok = func() string {
	key, _, err := apikey.Generate()
	if err != nil {
		panic(err)
	}
	return apikey.Format("claude", key)
}()

func leaks(t *testing.T, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if strings.Contains(string(b), tok[len("claude:"):]) {
		t.Errorf("the key is still in %s", b)
	}
}

func TestStringRedactsTokensWhereverTheySit(t *testing.T) {
	key := tok[len("claude:"):]
	for _, tc := range []struct{ in, want string }{
		{tok, Redacted},
		{"key " + tok + " end", "key " + Redacted + " end"},
		{"MY_TOKEN_" + tok + ".", "MY_TOKEN_" + Redacted + "."},
		{"Authorization: Bearer " + tok, "Authorization: Bearer " + Redacted},
		{"two " + tok + "," + tok, "two " + Redacted + "," + Redacted},
		// Not a token: an image digest has 64 characters after the colon.
		{"sha256:" + strings.Repeat("ab", 32), "sha256:" + strings.Repeat("ab", 32)},
		{"short", "short"},
		{"in " + key[:20], "in " + key[:20]},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type inner struct {
	Labels map[string]string `json:"labels"`
	Tags   []string          `json:"tags"`
	Count  int               `json:"count"`
}

type outer struct {
	mcp.ResultBase
	Name    string            `json:"name"`
	Ptr     *inner            `json:"ptr"`
	Val     inner             `json:"val"`
	Any     any               `json:"any"`
	Arr     [2]string         `json:"arr"`
	Raw     json.RawMessage   `json:"raw"`
	Blob    []byte            `json:"blob"`
	Nested  map[string][]any  `json:"nested"`
	Content []mcp.Content     `json:"content"`
	Named   namedString       `json:"named"`
	Keys    map[string]string `json:"keys"`
	hidden  string
}

type namedString string

func TestValueRedactsEveryStringAndLeavesTheRest(t *testing.T) {
	blob := []byte("binary " + tok)
	in := &outer{
		Name:    "intact",
		Ptr:     &inner{Labels: map[string]string{"team": "a", "secret": "x " + tok}, Tags: []string{"ok", tok}, Count: 3},
		Val:     inner{Labels: map[string]string{"note": tok}, Tags: []string{tok}},
		Any:     map[string]any{"deep": []any{map[string]any{"deeper": []string{"fine", "k=" + tok}}}},
		Arr:     [2]string{"fine", tok},
		Raw:     json.RawMessage(`{"a":"` + tok + `","b":2}`),
		Blob:    blob,
		Nested:  map[string][]any{"x": {1, tok, true, []map[string]any{{"a": "fine"}, {"b": tok}}}},
		Content: []mcp.Content{&mcp.TextContent{Text: "said " + tok}, &mcp.TextContent{Text: "nothing"}},
		Named:   namedString(tok),
		Keys:    map[string]string{tok: "value", "plain": "value"},
		hidden:  "kept",
	}
	before, _ := json.Marshal(in)
	got := Value(in)
	out, ok := got.(*outer)
	if !ok {
		t.Fatalf("Value changed the type to %T", got)
	}
	leaks(t, out)
	if after, _ := json.Marshal(in); string(after) != string(before) {
		t.Errorf("Value modified its argument")
	}
	if out == in || out.Ptr == in.Ptr {
		t.Errorf("Value did not copy what it changed")
	}
	// The rest is intact.
	if out.Name != "intact" || out.Ptr.Count != 3 || out.Ptr.Labels["team"] != "a" || out.Ptr.Tags[0] != "ok" ||
		out.Arr[0] != "fine" || out.hidden != "kept" || out.Keys["plain"] != "value" || out.Keys[Redacted] != "value" {
		t.Errorf("Value lost what was not a credential: %+v", out)
	}
	if out.Ptr.Labels["secret"] != "x "+Redacted || out.Ptr.Tags[1] != Redacted || out.Named != Redacted {
		t.Errorf("not redacted in place: %+v", out.Ptr)
	}
	var raw map[string]any
	if err := json.Unmarshal(out.Raw, &raw); err != nil || raw["a"] != Redacted || raw["b"] != 2.0 {
		t.Errorf("raw JSON: %s (%v)", out.Raw, err)
	}
	if string(out.Blob) != string(blob) {
		t.Errorf("bytes are not text and stay as they are")
	}
	if c := out.Content[1]; c != in.Content[1] {
		t.Errorf("an unchanged element was copied")
	}
}

func TestValueReturnsItsArgumentWhenNothingIsRedacted(t *testing.T) {
	for _, v := range []any{
		nil, "plain", 3, &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "a", Description: "A tool: does things."}}},
		map[string]any{"a": []any{"b", 1.0}}, json.RawMessage(`{"a":"b"}`),
	} {
		got := Value(v)
		if !reflect.DeepEqual(got, v) {
			t.Errorf("Value(%#v) = %#v", v, got)
		}
		if p := reflect.ValueOf(v); p.Kind() == reflect.Pointer && reflect.ValueOf(got).Pointer() != p.Pointer() {
			t.Errorf("Value(%#v) copied what had nothing to redact", v)
		}
	}
}

func TestValueRedactsEscapedCredentialsInRawJSON(t *testing.T) {
	raw := json.RawMessage(`{"id":"\u0041KIAIOSFODNN7EXAMPLE"}`)
	got := Value(raw).(json.RawMessage)
	if strings.Contains(string(got), "IOSFODNN7EXAMPLE") {
		t.Errorf("an escaped key id passed: %s", got)
	}
}

func TestValueSurvivesCycles(t *testing.T) {
	m := map[string]any{"self": nil, "tok": tok}
	m["self"] = m
	got := Value(m)
	if got == nil {
		t.Fatal("nil")
	}
}

func TestErrorRedactsMessagesAndKeepsCodes(t *testing.T) {
	wire := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", tok), Data: json.RawMessage(`{"echo":"` + tok + `"}`)}
	got, ok := Error(wire).(*jsonrpc.Error)
	if !ok || got.Code != jsonrpc.CodeInvalidParams || got == wire {
		t.Fatalf("Error(%v) = %#v", wire, got)
	}
	leaks(t, got)
	if got.Message != `unknown tool "`+Redacted+`"` {
		t.Errorf("message: %q", got.Message)
	}
	if wire.Message == got.Message {
		t.Errorf("Error modified its argument")
	}

	wrapped := fmt.Errorf("reading %s: %w", tok, wire)
	red := Error(wrapped)
	if strings.Contains(red.Error(), tok) {
		t.Errorf("wrapped: %q", red.Error())
	}
	var code *jsonrpc.Error
	if !errors.As(red, &code) || code.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("the code of a wrapped error is lost")
	}

	plain := errors.New("nothing secret")
	if Error(plain) != plain {
		t.Errorf("an error with nothing to redact is replaced")
	}
}

func TestRequestRedactsTheParamsOfWhatTheServerSends(t *testing.T) {
	params := &mcp.ProgressNotificationParams{ProgressToken: "p", Message: "working on " + tok, Progress: 1, Total: 2}
	req := &mcp.ServerRequest[*mcp.ProgressNotificationParams]{Params: params}
	got, ok := request(req).(*mcp.ServerRequest[*mcp.ProgressNotificationParams])
	if !ok || got == req {
		t.Fatalf("request = %#v", got)
	}
	leaks(t, got.Params)
	if got.Params.Message != "working on "+Redacted || got.Params.Progress != 1 || got.Params.ProgressToken != "p" {
		t.Errorf("params: %+v", got.Params)
	}
	if params.Message != "working on "+tok {
		t.Errorf("request modified its argument")
	}
	same := &mcp.ServerRequest[*mcp.ProgressNotificationParams]{Params: &mcp.ProgressNotificationParams{Message: "fine"}}
	if request(same) != mcp.Request(same) {
		t.Errorf("a request with nothing to redact is replaced")
	}
}

// A result its handler vouched for is sent as it is, unwalked (a promise that
// nothing in it is secret: here one that is broken, to show it is kept); any other
// is redacted, even when its handler vouched for another.
func TestMiddlewareWalksAnythingButTheResultVouchedFor(t *testing.T) {
	vouched := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the key is " + tok}}}
	secret := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the key is " + tok}}}
	for _, tc := range []struct {
		name          string
		vouch, answer *mcp.CallToolResult
		sentAsItIs    bool
	}{
		{"vouched for", vouched, vouched, true},
		{"another vouched for", vouched, secret, false},
		{"nothing vouched for", nil, secret, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Middleware(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
				if tc.vouch != nil {
					Vouch(ctx, tc.vouch)
				}
				return tc.answer, nil
			})
			res, err := h(context.Background(), "tools/call", &mcp.ServerRequest[*mcp.CallToolParamsRaw]{})
			if err != nil {
				t.Fatal(err)
			}
			if (res == mcp.Result(tc.answer)) != tc.sentAsItIs {
				t.Errorf("sent as it is: %v, want %v", res == mcp.Result(tc.answer), tc.sentAsItIs)
			}
			if !tc.sentAsItIs {
				leaks(t, res)
			}
		})
	}
	Vouch(context.Background(), vouched) // outside the middleware: nothing to tell
}

func BenchmarkValueToolList(b *testing.B) {
	list := &mcp.ListToolsResult{}
	for i := range 1000 {
		props := map[string]any{}
		for j := range 8 {
			props[fmt.Sprintf("slot%d", j)] = map[string]any{"type": "string", "description": "A slot: what it holds, in a sentence or two."}
		}
		list.Tools = append(list.Tools, &mcp.Tool{
			Name: fmt.Sprintf("sandbar_class_bench_C%04d", i), Title: "Create a C", Description: "Creates an instance of bench/C: a generated class for the benchmark.",
			InputSchema: map[string]any{"type": "object", "properties": props, "required": []any{"slot0"}},
			Annotations: &mcp.ToolAnnotations{Title: "Create a C"},
		})
	}
	for b.Loop() {
		Value(list)
	}
}
