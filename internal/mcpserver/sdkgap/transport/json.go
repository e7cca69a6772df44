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
	"encoding/json"
	"net/http"
	"strings"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release whose
// Streamable HTTP handler answers a POST that does not accept a stream in JSON, per
// request, would remove this file (no go-sdk issue yet).

// PlainJSON gives a POST that does not accept a stream one application/json answer:
// the JSON-RPC response (an array for a batch), with the status and headers
// (Mcp-Session-Id among them) the Streamable HTTP handler next gave. A POST accepts
// a stream when its Accept header names text/event-stream (or text/*); one without
// Accept, with application/json alone or with */* (curl's default) gets JSON.
// Notifications the server sends during such a call (progress) are dropped: the
// client has no stream to take them. Other requests go to next as they are.
//
// The SDK's JSONResponse option would do this for every client of the handler;
// sessions live in one handler, so the choice is made per request here.
func PlainJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || AcceptOf(r.Header).Stream() {
			next.ServeHTTP(w, r)
			return
		}
		// The handler wants both; the answer it streams is turned into JSON below.
		r.Header.Set("Accept", "application/json, text/event-stream")
		b := &buffered{header: http.Header{}}
		next.ServeHTTP(b, r)
		b.answer(w)
	})
}

// buffered takes the handler's answer: a stream is read event by event and only
// its JSON-RPC responses are kept; any other answer (202, an error) is kept whole.
type buffered struct {
	header http.Header
	code   int
	stream bool
	// pending is the stream's unfinished event; responses its responses so far.
	pending   []byte
	responses []json.RawMessage
	body      bytes.Buffer
}

func (b *buffered) Header() http.Header { return b.header }

func (b *buffered) WriteHeader(code int) {
	if b.code != 0 {
		return
	}
	b.code = code
	mt, _, _ := strings.Cut(b.header.Get("Content-Type"), ";")
	b.stream = strings.TrimSpace(mt) == "text/event-stream"
}

func (b *buffered) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.WriteHeader(http.StatusOK)
	}
	if !b.stream {
		return b.body.Write(p)
	}
	b.pending = append(b.pending, p...)
	for {
		i := bytes.Index(b.pending, []byte("\n\n"))
		if i < 0 {
			break
		}
		b.event(b.pending[:i])
		b.pending = b.pending[i+2:]
	}
	return len(p), nil
}

// Flush does nothing: the answer is written once whole.
func (b *buffered) Flush() {}

// event keeps the data of one event if it is a JSON-RPC response.
func (b *buffered) event(ev []byte) {
	var data []byte
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimSpace(rest)...)
		}
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if len(data) == 0 || json.Unmarshal(data, &msg) != nil || msg.Method != "" || len(msg.ID) == 0 {
		return
	}
	b.responses = append(b.responses, json.RawMessage(data))
}

// answer writes what the handler answered, a stream as JSON.
func (b *buffered) answer(w http.ResponseWriter) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	for k, v := range b.header {
		w.Header()[k] = v
	}
	if !b.stream {
		w.WriteHeader(b.code)
		_, _ = w.Write(b.body.Bytes())
		return
	}
	w.Header().Del("Connection")
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/json")
	var body []byte
	switch len(b.responses) {
	case 0:
		// The session closed before it answered.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("the server closed the session before it answered\n"))
		return
	case 1:
		body = b.responses[0]
	default:
		body, _ = json.Marshal(b.responses)
	}
	w.WriteHeader(b.code)
	_, _ = w.Write(append(body, '\n'))
}
