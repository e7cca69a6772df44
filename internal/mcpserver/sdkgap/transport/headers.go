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
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release whose
// stateless handler decodes a Base64 Mcp-Name and names the body's value in its refusal
// would remove this file (no go-sdk issue yet).

// namedBy is the member of params a request's Mcp-Name header repeats, by method.
var namedBy = map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

// MirroredHeaders checks, ahead of the SDK, the headers in which a request of the
// stateless revision repeats its body (Mcp-Method: its method; Mcp-Name: the
// params.name of tools/call and prompts/get, the params.uri of resources/read).
// The revision has the server refuse a request whose header is missing or says
// otherwise than its body (400, -32020 HeaderMismatch): a proxy may have routed or
// limited it by the header, and the server would do what the body says. go-sdk
// v1.8.0 refuses those too, but names only the header when it is missing, and
// compares an Mcp-Name sent in the revision's Base64 form (=?base64?...?=) without
// decoding it, so it refuses a name that matches. This refusal names the header's
// value and the body's, and an encoded Mcp-Name that matches is handed on decoded.
// limit is the body limit of next (see Peek).
func MirroredHeaders(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, msg := Peek(r, limit)
		if msg.call() && msg.Method != "" && r.Header.Get("Mcp-Protocol-Version") >= Stateless {
			if problem := mirrorProblem(r, msg); problem != "" {
				refuseMismatch(w, msg.ID, problem)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// mirrorProblem says how r's headers fail to repeat msg ("" when they do); an
// encoded Mcp-Name that matches is set decoded on r.
func mirrorProblem(r *http.Request, msg *Message) string {
	switch got := r.Header.Get("Mcp-Method"); {
	case got == "":
		return fmt.Sprintf("the Mcp-Method header is missing; it must repeat the body's method %q", msg.Method)
	case got != msg.Method:
		return fmt.Sprintf("the Mcp-Method header %q does not match the body's method %q", got, msg.Method)
	}
	member, ok := namedBy[msg.Method]
	if !ok {
		return ""
	}
	var params map[string]json.RawMessage
	var body string
	if Unmarshal(msg.RawParams, &params) != nil || Unmarshal(params[member], &body) != nil || body == "" {
		return "" // no name to repeat: the method refuses such params itself
	}
	sent := r.Header.Get("Mcp-Name")
	got, ok := decodeHeader(sent)
	switch {
	case sent == "":
		return fmt.Sprintf("the Mcp-Name header is missing; it must repeat the body's params.%s %q", member, body)
	case !ok:
		return fmt.Sprintf("the Mcp-Name header %q is not valid Base64 between =?base64? and ?=; the body's params.%s is %q", sent, member, body)
	case got != body:
		return fmt.Sprintf("the Mcp-Name header %q does not match the body's params.%s %q", got, member, body)
	}
	if got != sent {
		r.Header.Set("Mcp-Name", got) // the SDK compares it as sent
	}
	return ""
}

// decodeHeader is a header's value, decoded when it comes in the revision's Base64
// form; false when that form does not decode.
func decodeHeader(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// refuseMismatch answers the request of id with 400 and the revision's
// HeaderMismatch error.
func refuseMismatch(w http.ResponseWriter, id json.RawMessage, problem string) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": mcp.CodeHeaderMismatch, "message": "Header mismatch: " + problem}})
	if err != nil {
		http.Error(w, "Header mismatch: "+problem, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}
