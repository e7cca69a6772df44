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

package tool

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

func TestToolLimitIsTheStrictestDeclaredClients(t *testing.T) {
	for _, tc := range []struct {
		acct   *catalog.Account
		caller string // the client the request comes from (ClientOf)
		limit  int
		client string
	}{
		{&catalog.Account{}, "", 40, "default"},
		{nil, "", 40, "default"},
		{&catalog.Account{Clients: []string{"claude-ai", "vscode"}}, "", 128, "VS Code, as the account declares"},
		{&catalog.Account{Clients: []string{"vscode", "cursor", "claude-code"}}, "", 80, "Cursor, as the account declares"},
		{&catalog.Account{Clients: []string{"cowork", "windsurf"}}, "", 50, "Windsurf, as the account declares"},
		{&catalog.Account{Clients: []string{"claude-code", "codex"}}, "", 0, ""},
		{&catalog.Account{Clients: []string{"cursor"}, MaxTools: 90}, "", 90, "spec.maxTools"},
		// An account that declares neither takes the limit of the client that asks.
		{&catalog.Account{}, "cursor", 80, "Cursor, as the client names itself"},
		{&catalog.Account{}, "claude-code", 0, "Claude Code, as the client names itself"},
		{&catalog.Account{}, "vscode", 128, "VS Code, as the client names itself"},
		{&catalog.Account{}, "antigravity", 100, "Antigravity, as the client names itself"},
		{&catalog.Account{}, "claude-ai", 256, "claude.ai, as the client names itself"},
		// What the account declares wins over what the client says it is.
		{&catalog.Account{Clients: []string{"cursor"}}, "claude-code", 80, "Cursor, as the account declares"},
		{&catalog.Account{MaxTools: 12}, "claude-code", 12, "spec.maxTools"},
	} {
		if limit, client := ToolLimit(tc.acct, tc.caller, 40); limit != tc.limit || client != tc.client {
			t.Errorf("ToolLimit(%+v, %q) = %d, %q; want %d, %q", tc.acct, tc.caller, limit, client, tc.limit, tc.client)
		}
	}
}

// Known clients are recognised by the names they give themselves in clientInfo, in
// any case; any other name, however long, is no known client.
func TestClientOfKnowsTheNamesClientsGiveThemselves(t *testing.T) {
	for name, want := range map[string]string{
		"claude-code": "claude-code", "claude-ai": "claude-ai", "cursor-vscode": "cursor", "Cursor": "cursor",
		"Visual Studio Code": "vscode", "Visual Studio Code - Insiders": "vscode", "codex-mcp-client": "codex",
		"mcp-inspector": "mcp-inspector", " claude-code ": "claude-code", "windsurf-client": "windsurf", "antigravity-client": "antigravity",
		"": "", "sandbar-test": "", "claude-code-but-not": "", strings.Repeat("claude-code", 10): "",
	} {
		if got := ClientOf(name); got != want {
			t.Errorf("ClientOf(%q) = %q, want %q", name, got, want)
		}
	}
	for _, name := range clientNames {
		if _, ok := Clients[name]; !ok {
			t.Errorf("a client name maps to %q, which is not a known client (Clients)", name)
		}
	}
}

func TestMeasureCountsThePrefixAndTheSchemaAsSent(t *testing.T) {
	name := "sandbar_class_zorp_" + strings.Repeat("K", 31) // 50 characters
	fit := Measure(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, DefaultClientPrefix)
	if fit.NameLength != 64 || fit.NameTooLong() || fit.SchemaBytes != len(`{"type":"object"}`) || !fit.OK() {
		t.Errorf("a 50-character name behind mcp__sandbar__ fits: %+v", fit)
	}
	fit = Measure(&mcp.Tool{Name: name + "K", InputSchema: map[string]any{"description": strings.Repeat("x", MaxSchemaBytes)}}, DefaultClientPrefix)
	if !fit.NameTooLong() || !fit.SchemaTooLarge() || !strings.Contains(fit.Problems(DefaultClientPrefix), "65 characters") {
		t.Errorf("one character more, and a schema over 16 KiB: %+v %s", fit, fit.Problems(DefaultClientPrefix))
	}
}

