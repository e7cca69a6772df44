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

// Package seal makes the tokens the server hands a client to hand back (the
// continue tokens of the verbs that page, the cursors of tasks/list and
// resources/list, the token of a result's next part) opaque and checked: each is
// its position, sealed with an HMAC-SHA256 under a key every replica shares, bound
// to the kind of token, the account and the query that made it, and to a time after
// which it is stale. A token that was forged, changed, made for another account or
// query, or is stale does not open, so what a client hands back is never decoded
// before it is known to be the server's own. A position that opens is still checked
// against what it points into (a list may have shrunk since).
package seal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MinKeyBytes is the shortest key a Sealer takes.
const MinKeyBytes = 32

// TTL is how long a token opens after it was made: long enough for a client to page
// through anything, short enough that a token copied somewhere goes stale.
const TTL = 24 * time.Hour

// macBytes of the HMAC are kept in a token: 128 bits.
const macBytes = 16

// ErrInvalid is why a token does not open: it is not one this server made for
// this account and query, or it is stale. The client starts over without it.
var ErrInvalid = errors.New("not a token this server gave out for this query, or a stale one")

// Sealer seals and opens tokens under one key.
type Sealer struct {
	key []byte
	now func() time.Time
}

// New is a Sealer with a key shared by every replica (at least MinKeyBytes).
func New(key []byte) (*Sealer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the token key has %d bytes; it needs at least %d", len(key), MinKeyBytes)
	}
	return &Sealer{key: append([]byte(nil), key...), now: time.Now}, nil
}

// Random is a Sealer with a key of its own: its tokens open in this process only.
func Random() *Sealer {
	key := make([]byte, MinKeyBytes)
	_, _ = rand.Read(key)
	s, _ := New(key)
	return s
}

// envelope is what a token holds: the position and when it goes stale (Unix seconds).
type envelope struct {
	V json.RawMessage `json:"v"`
	E int64           `json:"e"`
}

// Seal is the token of v (encoded as JSON) for a kind of token, made for scope:
// the account, then whatever of the query the token must not outlive, joined by
// Scope.
func (s *Sealer) Seal(kind, scope string, v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("seal: a %s position that is not JSON: %v", kind, err)) // a programming error
	}
	body, _ := json.Marshal(envelope{V: raw, E: s.now().Add(TTL).Unix()})
	return base64.RawURLEncoding.EncodeToString(append(s.mac(kind, scope, body), body...))
}

// Open decodes into v the position of a token made by Seal with the same kind and
// scope, or answers ErrInvalid without decoding anything the server did not seal.
func (s *Sealer) Open(kind, scope, token string, v any) error {
	if len(token) > maxTokenBytes {
		return ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < macBytes {
		return ErrInvalid
	}
	sum, body := raw[:macBytes], raw[macBytes:]
	if !hmac.Equal(sum, s.mac(kind, scope, body)) {
		return ErrInvalid
	}
	var env envelope
	if json.Unmarshal(body, &env) != nil || s.now().Unix() > env.E || json.Unmarshal(env.V, v) != nil {
		return ErrInvalid
	}
	return nil
}

// maxTokenBytes bounds a token read: longer than any the server makes.
const maxTokenBytes = 8 << 10

func (s *Sealer) mac(kind, scope string, body []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)[:macBytes]
}

// Scope joins the parts of a token's scope (the account, the query's arguments)
// so that no two different lists of parts join the same: each part is encoded as
// JSON.
func Scope(parts ...any) string {
	b, err := json.Marshal(parts)
	if err != nil {
		return fmt.Sprint(parts...)
	}
	return string(b)
}
