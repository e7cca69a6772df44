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

package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

// A session without an id that outlives its requests (a legacy SSE stream's) keeps
// its entry, so a sweep can close it, even when its requests claim the stateless
// revision in their _meta; the entry goes when the session ends.
func TestASessionsEntryLastsUntilTheSessionEnds(t *testing.T) {
	acct := &catalog.Account{Namespace: "default", Name: "claude", ServiceName: "claude", Active: true, Ready: true}
	store := catalog.NewStore()
	store.Publish(&catalog.Snapshot{Classes: map[string]*catalog.Class{}, Properties: map[string]*catalog.Property{},
		Workflows: map[string]*catalog.Workflow{}, Accounts: map[string]*catalog.Account{"claude": acct}})
	s := NewRegistry(store, nil, nil)
	info := caller.TokenInfo("default/claude", acct, caller.Key{Name: "claude-key", ResourceVersion: "1"})
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	// The token info the HTTP layer would hand the request.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ListToolsRequest); ok {
				r.Extra = &mcp.RequestExtra{TokenInfo: info}
			}
			return next(ctx, method, req)
		}
	}, s.Middleware)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID() != "" {
		t.Fatalf("the session has id %q; the test needs one without", ss.ID())
	}
	_, err = cs.ListTools(ctx, &mcp.ListToolsParams{Meta: mcp.Meta{
		mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Account(ss); got != acct {
		t.Fatalf("after a request claiming the stateless revision the session's account is %v, want %v", got, acct)
	}
	_ = cs.Close()
	gone := func(context.Context) (bool, error) { return s.Account(ss) == nil, nil }
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, gone); err != nil {
		t.Fatal("the entry of a session that ended is still kept")
	}
}
