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

// Package ahead answers what it can ahead of go-sdk v1.8.0, which builds and
// decodes every answer anew.
//
// tools/list comes from answers rendered once (ListCache). With a thousand classes
// an answer is a megabyte or two of JSON: building it for every request (the
// per-account filter, the Tasks adapter's copy, the redaction walk, the encoding of
// a thousand schemas) costs more than sending it. The cache keeps the final answer,
// filtered, adapted and redacted, as JSON, under everything it depends on: the
// tools served now, the caller's permissions, namespace, toolsets and tool limit,
// the known client it names itself as, the protocol revision and the page.
//
// Direct, in front of the Streamable HTTP handlers, sends a kept list, and answers a
// live session's ping and tasks/get, without the SDK's transport, whose decoders
// allocate 32 KiB each time they run. The register of the room (package sdkgap)
// says which SDK behaviour each part stands in for, and which test fails once the
// SDK catches up.
package ahead

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release that keeps
// an encoded tools/list until the tools change would remove this file (no go-sdk issue
// yet).

// The bounds of a cache: answers kept, and their bytes in all. An answer larger
// than MaxBytes is rendered for each request, as without a cache.
const (
	MaxEntries = 256
	MaxBytes   = 16 << 20
)

// ListCache holds rendered tools/list answers. Its zero value is not usable:
// NewListCache.
type ListCache struct {
	maxEntries, maxBytes int
	// client is what of a client's own name (clientInfo.name) an answer depends on.
	client func(name string) string

	mu sync.Mutex
	// generation counts the changes of the served tools: odd while one is under
	// way (nothing is cached then), even when the tools are whole.
	generation uint64
	entries    map[key]*list.Element
	// order has the most recently used answer at its front.
	order *list.List
	bytes int
}

type key struct {
	generation uint64
	// account is a digest of what the answer reads of the account (accountKey).
	account  [sha256.Size]byte
	revision string
	cursor   string
	// client is what of the client's name the answer depends on (ListCache.client).
	client string
	// request is the digest of a stateless request Direct answers (requestDigest); a
	// key with it holds the result the SDK sent, and nothing else is set but the
	// generation.
	request [sha256.Size]byte
}

type entry struct {
	key  key
	body []byte
}

// NewListCache makes a cache of at most maxEntries answers and maxBytes bytes, for
// answers that depend on the client's own name (clientInfo.name) through client:
// the tools an account is listed may depend on the client it uses. client maps a
// name to few values (a known client, or "" for the rest), which key the answers.
func NewListCache(maxEntries, maxBytes int, client func(name string) string) *ListCache {
	return &ListCache{maxEntries: maxEntries, maxBytes: maxBytes, client: client, entries: map[key]*list.Element{}, order: list.New()}
}

// clientKey is what of a client's name an answer depends on.
func (c *ListCache) clientKey(info *mcp.Implementation) string {
	if info == nil {
		return c.client("")
	}
	return c.client(info.Name)
}

// Changing forgets every answer and caches none until the returned function is
// called: call it before the served tools change, and the function once they are
// whole again (the tool table and the SDK's tools both).
func (c *ListCache) Changing() (done func()) {
	c.next()
	return c.next
}

// next begins or ends a change of the served tools: a generation of its own, with
// no answer kept.
func (c *ListCache) next() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	clear(c.entries)
	c.order.Init()
	c.bytes = 0
}

// Middleware answers tools/list from the cache, and renders and keeps the answer of
// the middleware inside it when the cache has none. Install it inside the session
// registry (which must see every request) and outside the middleware that shape the
// answer (the Tasks adapter, the permission filter): what they return is what is
// kept, redacted here, since the outer redaction cannot see into a rendered answer.
func (c *ListCache) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" {
			// Every other method passes through a frame this small: the handler
			// goroutine's stack grows (and is copied) only as deep as it must.
			return next(ctx, method, req)
		}
		return c.list(ctx, method, req, next)
	}
}

