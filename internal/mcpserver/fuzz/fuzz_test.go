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
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
)

// designed are the HTTP statuses /mcp answers a POST with: an answer (200), a
// notification or response taken (202), a body or headers it refuses (400), a
// missing token (401), a session it does not know (404), a body too large (413).
var designed = map[int]bool{
	http.StatusOK: true, http.StatusAccepted: true, http.StatusBadRequest: true, http.StatusUnauthorized: true,
	http.StatusNotFound: true, http.StatusRequestEntityTooLarge: true,
}

// A raw body of any bytes, POSTed to /mcp as a client of either revision (or with no
// token), gets a designed HTTP status and, when it is JSON, valid JSON-RPC: never a
// panic, never a malformed error.
func FuzzJSONRPC(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbar_entity_find","arguments":{"class":"zorp.spaceboot"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"mcp://sandbar/meta/Class/zorp.spaceboot"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}"},"argument":{"name":"name","value":"m"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"nope"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbar_entity_find","arguments":{"class":"zorp.spaceboot"},"task":{"ttl":1000},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`,
		`{`, `[]`, `null`, ``, `"x"`,
	} {
		for v := range mcptest.Variants {
			f.Add(uint8(v), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, variant uint8, body []byte) {
		e := mcptest.Shared(t)
		v := int(variant) % mcptest.Variants
		rec := e.Post(v, body)
		if !designed[rec.Code] {
			t.Fatalf("variant %d: HTTP %d, which /mcp is not designed to answer: %s", v, rec.Code, rec.Body)
		}
		if v == mcptest.VariantAnonymous && rec.Code != http.StatusUnauthorized {
			t.Fatalf("a request without a token: HTTP %d, not 401", rec.Code)
		}
		if rec.Code == http.StatusUnauthorized {
			// The refusal is the authentication's, not JSON-RPC: {"error": "..."}.
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("variant %d: HTTP 401 with a body that is not JSON: %q", v, rec.Body)
			}
		} else if _, err := mcptest.Messages(rec); err != nil {
			t.Fatalf("variant %d: HTTP %d: %v", v, rec.Code, err)
		}
		e.CheckHome(t)
	})
}

// Any arguments to any tool the account is served get a result (isError or not) or
// a JSON-RPC error for what is not an arguments object: never a panic, never an
// internal error, and never a write outside the account's namespace.
func FuzzToolArguments(f *testing.F) {
	seeds := []string{
		`{"class":"zorp.spaceboot","attributes":{"name":"x","price":3}}`,
		`{"class":"zorp/SpaceBoot","metadata":{"name":"y","namespace":"elsewhere"},"attributes":{"name":"y"}}`,
		`{"class":"zorp.spaceboot","name":"untouchable","namespace":"elsewhere","attributes":{"price":2},"resourceVersion":"999"}`,
		`{"class":"zorp.spaceboot","namespace":"elsewhere","where":{"price":1},"labelSelector":"a=b","limit":2}`,
		`{"entities":[{"class":"zorp.spaceboot","name":"z","namespace":"elsewhere","attributes":{"name":"z"}}],"dryRun":false}`,
		`{"workflow":"order-fulfilment","subject":"elsewhere/untouchable","input":{}}`,
		`{"class":"zorp.spaceboot","idempotencyKey":"k","attributes":{"name":"k"}}`,
		`{}`, `{"class":"zorp.spaceboot"}`, `{"class":"zorp/SpaceBoot","name":"moonwalker","namespace":"elsewhere"}`,
		`{"class":"zorp.spaceboot","spec":{"name":"x","price":3}}`, `{"namespace":"elsewhere","name":"untouchable"}`,
		`{"name":"untouchable","namespace":"elsewhere","class":"zorp.spaceboot","spec":{"price":"ninety"}}`,
		`{"uri":"mcp://sandbar/zorp/SpaceBoot/elsewhere/untouchable"}`,
		`{"source":"---\nname: x\n---\n","format":"markdown","namespace":"elsewhere"}`,
		`{"taskId":"x"}`, `{"process":"elsewhere/x"}`, `{"limit":-1,"cursor":"!!"}`, `{"filter":{"price":{"gt":"x"}}}`,
		`[]`, `null`, `3`, `"x"`,
	}
	// Each tool once (the sample account is served fewer than 64), with the seeds in turn.
	for i := range 64 {
		f.Add(uint16(i), []byte(seeds[i%len(seeds)]))
	}
	f.Fuzz(func(t *testing.T, index uint16, args []byte) {
		if !json.Valid(args) {
			return // the body would not be JSON: FuzzJSONRPC's part
		}
		e := mcptest.Shared(t)
		name := e.Tools[int(index)%len(e.Tools)]
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.NextID(), "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": json.RawMessage(args)}})
		rec := e.Post(mcptest.VariantSession, body)
		msgs, err := mcptest.Messages(rec)
		if err != nil {
			t.Fatalf("%s: HTTP %d: %v", name, rec.Code, err)
		}
		answer := mcptest.AnswerOf(t, name+string(args), rec, msgs)
		if code, msg := mcptest.ErrorOf(answer); code != 0 {
			if code == jsonrpc.CodeInternalError {
				t.Fatalf("%s(%s): internal error: %s", name, args, msg)
			}
			var obj map[string]any
			if json.Unmarshal(args, &obj) == nil && obj != nil {
				t.Fatalf("%s(%s): arguments that are an object get JSON-RPC error %d %q, not a result", name, args, code, msg)
			}
		}
		e.CheckHome(t)
	})
}

