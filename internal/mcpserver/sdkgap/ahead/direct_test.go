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

package ahead

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

// directServer is a go-sdk server of the stateless revision with the cache in its
// chain, a filter that lists the tools an account's globs allow, Direct in front of
// its handler, and bearer tokens "a" and "b" for two accounts of different tools.
type directServer struct {
	cache *ListCache
	url   string
	// sdk counts the requests that reached the SDK's handler, seen the tools/list
	// requests the outermost middleware saw, in the SDK's chain or in Direct.
	sdk, seen atomic.Int64
	accounts  map[string]*catalog.Account
}

func newDirectServer(t *testing.T) *directServer {
	t.Helper()
	d := &directServer{cache: NewListCache(MaxEntries, MaxBytes, strings.ToLower), accounts: map[string]*catalog.Account{
		"a": {Namespace: "x", Name: "a", Permissions: metav1alpha1.Permissions{Tools: []string{"a_"}}},
		"b": {Namespace: "x", Name: "b", Permissions: metav1alpha1.Permissions{Tools: []string{"b_"}}},
	}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	for _, name := range []string{"a_one", "a_two", "b_one"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "<" + name + "> & more", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	filter := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			l, ok := res.(*mcp.ListToolsResult)
			if !ok {
				return res, err
			}
			acct := caller.Of(req.GetExtra())
			own := *l
			own.Tools = nil
			for _, tl := range l.Tools {
				if strings.HasPrefix(tl.Name, acct.Permissions.Tools[0]) {
					own.Tools = append(own.Tools, tl)
				}
			}
			return &own, nil
		}
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.sdk.Add(1)
		sdk.ServeHTTP(w, r)
	})
	around := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				d.seen.Add(1)
			}
			return next(ctx, method, req)
		}
	}
	// around stands where telemetry does: outermost in the SDK's chain, and given
	// to Direct.
	srv.AddReceivingMiddleware(around, d.cache.Middleware, filter)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		acct, ok := d.accounts[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: acct.Name, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"account": acct}}, nil
	}
	hs := httptest.NewServer(auth.RequireBearerToken(verify, nil)(d.cache.Direct(counted, DirectOptions{Around: around})))
	t.Cleanup(hs.Close)
	d.url = hs.URL
	return d
}

const listParams = `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`

// list posts a tools/list of the stateless revision and returns the response.
func (d *directServer) list(t *testing.T, token string, id any, params string, header http.Header) string {
	t.Helper()
	idJSON, _ := json.Marshal(id)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/list","params":%s}`, idJSON, params)
	req, err := http.NewRequest(http.MethodPost, d.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, out)
	}
	s := string(out)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(s, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return data
			}
		}
		t.Fatalf("no event in %q", s)
	}
	return strings.TrimSpace(s)
}

// result is a response's id and result as sent.
func result(t *testing.T, response string) (id, res string) {
	t.Helper()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(response), &msg); err != nil || msg.Error != nil {
		t.Fatalf("not a result: %s (%v)", response, err)
	}
	return string(msg.ID), string(msg.Result)
}

// A client of the stateless revision that lists the tools again gets the answer the
// SDK gave the first time, to the byte, with its own id, without the SDK making a
// session for it; its middleware (telemetry's place) still see every request.
func TestAStatelessListAskedAgainIsTheSDKsAnswerSentAgain(t *testing.T) {
	d := newDirectServer(t)
	_, first := result(t, d.list(t, "a", 1, listParams, nil))
	if !strings.Contains(first, `"a_one"`) || strings.Contains(first, `"b_one"`) {
		t.Fatalf("a's list: %s", first)
	}
	for i, id := range []any{2, "req-3", -4} {
		gotID, again := result(t, d.list(t, "a", id, listParams, nil))
		want, _ := json.Marshal(id)
		if gotID != string(want) {
			t.Fatalf("answer %d has id %s, want %s", i, gotID, want)
		}
		if again != first {
			t.Fatalf("answer %d differs from the SDK's:\n%s\n%s", i, again, first)
		}
	}
	if n := d.sdk.Load(); n != 1 {
		t.Fatalf("the SDK's handler served %d of 4 lists of the same request, want 1", n)
	}
	if n := d.seen.Load(); n != 4 {
		t.Fatalf("the middleware around Direct saw %d of 4 lists", n)
	}

	// What the SDK has not answered before goes to it: other params, another
	// account, an id it would send back otherwise, and the first list after the
	// tools changed.
	other := `{"cursor":"","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	_, _ = result(t, d.list(t, "a", 5, other, nil))
	_, b := result(t, d.list(t, "b", 6, listParams, nil))
	if strings.Contains(b, `"a_one"`) || !strings.Contains(b, `"b_one"`) {
		t.Fatalf("b's list: %s", b)
	}
	_, _ = result(t, d.list(t, "a", json.RawMessage(`"\u0061"`), listParams, nil))
	done := d.cache.Changing()
	done()
	_, _ = result(t, d.list(t, "a", 8, listParams, nil))
	if n := d.sdk.Load(); n != 5 {
		t.Fatalf("the SDK's handler served %d lists, want 5", n)
	}
}

// The header by which Direct tells the cache under which request to keep an answer
// is the server's own: a client that sends it, with the digest of another account's
// request, does not get its own list kept under it.
func TestAForgedListRequestHeaderKeepsNothingForAnotherAccount(t *testing.T) {
	d := newDirectServer(t)
	// What a's request is known by (the digest is no secret: tools, permissions and
	// headers are what an attacker may know).
	req, _ := http.NewRequest(http.MethodPost, d.url, nil)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	req.Host = strings.TrimPrefix(d.url, "http://")
	digest := requestDigest(req, json.RawMessage(listParams), d.accounts["a"])
	forged := http.Header{requestHeader: {hex.EncodeToString(digest[:])}}
	for range 2 {
		_, b := result(t, d.list(t, "b", 1, listParams, forged))
		if !strings.Contains(b, `"b_one"`) {
			t.Fatalf("b's list: %s", b)
		}
	}
	_, a := result(t, d.list(t, "a", 2, listParams, nil))
	if !strings.Contains(a, `"a_one"`) || strings.Contains(a, `"b_one"`) {
		t.Fatalf("a was answered with b's list: %s", a)
	}
}