// list answers a tools/list from the cache, or renders the answer of next and keeps it.
func (c *ListCache) list(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	k := keyOf(req)
	if r, ok := req.(*mcp.ListToolsRequest); ok {
		k.client = c.clientKey(r.ClientInfo())
	}
	if body := c.lookup(&k); body != nil {
		return &ListAnswer{body: body, keep: c.keepDirect(k, req)}, nil
	}
	res, err := next(ctx, method, req)
	if err != nil || res == nil || len(res.GetMeta()) > 0 {
		return res, err
	}
	if l, ok := res.(*mcp.ListToolsResult); ok && transport.StatelessRequest(req) {
		// The SDK marks the answers of the stateless revision complete after the
		// middleware have run, and only on its own types: a rendered answer says
		// so itself.
		own := *l
		own.ResultType = "complete"
		res = &own
	}
	body, err := render(redact.Value(res))
	if err != nil || len(body) < 2 || body[0] != '{' {
		return res, nil // not an object: send it as it is, uncached
	}
	c.put(k, body)
	return &ListAnswer{body: body, keep: c.keepDirect(k, req)}, nil
}

// render encodes an answer as the SDK does: without HTML escapes.
func render(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// put keeps an answer, unless the tools changed since it was begun.
func (c *ListCache) put(k key, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k.generation != c.generation || k.generation%2 != 0 || len(body) > c.maxBytes {
		return
	}
	if el, ok := c.entries[k]; ok {
		c.remove(el)
	}
	for c.order.Len() > 0 && (c.order.Len() >= c.maxEntries || c.bytes+len(body) > c.maxBytes) {
		c.remove(c.order.Back())
	}
	if c.maxEntries <= 0 {
		return
	}
	c.entries[k] = c.order.PushFront(&entry{key: k, body: body})
	c.bytes += len(body)
}

func (c *ListCache) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry)
	delete(c.entries, e.key)
	c.bytes -= len(e.body)
}

// keyOf is what a tools/list answer depends on besides the served tools.
func keyOf(req mcp.Request) key {
	k := key{account: accountKey(caller.Of(req.GetExtra()))}
	if r, ok := req.(interface{ ProtocolVersion() string }); ok {
		k.revision = r.ProtocolVersion()
	}
	if transport.StatelessRequest(req) {
		// The stateless form (resultType, no execution.taskSupport) never shares an
		// answer with a session's, whatever the revision strings say.
		k.revision = "stateless " + k.revision
	}
	if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil {
		k.cursor = r.Params.Cursor
	}
	return k
}

// accountKey digests everything of an account but who it is: its namespace (the
// workflows a schema offers it), its permissions (which tools it sees), its clients
// and tool limit (whether it is served per-class tools), and any field added to
// catalog.Account later. Accounts with equal digests see equal lists. %#v tells a
// nil list from an empty one (permissions.tools: nil allows every tool, [] none).
func accountKey(acct *catalog.Account) [sha256.Size]byte {
	if acct == nil {
		return sha256.Sum256([]byte("no account"))
	}
	k := *acct
	k.Name, k.ServiceName, k.PrincipalName, k.KubeServiceAccount, k.User, k.Groups = "", "", "", "", "", nil
	k.Active, k.Ready, k.Unchecked = false, false, false
	return sha256.Sum256(fmt.Appendf(nil, "%#v", k))
}

// ListAnswer is a rendered tools/list result. The SDK may add _meta (its server info,
// to the stateless revision) after the middleware have run; the rendered JSON
// takes it in front.
type ListAnswer struct {
	mcp.ResultBase
	body []byte
	// keep, if set, is given the JSON the SDK sends (keepDirect).
	keep func([]byte)
}

// MarshalJSON is the rendered answer with the _meta set since.
func (a *ListAnswer) MarshalJSON() ([]byte, error) {
	out, err := a.marshal()
	if err == nil && a.keep != nil {
		a.keep(out)
		a.keep = nil
	}
	return out, err
}

func (a *ListAnswer) marshal() ([]byte, error) {
	if len(a.Meta) == 0 {
		return a.body, nil
	}
	meta, err := json.Marshal(a.Meta)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(meta) + len(a.body) + 16)
	b.WriteString(`{"_meta":`)
	b.Write(meta)
	if rest := bytes.TrimSpace(a.body[1:]); len(rest) > 0 && rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(a.body[1:])
	return b.Bytes(), nil
}
