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

// PrimeHold is how long the flush of a stream's priming event waits for the
// stream's first message.
const PrimeHold = 50 * time.Millisecond

// HoldPrime sends the priming event of a POST's event stream with the stream's
// first message when that message comes within hold, and alone after hold when
// it does not. The SDK writes and flushes the priming event (an event id and no
// data, which lets a client resume the stream with Last-Event-ID) before the
// request is handled, and the answer in a second write: for a call answered at
// once (a ping, a read) that is two writes and two reads of the connection
// instead of one. A long call's stream is still primed, hold after it began. Other
// requests go to next as they are.
func HoldPrime(next http.Handler, hold time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		p := &primeWriter{ResponseWriter: w, hold: hold}
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
)

// primeWriter holds back the flush of a priming event written first.
type primeWriter struct {
	http.ResponseWriter
	hold time.Duration

	// mu orders the SDK's writes (the answer is written from another goroutine
	// than the priming event) and the timer's flush.
	mu    sync.Mutex
	state int
	timer *time.Timer
	ended bool
}

// isPrime says whether an SSE write is a priming event: an event named prime.
func isPrime(b []byte) bool { return bytes.HasPrefix(b, []byte("event: prime\n")) }

func (p *primeWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.state == fresh && isPrime(b):
		p.state = primed
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
	if p.state == primed {
		if p.timer == nil {
			p.timer = time.AfterFunc(p.hold, p.flushHeld)
		}
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