// Any URI read through resources/read gets its contents or a JSON-RPC error that
// says what was refused: never a panic, never an internal error.
func FuzzResourceURI(f *testing.F) {
	for _, uri := range []string{
		"mcp://sandbar/zorp/SpaceBoot/default/moonwalker", "mcp://sandbar/zorp/SpaceBoot/elsewhere/untouchable",
		"mcp://sandbar/zorp/SpaceBoot/default/x?format=markdown", "mcp://sandbar/zorp/SpaceBoot/default/x?format=json",
		"mcp://sandbar/meta/Class/zorp.spaceboot", "mcp://sandbar/meta/Property/footwear.name",
		"mcp://sandbar/meta/WorkflowDefinition/x", "mcp://sandbar/meta/Class/", "mcp://sandbar//",
		"mcp://sandbar/a/B/c/d?", "mcp://sandbar/zorp/SpaceBoot/%2e%2e/x", "mcp://other/x", "file:///etc/passwd", "",
	} {
		f.Add(uri, false)
		f.Add(uri, true)
	}
	f.Fuzz(func(t *testing.T, uri string, statelessRevision bool) {
		e := mcptest.Shared(t)
		v := mcptest.VariantSession
		if statelessRevision {
			v = mcptest.VariantStateless
		}
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.NextID(), "method": "resources/read",
			"params": mcptest.Params(v, map[string]any{"uri": uri})})
		if err != nil {
			return
		}
		rec := e.Post(v, body)
		msgs, err := mcptest.Messages(rec)
		if err != nil {
			t.Fatalf("%q: HTTP %d: %v", uri, rec.Code, err)
		}
		answer := mcptest.AnswerOf(t, uri, rec, msgs)
		if code, msg := mcptest.ErrorOf(answer); code == jsonrpc.CodeInternalError {
			t.Fatalf("%q: internal error: %s", uri, msg)
		}
		e.CheckHome(t)
	})
}

// A tasks/* request without params (or with null) is answered: the SDK hands such a
// request of a custom method to the middleware as a nil pointer whose methods
// panic, which ended the manager (found by FuzzJSONRPC).
func TestTasksRequestWithoutParamsIsAnswered(t *testing.T) {
	e := mcptest.Shared(t)
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/result", "tasks/list", "tasks/cancel"} {
		// Bytes after the message do not change what the SDK reads.
		for _, rest := range []string{`}`, `,"params":null}`, `}:`} {
			for _, v := range []int{mcptest.VariantSession, mcptest.VariantStateless} {
				body := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(e.NextID(), 10) + `,"method":"` + method + `"` + rest)
				rec := e.Post(v, body)
				msgs, err := mcptest.Messages(rec)
				if err != nil || !designed[rec.Code] {
					t.Fatalf("%s: HTTP %d: %v", body, rec.Code, err)
				}
				if code, msg := mcptest.ErrorOf(mcptest.AnswerOf(t, string(body), rec, msgs)); code == jsonrpc.CodeInternalError {
					t.Fatalf("%s: internal error %s", body, msg)
				}
			}
		}
	}
	// Batches too.
	rec := e.Post(mcptest.VariantSession, []byte(`[{"jsonrpc":"2.0","id":1,"method":"tasks/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`))
	if _, err := mcptest.Messages(rec); err != nil || !designed[rec.Code] {
		t.Fatalf("a batch: HTTP %d: %v", rec.Code, err)
	}
}
