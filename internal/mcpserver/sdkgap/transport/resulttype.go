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
	"context"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release that sets
// resultType on a result a receiving middleware returns would remove this file (no
// go-sdk issue yet).

// CompleteResults is a receiving middleware that gives a result of the stateless
// revision made by a middleware the resultType "complete" the revision requires of
// every result. go-sdk v1.8.0 sets it on a tools/call, prompts/get or
// resources/read result only in its own handlers of those methods, in an
// unexported field: a result a middleware returns instead (a refusal before the
// tool runs) goes out without it. (The SDK marks its other result types after the
// middleware.) Install it outside every middleware that answers on its own, and
// outside the redaction, which copies what it changes.
func CompleteResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil || !StatelessRequest(req) {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.CallToolResult:
			return complete(r), nil
		case *mcp.GetPromptResult:
			return complete(r), nil
		case *mcp.ReadResourceResult:
			return complete(r), nil
		}
		return res, nil
	}
}

// complete is r with the resultType "complete", or r itself when it has one. The
// field is the SDK's own: set by decoding, its exported fields copied over.
func complete[T any](r *T) *T {
	if r == nil {
		return r
	}
	src := reflect.ValueOf(r).Elem()
	if f := src.FieldByName("resultType"); !f.IsValid() || f.String() != "" {
		return r
	}
	out := new(T)
	if json.Unmarshal([]byte(`{"resultType":"complete"}`), out) != nil {
		return r
	}
	dst := reflect.ValueOf(out).Elem()
	for i := range src.NumField() {
		if src.Type().Field(i).IsExported() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return out
}