func TestBoundCutsOnCharacterBoundariesAndJoinsWhole(t *testing.T) {
	whole := strings.Repeat("ä€x", 3000) // multi-byte characters across every cut
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: whole}}}
	d := &Def{Spec: Spec{ReadOnly: true}}
	c := &Call{Tool: "t", Account: &catalog.Account{Namespace: "team-a", Name: "claude"}, Bounds: Bounds{Bytes: MinResultBytes}}
	joined := ""
	var w *window
	for i := 0; ; i++ {
		out, err := bound(res, d, c, json.RawMessage(`{}`), w)
		if err != nil {
			t.Fatal(err)
		}
		part := out.Content[0].(*mcp.TextContent).Text
		if len(part) > MinResultBytes || !utf8.ValidString(part) {
			t.Fatalf("part %d: %d bytes, valid UTF-8 %v", i, len(part), utf8.ValidString(part))
		}
		joined += part
		note := out.Content[1].(*mcp.TextContent).Text
		if strings.Contains(note, "the end of the result") {
			break
		}
		token := note[strings.Index(note, `": "`)+4:]
		token = token[:strings.Index(token, `"`)]
		w, _, err = readContinue(c, json.RawMessage(`{"resultContinue":"`+token+`"}`))
		if err != nil {
			t.Fatal(err)
		}
	}
	if joined != whole {
		t.Errorf("the parts joined are not the whole result")
	}
}

// The continue token is read from the arguments however its name is spelled in
// JSON, escapes included; arguments without it go on as they came.
func TestTheContinueTokenIsReadHoweverItsNameIsSpelled(t *testing.T) {
	c := &Call{Tool: "t", Account: &catalog.Account{Namespace: "team-a", Name: "claude"}}
	token := c.Tokens().Seal(windowKind, windowScope(c, json.RawMessage(`{"class":"a/B"}`)), window{Offset: 10, Hash: "x"})
	for _, raw := range []string{
		`{"class":"a/B","resultContinue":"` + token + `"}`,
		`{"class":"a/B","\u0072esultContinue":"` + token + `"}`,
		`{ "resultContinue" : "` + token + `", "class" : "a/B" }`,
	} {
		w, rest, err := readContinue(c, json.RawMessage(raw))
		if err != nil || w == nil || w.Offset != 10 || string(rest) != `{"class":"a/B"}` {
			t.Errorf("%s: window %+v, rest %s, %v", raw, w, rest, err)
		}
	}
	for _, raw := range []string{`{"class":"a/B"}`, `{"class":"a\"B"}`, `{}`, ``} {
		if w, rest, err := readContinue(c, json.RawMessage(raw)); err != nil || w != nil || string(rest) != raw {
			t.Errorf("%s: window %+v, rest %s, %v", raw, w, rest, err)
		}
	}
}

// A continue token opens only as the server sealed it: for the same account, tool
// and other arguments. A token made up by a client (the offsets it would pick), one
// changed, or one of another account or query is refused with a message that says
// to start over, before anything in it is used.
func TestAResultTokenOpensOnlyForItsAccountToolAndArguments(t *testing.T) {
	acct := &catalog.Account{Namespace: "team-a", Name: "claude"}
	c := &Call{Tool: "t", Account: acct}
	args := json.RawMessage(`{"class":"a/B"}`)
	good := c.Tokens().Seal(windowKind, windowScope(c, args), window{Offset: 10, Hash: "x"})
	body := []byte(`{"v":{"o":-1,"h":"x"},"e":99999999999}`)
	forged := base64.RawURLEncoding.EncodeToString(body)
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	withSeal := base64.RawURLEncoding.EncodeToString(append(raw[:16:16], body...))
	for _, tc := range []struct {
		name, token, args string
		call              *Call
	}{
		{"made up by the client", base64.RawURLEncoding.EncodeToString([]byte(`{"o":-1,"h":"x"}`)), `{"class":"a/B"}`, c},
		{"a forged payload with no seal", forged, `{"class":"a/B"}`, c},
		{"a forged payload with another token's seal", withSeal, `{"class":"a/B"}`, c},
		{"changed by one character", good[:5] + string(rune(good[5]^1)) + good[6:], `{"class":"a/B"}`, c},
		{"for other arguments", good, `{"class":"a/C"}`, c},
		{"of another account", good, `{"class":"a/B"}`, &Call{Tool: "t", Account: &catalog.Account{Namespace: "team-b", Name: "claude"}}},
		{"of another tool", good, `{"class":"a/B"}`, &Call{Tool: "u", Account: acct}},
		{"not base64", "%%%.%%%", `{"class":"a/B"}`, c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := strings.Replace(tc.args, "{", `{"resultContinue":"`+tc.token+`",`, 1)
			w, _, err := readContinue(tc.call, json.RawMessage(raw))
			if err == nil || w != nil {
				t.Fatalf("the token opened: window %+v", w)
			}
			if !strings.Contains(err.Error(), "call again without it") {
				t.Errorf("the refusal does not say to start over: %v", err)
			}
		})
	}
	if w, _, err := readContinue(c, json.RawMessage(`{"resultContinue":"`+good+`","class":"a/B"}`)); err != nil || w.Offset != 10 {
		t.Errorf("the token as sealed: window %+v, %v", w, err)
	}
}
