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
	"net/http"
	"sync"
	"time"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release that
// flushes a stream's priming event with its first message would remove this file (no
// go-sdk issue yet).

// PrimeHold is how long the flush of a stream's priming event waits for the
// stream's first message.
const PrimeHold = 50 * time.Millisecond

// Coalesce sends the event stream of a POST in as few writes of the connection as
// it can. The SDK writes and flushes each event: the priming event (an event id and
// no data, which lets a client resume the stream with Last-Event-ID) before the
// request is handled, then each message, the answer last, and the HTTP server ends
// the response in a write of its own. For a call answered at once (a ping, a read)
// that is three writes, and three reads of the client, for one answer.
//
//   - The priming event is sent with the stream's first message when that message
//     comes within hold, and alone after hold when it does not: a long call's stream
//     is still primed, hold after it began.
//   - The answer of a POST of one request ends its stream, so its flush is left to
//     the HTTP server, which sends it with the end of the response as the handler
//     returns. Messages before it (progress, requests to the client) are flushed
//     as they come, and so is every message of a batch.
//
// Other requests go to next as they are.
func Coalesce(next http.Handler, hold time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		r, m := Peek(r, 0)
		p := &primeWriter{ResponseWriter: w, hold: hold, one: m.call()}
		defer p.end()
		next.ServeHTTP(p, r)
	})
}

// The states of a primeWriter.
const (
	// fresh: nothing written yet.
	fresh = iota
	// primed: the priming event written, nothing after it.
	primed
	// through: everything else; writes and flushes pass.
	through
	// answered: the answer of a POST of one request written; the HTTP server sends
	// it when the handler returns, which it does next.
	answered
)

// primeWriter holds back the flush of a priming event written first, and that of
// the answer of a POST of one request.
type primeWriter struct {
	http.ResponseWriter
	hold time.Duration
	// one: the POST is one request (not a notification, not a batch), whose
	// answer is the last message of its stream.
	one bool

	// mu orders the SDK's writes (the answer is written from another goroutine
	// than the priming event) and the timer's flush.
	mu    sync.Mutex
	state int
	timer *time.Timer
	ended bool
}

// isPrime says whether an SSE write is a priming event: an event named prime.
func isPrime(b []byte) bool { return bytes.HasPrefix(b, []byte("event: prime\n")) }

// isAnswer says whether an SSE write is an event whose data is a JSON-RPC response,
// as the SDK encodes one: "jsonrpc", then "id", then "result" or "error" (a request
// to the client has "method" there). Anything else is not. Only the event's head is
// searched for its data line (its name and id come before it), not a large write
// that has none.
func isAnswer(b []byte) bool {
	data, ok := bytes.CutPrefix(b, []byte("data: "))
	if !ok {
		i := bytes.Index(b[:min(len(b), eventHead)], []byte("\ndata: "))
		if i < 0 {
			return false
		}
		data = b[i+len("\ndata: "):]
	}
	rest, ok := bytes.CutPrefix(data, []byte(`{"jsonrpc":"2.0","id":`))
	if !ok || len(rest) == 0 {
		return false
	}
	if rest[0] == '"' { // a string id: up to its closing quote
		i := 1
		for i < len(rest) && rest[i] != '"' {
			if rest[i] == '\\' {
				i++
			}
			i++
		}
		rest = rest[min(i+1, len(rest)):]
	} else if i := bytes.IndexByte(rest, ','); i >= 0 { // a number
		rest = rest[i:]
	}
	return bytes.HasPrefix(rest, []byte(`,"result":`)) || bytes.HasPrefix(rest, []byte(`,"error":`))
}

// eventHead bounds where an event's data line is looked for: after "event: message"
// and an id the SDK makes (a stream id and an index).
const eventHead = 256

func (p *primeWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.state == fresh && isPrime(b):
		p.state = primed
	case p.one && isAnswer(b):
		p.through()
		p.state = answered
	default:
		p.through()
	}
	return p.ResponseWriter.Write(b)
}

// through ends the hold: what follows is written and flushed as it comes.
// Requires p.mu.
func (p *primeWriter) through() {
	p.state = through
	if p.timer != nil {
		p.timer.Stop()
	}
}

func (p *primeWriter) FlushError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.state {
	case primed:
		if p.timer == nil {
			p.timer = time.AfterFunc(p.hold, p.flushHeld)
		}
		return nil
	case answered:
		return nil
	}
	return http.NewResponseController(p.ResponseWriter).Flush()
}

func (p *primeWriter) Flush() { _ = p.FlushError() }

// flushHeld sends the priming event alone once hold has passed without a message.
func (p *primeWriter) flushHeld() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || p.state != primed {
		return
	}
	p.state = through
	_ = http.NewResponseController(p.ResponseWriter).Flush()
}

// end is called when the handler returns: the writer is no longer the timer's (the
// HTTP server sends whatever is left).
func (p *primeWriter) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	if p.timer != nil {
		p.timer.Stop()
	}
}

func (p *primeWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
