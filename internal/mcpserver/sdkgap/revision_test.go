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

package sdkgap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The headers a request of the stateless revision repeats its body in: the SDK's
// stateless handler refuses a missing Mcp-Method without naming the body's method,
// and refuses an Mcp-Name in the revision's Base64 form that matches the body.
func TestCanarySDKsHeaderChecksNameOnlyTheHeaderAndDoNotDecode(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(nil) }, &mcp.StreamableHTTPOptions{Stateless: true})

	rec := post(h, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+statelessParams()+`}`,
		map[string]string{"Mcp-Protocol-Version": statelessRevision})
	_, rpcErr := answerOf(t, rec.Body.Bytes())
	if rec.Code != http.StatusBadRequest || rpcErr == nil || rpcErr.Code != mcp.CodeHeaderMismatch {
		t.Fatalf("a request without Mcp-Method: %d %v", rec.Code, rpcErr)
	}
	if strings.Contains(rpcErr.Message, "tools/list") {
		caughtUp(t, "names the body's method when Mcp-Method is missing ("+rpcErr.Message+")",
			"transport.MirroredHeaders", transportPath)
	}

	params := strings.Replace(statelessParams(), "{", `{"name":"long","arguments":{},`, 1)
	header := statelessHeader("tools/call")
	header["Mcp-Name"] = "=?base64?" + base64.StdEncoding.EncodeToString([]byte("long")) + "?="
	rec = post(h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+params+`}`, header)
	if _, rpcErr := answerOf(t, rec.Body.Bytes()); rpcErr == nil {
		caughtUp(t, "decodes an Mcp-Name in the Base64 form before it compares it", "transport.MirroredHeaders", transportPath)
	} else if rpcErr.Code != mcp.CodeHeaderMismatch {
		t.Fatalf("a tools/call whose Mcp-Name is encoded: %d %v", rec.Code, rpcErr)
	}
}

// A tools/call result that a receiving middleware returns (a refusal before the
// tool runs) goes out on the stateless revision without the resultType the SDK's
// own handler gives a tool's result.
func TestCanarySDKLeavesResultsOfMiddlewareUntyped(t *testing.T) {
	server := newServer(nil)
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}, IsError: true}, nil
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	params := strings.Replace(statelessParams(), "{", `{"name":"long","arguments":{},`, 1)
	header := statelessHeader("tools/call")
	header["Mcp-Name"] = "long"
	rec := post(h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`, header)
	res, rpcErr := answerOf(t, rec.Body.Bytes())
	if rpcErr != nil {
		t.Fatalf("tools/call: %d %v", rec.Code, rpcErr)
	}
	var out map[string]any
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("tools/call answered %s: %v", res, err)
	}
	if out["isError"] != true {
		t.Fatalf("the middleware's result was not sent: %s", res)
	}
	if _, ok := out["resultType"]; ok {
		caughtUp(t, "gives a middleware's tools/call result its resultType", "transport.CompleteResults", transportPath)
	}
}
