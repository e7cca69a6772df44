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

package transport

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMirroredHeaders(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"find","arguments":{}}}`
	read := `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"mcp://sandbar/a/B/ns/x"}}`
	enc := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	for _, c := range []struct {
		desc, body, version, method, name string
		// refused: the words of the refusal ("" when it is served); passed: the
		// Mcp-Name the handler behind gets.
		refused, passed string
	}{
		{"matching", call, Stateless, "tools/call", "find", "", "find"},
		{"no Mcp-Method", call, Stateless, "", "find", `the Mcp-Method header is missing; it must repeat the body's method "tools/call"`, ""},
		{"another method", call, Stateless, "tools/list", "find", `the Mcp-Method header "tools/list" does not match the body's method "tools/call"`, ""},
		{"no Mcp-Name", call, Stateless, "tools/call", "", `the Mcp-Name header is missing; it must repeat the body's params.name "find"`, ""},
		{"another name", call, Stateless, "tools/call", "other", `the Mcp-Name header "other" does not match the body's params.name "find"`, ""},
		{"another URI", read, Stateless, "resources/read", "mcp://x", `the Mcp-Name header "mcp://x" does not match the body's params.uri "mcp://sandbar/a/B/ns/x"`, ""},
		{"encoded", call, Stateless, "tools/call", enc("find"), "", "find"},
		{"encoded otherwise", call, Stateless, "tools/call", enc("other"), `the Mcp-Name header "other" does not match`, ""},
		{"bad Base64", call, Stateless, "tools/call", "=?base64?%%?=", "is not valid Base64", ""},
		{"a session-based revision", call, "2025-11-25", "", "", "", ""},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, Stateless, "", "", "", ""},
	} {
		t.Run(c.desc, func(t *testing.T) {
			var passed *http.Request
			h := MirroredHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { passed = r }), 0)
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(c.body))
			r.Header.Set("Mcp-Protocol-Version", c.version)
			r.Header.Set("Mcp-Method", c.method)
			r.Header.Set("Mcp-Name", c.name)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if c.refused == "" {
				if passed == nil {
					t.Fatalf("refused: %d %s", rec.Code, rec.Body)
				}
				if got := passed.Header.Get("Mcp-Name"); got != c.passed {
					t.Errorf("Mcp-Name handed on: %q, want %q", got, c.passed)
				}
				return
			}
			var msg struct {
				ID    int `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if passed != nil || rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &msg) != nil {
				t.Fatalf("not refused: %d %s", rec.Code, rec.Body)
			}
			if msg.ID != 4 || msg.Error.Code != -32020 || !strings.Contains(msg.Error.Message, c.refused) {
				t.Errorf("refusal %s, want id 4, -32020 and %q", rec.Body, c.refused)
			}
		})
	}
}
