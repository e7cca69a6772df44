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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): go-sdk#1264 (the request id
// for middleware) and a CallToolParams with the task member (the SDK's Tasks,
// go-sdk#626) would remove this file.

// Message is what the HTTP layer reads of a POSTed JSON-RPC message before the SDK
// parses it: its id, its method, its params as sent and a tools/call's params.task,
// which the SDK does not hand to middleware (or drops). It is read as the SDK reads it
// (Unmarshal). A member of another type than JSON-RPC gives it leaves that field
// empty, and may leave the fields of the members after it empty (the SDK refuses such
// a message); a batch leaves them all empty.
type Message struct {
	// JSONRPC is the message's protocol version: the SDK refuses any but "2.0".
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Task json.RawMessage `json:"task"`
	} `json:"-"`
	// RawParams is the message's params as the client sent them (nil without).
	RawParams json.RawMessage `json:"params"`
}

// call says whether the message is one request: an id, not a notification or a
// batch.
func (m *Message) call() bool {
	return m != nil && len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
}

type messageKey struct{}

// Peek is the message of a POST (nil for any other request, a body over limit
// bytes, one that could not be read, or one that is not JSON), read and parsed once
// for whoever asks (the request it returns carries it; pass that one on), and the
// request whose body gives the handler behind the same bytes. limit is the body
// limit of that handler (0: the SDK's default), which refuses a longer body itself.
func Peek(r *http.Request, limit int64) (*http.Request, *Message) {
	if m, ok := r.Context().Value(messageKey{}).(*Message); ok {
		return r, m
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return r, nil
	}
	if limit <= 0 {
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	body, whole, err := readBody(r.Body, r.ContentLength, limit)
	if whole {
		rb := &replayBody{Closer: r.Body}
		rb.Reset(body)
		r.Body = rb
	} else {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	}
	var m *Message
	if err == nil && whole {
		m = parse(body)
	}
	return r.WithContext(context.WithValue(r.Context(), messageKey{}, m)), m
}

// parse reads a message's body (nil when it is not JSON). Its raw fields share the
// body's bytes.
func parse(body []byte) *Message {
	if !shallow(body) {
		return nil
	}
	m := &Message{}
	if _, err := sjson.Parse(body, m, sdkFlags|sjson.DontCopyRawMessage); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return nil
		}
		return m
	}
	if m.Method == "tools/call" && len(m.RawParams) > 0 && m.RawParams[0] == '{' {
		_, _ = sjson.Parse(m.RawParams, &m.Params, sdkFlags|sjson.DontCopyRawMessage)
	}
	return m
}

// replayBody gives the body read again, and closes the request's.
type replayBody struct {
	bytes.Reader
	io.Closer
}

// readBody reads a body of size bytes (-1: unknown) up to limit+1 bytes, in one
// buffer when its size is known; whole is true when it ended within limit.
func readBody(body io.Reader, size, limit int64) (out []byte, whole bool, err error) {
	if size < 0 || size > limit {
		size = 512
	}
	out = make([]byte, 0, size+1) // +1: room for the read that finds the end
	for {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		room := out[len(out):cap(out)]
		if over := int64(len(out)+len(room)) - (limit + 1); over > 0 {
			room = room[:int64(len(room))-over]
		}
		n, rerr := body.Read(room)
		out = out[:len(out)+n]
		switch {
		case int64(len(out)) > limit:
			return out, false, nil
		case rerr == io.EOF:
			return out, true, nil
		case rerr != nil:
			return out, false, rerr
		}
	}
}
