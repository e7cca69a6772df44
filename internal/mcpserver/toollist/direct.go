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

package toollist

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/access"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/transport"
)

// requestHeader carries, from Direct to Middleware, the digest of a tools/list of the
// stateless revision (requestDigest). Direct sets it on the request it hands on and
// drops any the client sent.
const requestHeader = "Sandbar-Tools-List-Request"

// Direct answers a tools/list of the stateless revision (2026-07-28) without the SDK,
// when the SDK answered the same request before: the same params, revision, host and
// Mcp-* headers, from an account of the same permissions (accountKey), and the served
// tools have not changed since. The answer is the JSON-RPC response the SDK sent then,
// with the request's id; the SDK would have made a session for the request, run every
// middleware, and encoded the megabyte or two of a large list twice, to send the same.
// around is what must still see every request (telemetry: its span, metrics, request
// log and audit); it must not change a tools/list answer. Every other request goes to
// next as it came. limit is the body limit of the handler behind it.
//
// Install it in front of the Streamable HTTP handlers (of every revision: it drops
// the header by which it tells Middleware what to keep, wherever a client sent it),
// and Strip in front of every other transport.
func (c *Cache) Direct(next http.Handler, around mcp.Middleware, limit int64) http.Handler {
	serve := around(func(_ context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		return req.(*directRequest).answer, nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestHeader)
		if !transport.IsStateless(r) {
			next.ServeHTTP(w, r)
			return
		}
		r, msg := transport.Peek(r, limit)
		if msg == nil || msg.Method != "tools/list" || !plainID(msg.ID) || !wellFormed(r) {
			next.ServeHTTP(w, r)
			return
		}
		params := msg.RawParams()
		info := auth.TokenInfoFromContext(r.Context())
		digest := requestDigest(r, params, access.AccountOf(&mcp.RequestExtra{TokenInfo: info}))
		body := c.direct(digest)
		if body == nil {
			r.Header.Set(requestHeader, hex.EncodeToString(digest[:]))
			next.ServeHTTP(w, r)
			return
		}
		req := &directRequest{answer: &Answer{body: body}}
		req.Extra = &mcp.RequestExtra{TokenInfo: info, Header: r.Header}
		req.Params = &mcp.ListToolsParams{}
		if len(params) > 0 {
			// The SDK decoded the same bytes before and served them.
			_ = json.Unmarshal(params, req.Params)
		}
		if _, err := serve(r.Context(), "tools/list", req); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		head := append(append([]byte(`{"jsonrpc":"2.0","id":`), msg.ID...), `,"result":`...)
		const tail = "}\n"
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(body)+len(tail)))
		w.WriteHeader(http.StatusOK)
		// The answer is not copied: it is written from where it is kept.
		if _, err := w.Write(head); err == nil {
			if _, err := w.Write(body); err == nil {
				_, _ = w.Write([]byte(tail))
			}
		}
	})
}

// Strip drops the header by which Direct tells Middleware what to keep: install it
// in front of a transport without Direct.
func Strip(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestHeader)
		next.ServeHTTP(w, r)
	})
}

// directRequest is a tools/list answered by Direct, as the middleware around it see it.
type directRequest struct {
	mcp.ListToolsRequest
	answer *Answer
}

// direct is the response kept for a request digest, nil without one.
func (c *Cache) direct(digest [sha256.Size]byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key{generation: c.generation, request: digest}]
	if !ok || c.generation%2 != 0 {
		return nil
	}
	c.order.MoveToFront(el)
	c.hits++
	return el.Value.(*entry).body
}

// keepDirect is, for a stateless request that Direct saw, the function that keeps the
// result the SDK sends for it under the request's digest; nil for any other request.
func (c *Cache) keepDirect(k key, req mcp.Request) func([]byte) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil || !transport.StatelessRequest(req) {
		return nil
	}
	digest, err := hex.DecodeString(extra.Header.Get(requestHeader))
	if err != nil || len(digest) != sha256.Size {
		return nil
	}
	dk := key{generation: k.generation, request: [sha256.Size]byte(digest)}
	return func(result []byte) { c.put(dk, result) }
}

// requestDigest is everything of a stateless tools/list that its answer, or the SDK's
// checks of it, read: its params, the revision, the host, the Mcp-* headers, and the
// account (accountKey).
func requestDigest(r *http.Request, params json.RawMessage, acct *catalog.Account) [sha256.Size]byte {
	h := sha256.New()
	write := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	k := accountKey(acct)
	h.Write(k[:])
	write(r.Host)
	names := make([]string, 0, 4)
	for name := range r.Header {
		if strings.HasPrefix(name, "Mcp-") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		write(name)
		for _, v := range r.Header[name] {
			write(v)
		}
	}
	h.Write(params)
	return [sha256.Size]byte(h.Sum(nil))
}

// plainID is an id whose JSON the SDK sends back as the client sent it: an integer of
// digits, or a string without escapes.
func plainID(id json.RawMessage) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	if id[0] == '"' {
		return len(id) >= 2 && id[len(id)-1] == '"' && !bytes.ContainsAny(id[1:len(id)-1], "\"\\") && !hasControl(id)
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// wellFormed is a POST the SDK's stateless handler takes: JSON in, and an Accept
// header that names both JSON and a stream.
func wellFormed(r *http.Request) bool {
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		return false
	}
	var jsonOK, streamOK bool
	for _, v := range r.Header.Values("Accept") {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	return jsonOK && streamOK
}
