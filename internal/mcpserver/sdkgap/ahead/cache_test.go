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
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

// identity are the fields of catalog.Account that say who an account is and not
// what it may see: the only ones the key leaves out.
var identity = map[string]bool{
	"Namespace": false, "Name": true, "ServiceName": true, "PrincipalName": true, "Active": true, "Ready": true, "Unchecked": true,
	"KubeServiceAccount": true, "User": true, "Groups": true,
}

// nonZero sets v (a field) to a value other than its zero.
func nonZero(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				nonZero(t, v.Field(i))
			}
		}
	default:
		t.Fatalf("a field of kind %s: teach nonZero and accountKey about it", v.Kind())
	}
}

// Every field of an account changes the key of its list, but those that only say
// who it is: a field added to catalog.Account later is in the key until someone
// decides otherwise here.
func TestEveryFieldAnAccountsListMayDependOnIsInTheKey(t *testing.T) {
	base := catalog.Account{Namespace: "team-a", Name: "a", ServiceName: "a"}
	typ := reflect.TypeFor[catalog.Account]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		other := base
		nonZero(t, reflect.ValueOf(&other).Elem().Field(i))
		same := accountKey(&base) == accountKey(&other)
		if identity[f.Name] && !same {
			t.Errorf("%s only says who the account is, yet changes the key", f.Name)
		}
		if !identity[f.Name] && same {
			t.Errorf("%s is not in the key: two accounts that differ in it would share a list", f.Name)
		}
	}
}

func TestPermissionsThatDifferOnlyInNilAndEmptyDoNotShareAList(t *testing.T) {
	every := catalog.Account{Namespace: "default"}                                                          // tools: nil, every tool
	none := catalog.Account{Namespace: "default", Permissions: metav1alpha1.Permissions{Tools: []string{}}} // tools: [], none
	if accountKey(&every) == accountKey(&none) {
		t.Fatal("an account allowed every tool and one allowed none share a key")
	}
	if accountKey(nil) == accountKey(&every) {
		t.Fatal("no account and an account share a key")
	}
}

func request(acct *catalog.Account, cursor string) *mcp.ListToolsRequest {
	return &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Cursor: cursor},
		Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{"account": acct}}}}
}

// lister is the rest of the chain: it lists the tools an account's globs allow and
// counts how often it was asked.
type lister struct {
	tools []string
	calls int
}

func (l *lister) handle(_ context.Context, _ string, req mcp.Request) (mcp.Result, error) {
	l.calls++
	acct := caller.Of(req.GetExtra())
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	for _, name := range l.tools {
		for _, g := range acct.Permissions.Tools {
			if strings.HasPrefix(name, g) {
				out.Tools = append(out.Tools, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}})
			}
		}
	}
	return out, nil
}

func names(t *testing.T, res mcp.Result) []string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var l mcp.ListToolsResult
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range l.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func TestAnswersAreKeptPerAccountAndForgottenWhenTheToolsChange(t *testing.T) {
	c := NewListCache(MaxEntries, MaxBytes, strings.ToLower)
	l := &lister{tools: []string{"a_one", "a_two", "b_one"}}
	h := c.Middleware(l.handle)
	a := &catalog.Account{Namespace: "x", Name: "a", Permissions: metav1alpha1.Permissions{Tools: []string{"a_"}}}
	b := &catalog.Account{Namespace: "x", Name: "b", Permissions: metav1alpha1.Permissions{Tools: []string{"b_"}}}
	for range 3 {
		for _, tc := range []struct {
			acct *catalog.Account
			want string
		}{{a, "[a_one a_two]"}, {b, "[b_one]"}} {
			res, err := h(context.Background(), "tools/list", request(tc.acct, ""))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(t, res), " "); "["+got+"]" != tc.want {
				t.Fatalf("%s sees %s, want %s", tc.acct.Name, got, tc.want)
			}
		}
	}
	if l.calls != 2 {
		t.Fatalf("the chain rendered %d answers for two accounts, want 2", l.calls)
	}
	// A page of its own.
	if _, err := h(context.Background(), "tools/list", request(a, "next")); err != nil || l.calls != 3 {
		t.Fatalf("a page with a cursor was answered from the first page's answer (%d renders, %v)", l.calls, err)
	}

	done := c.Changing()
	l.tools = append(l.tools, "a_three")
	// While the tools change nothing is kept.
	_, _ = h(context.Background(), "tools/list", request(a, ""))
	_, _ = h(context.Background(), "tools/list", request(a, ""))
	if l.calls != 5 {
		t.Fatalf("answers were kept while the tools changed: %d renders", l.calls)
	}
	done()
	res, _ := h(context.Background(), "tools/list", request(a, ""))
	if got := names(t, res); len(got) != 3 {
		t.Fatalf("after the change a sees %v", got)
	}
	if entries, _ := c.stats(); entries != 1 {
		t.Fatalf("%d answers kept, want 1", entries)
	}
}

func TestTheCacheKeepsItsBounds(t *testing.T) {
	l := &lister{tools: []string{"a_" + strings.Repeat("x", 1000)}}
	c := NewListCache(3, 2500, strings.ToLower)
	h := c.Middleware(l.handle)
	for i := range 10 {
		acct := &catalog.Account{Namespace: "x", MaxTools: i, Permissions: metav1alpha1.Permissions{Tools: []string{"a_"}}}
		if _, err := h(context.Background(), "tools/list", request(acct, "")); err != nil {
			t.Fatal(err)
		}
		entries, bytes := c.stats()
		if entries > 3 || bytes > 2500 {
			t.Fatalf("%d answers of %d bytes kept, bounds 3 and 2500", entries, bytes)
		}
	}
	// An answer over the byte bound is sent, not kept.
	c = NewListCache(3, 100, strings.ToLower)
	h = c.Middleware(l.handle)
	res, err := h(context.Background(), "tools/list", request(&catalog.Account{Permissions: metav1alpha1.Permissions{Tools: []string{"a_"}}}, ""))
	if err != nil || len(names(t, res)) != 1 {
		t.Fatalf("%v %v", res, err)
	}
	if entries, _ := c.stats(); entries != 0 {
		t.Fatal("an answer over the byte bound was kept")
	}
}

func TestMetaAddedAfterwardsIsSentWithTheAnswer(t *testing.T) {
	a := &ListAnswer{body: []byte(`{"tools":[]}`)}
	a.SetMeta(map[string]any{"k": "v"})
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"_meta":{"k":"v"},"tools":[]}` {
		t.Fatalf("%s", b)
	}
}

// stats are the answers the cache holds and their bytes.
func (c *ListCache) stats() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}
