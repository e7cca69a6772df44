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
		limit  int
		client string
	}{
		{&catalog.Account{}, 40, "default"},
		{&catalog.Account{Clients: []string{"claude-ai", "vscode"}}, 128, "vscode"},
		{&catalog.Account{Clients: []string{"vscode", "cursor", "claude-code"}}, 40, "cursor"},
		{&catalog.Account{Clients: []string{"claude-code", "codex"}}, 0, ""},
		{&catalog.Account{Clients: []string{"cursor"}, MaxTools: 90}, 90, "spec.maxTools"},
	} {
		if limit, client := ToolLimit(tc.acct, 40); limit != tc.limit || client != tc.client {
			t.Errorf("ToolLimit(%v, %v) = %d, %q; want %d, %q", tc.acct.Clients, tc.acct.MaxTools, limit, client, tc.limit, tc.client)
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
	joined := ""
	var w *window
	for i := 0; ; i++ {
		out, err := bound(res, d, "t", Bounds{Bytes: MinResultBytes}, w)
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
		w, _, err = readContinue(json.RawMessage(`{"resultContinue":"` + token + `"}`))
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
	token := base64.RawURLEncoding.EncodeToString([]byte(`{"o":10,"h":"x"}`))
	for _, raw := range []string{
		`{"class":"a/B","resultContinue":"` + token + `"}`,
		`{"class":"a/B","\u0072esultContinue":"` + token + `"}`,
	} {
		w, rest, err := readContinue(json.RawMessage(raw))
		if err != nil || w == nil || w.Offset != 10 || string(rest) != `{"class":"a/B"}` {
			t.Errorf("%s: window %+v, rest %s, %v", raw, w, rest, err)
		}
	}
	for _, raw := range []string{`{"class":"a/B"}`, `{"class":"a\"B"}`, `{}`, ``} {
		if w, rest, err := readContinue(json.RawMessage(raw)); err != nil || w != nil || string(rest) != raw {
			t.Errorf("%s: window %+v, rest %s, %v", raw, w, rest, err)
		}
	}
}
