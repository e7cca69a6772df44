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

// Package authorize decides what an authenticated account may do: which tools it may
// see and call (its permissions' globs, read-only), in which namespaces it may act,
// the Guard that applies both to every MCP method, and the tool budget (Plan) that
// bounds its per-class tools by what its clients take. It does not say who the
// account is (packages keys and oauth) or bound what it holds open (package sessions).
package authorize

import (
	"context"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// MayCall says whether an account may see and call a served tool: a read-only
// account only read-only tools, and only tools matching one of its globs (matched
// against the served and the canonical name). No globs given (nil) means every tool;
// an empty list (tools: []) means none. An explicit tool (tool.Info.Explicit) is
// allowed only by an entry that names it, in either name style: no glob grants it.
func MayCall(acct *catalog.Account, name string, info tool.Info) bool {
	if acct == nil || (acct.Permissions.ReadOnly && !info.ReadOnly) {
		return false
	}
	globs := acct.Permissions.Tools
	if globs == nil {
		globs = []string{"*"}
	}
	for _, g := range globs {
		if info.Explicit {
			if names(g, name, info.Canonical) {
				return true
			}
			continue
		}
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, info.Canonical); ok {
			return true
		}
	}
	return false
}

// names says whether a permission entry is the name of a tool, served or canonical,
// in either name style.
func names(entry, served, canonical string) bool {
	return entry == served || entry == canonical ||
		entry == tool.Encode(tool.StyleUnderscore, canonical) || entry == tool.Encode(tool.StyleDotted, canonical)
}

// NamespaceAllowed says whether an account may act in a namespace: its own, or one
// its permissions list ("*" for all).
func NamespaceAllowed(acct *catalog.Account, ns string) bool {
	if acct == nil {
		return false
	}
	if ns == acct.Namespace {
		return true
	}
	for _, n := range acct.Permissions.Namespaces {
		if n == ns || n == "*" {
			return true
		}
	}
	return false
}

// Namespace resolves a requested namespace for an account: "" is its own; one it may
// not use is a domain error that says which it may.
func Namespace(acct *catalog.Account, requested string) (string, error) {
	if requested == "" {
		return acct.Namespace, nil
	}
	if NamespaceAllowed(acct, requested) {
		return requested, nil
	}
	extra := ""
	if len(acct.Permissions.Namespaces) > 0 {
		extra = " and " + strings.Join(acct.Permissions.Namespaces, ", ")
	}
	return "", tool.Fail("forbidden: this account may act in namespace %q%s, not %q", acct.Namespace, extra, requested)
}

// RPCError is the JSON-RPC answer to an error of a method other than tools/call: a
// refusal becomes -32600 with what was refused; anything else stays as it is.
func RPCError(err error) error {
	if msg, ok := tool.Denied(err); ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg}
	}
	return err
}

// Namespaces are the namespaces an account names: its own first.
func Namespaces(acct *catalog.Account) []string {
	if acct == nil {
		return nil
	}
	return append([]string{acct.Namespace}, acct.Permissions.Namespaces...)
}

// The verbs whose permission bounds the methods that are not tools: an account sees
// and reads instances as resources (and completes their names) only if it may call
// entity.find, metamodel objects only if it may call schema.classes, and prompts
// (which start workflow processes) only if it may call workflow.start-process.
const (
	InstancesVerb = "sandbar.entity.find"
	MetamodelVerb = "sandbar.schema.classes"
	PromptsVerb   = "sandbar.workflow.start-process"
)

// Guard applies an account's tool permissions to every MCP method: tools by their
// own names, the other methods through the verb that does the same (InstancesVerb,
// MetamodelVerb, PromptsVerb).
type Guard struct {
	served *tool.Table
	style  tool.NameStyle
	// maxTools is the tool limit of accounts that declare no clients (0: none).
	maxTools int
	// budgets are the accounts' budgets for the table served now.
	budgets atomic.Pointer[budgets]
}

// budgets cache Plan for one served table: every tools/call asks for the caller's
// budget, and Plan matches every served tool against the account's globs.
// Catalog accounts are immutable once published (a change publishes a new one), so
// an account's pointer keys its budget.
type budgets struct {
	// tools is the served table's map (Table.Replace swaps it for another).
	tools    unsafe.Pointer
	withheld bool

	mu        sync.Mutex
	byAccount map[budgetKey]Budget
}

// budgetKey is an account and the known client (tool.ClientOf) it asks with.
type budgetKey struct {
	acct   *catalog.Account
	client string
}

// maxBudgets bounds the cache of one table; past it the cache starts over.
const maxBudgets = 4096

// NewGuard guards the tools of served, whose names are spelt in style; an account
// that declares no clients takes at most maxTools tools (0: no limit).
func NewGuard(served *tool.Table, style tool.NameStyle, maxTools int) *Guard {
	return &Guard{served: served, style: style, maxTools: maxTools}
}

// Budget is what the account is served of the tools served now, asking as a client
// (tool.ClientOf; "" for one that is not known).
func (g *Guard) Budget(acct *catalog.Account, client string) Budget {
	tools, withheld := g.served.All(), len(g.served.Withheld()) > 0
	if acct == nil || acct.User != "" {
		// OAuth users' accounts are made for each request: nothing to reuse.
		return Plan(acct, client, tools, withheld, g.maxTools)
	}
	id := reflect.ValueOf(tools).UnsafePointer()
	c := g.budgets.Load()
	if c == nil || c.tools != id || c.withheld != withheld {
		c = &budgets{tools: id, withheld: withheld, byAccount: map[budgetKey]Budget{}}
		g.budgets.Store(c)
	}
	k := budgetKey{acct: acct, client: client}
	c.mu.Lock()
	b, ok := c.byAccount[k]
	c.mu.Unlock()
	if ok {
		return b
	}
	b = Plan(acct, client, tools, withheld, g.maxTools)
	c.mu.Lock()
	if len(c.byAccount) >= maxBudgets {
		clear(c.byAccount)
	}
	c.byAccount[k] = b
	c.mu.Unlock()
	return b
}

// ClientOf is the known client a request comes from (tool.ClientOf of the name in
// its clientInfo: the session's, or on 2026-07-28 the request's _meta), "" for none.
func ClientOf(req mcp.Request) string {
	if r, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
		if info := r.ClientInfo(); info != nil {
			return tool.ClientOf(info.Name)
		}
	}
	return ""
}

// May says whether the account may call the verb of a canonical name, as served now
// (to a client that is not known: which client asks changes only whether the
// fallback verbs of a per-class tool surface are served).
func (g *Guard) May(acct *catalog.Account, canonical string) bool {
	name := tool.Encode(g.style, canonical)
	info, ok := g.served.Lookup(name)
	return ok && MayCall(acct, name, info) && g.Budget(acct, "").Shows(info)
}

// Refusal is the JSON-RPC answer to a method the account's permissions do not allow,
// because they do not allow the verb of a canonical name.
func (g *Guard) Refusal(method, canonical string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
		"forbidden: this account's permissions do not allow %s (it takes the tool %q)", method, tool.Encode(g.style, canonical))}
}

// Middleware filters tools/list and guards tools/call by the caller's permissions: a
// tool the caller may not call is not listed, and calling it is a result with
// isError that says so; a name that is not served is -32602 before any handler runs.
// Prompts, resource templates and completions are bounded through their verbs
// (resources themselves in package resources).
func (g *Guard) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// The checks run in frames of their own: what stays on the stack while
		// next serves the request is this small one.
		if method == "tools/list" {
			return g.list(ctx, method, req, next)
		}
		if res, err := g.refuse(method, req); res != nil || err != nil {
			return res, err
		}
		return next(ctx, method, req)
	}
}

// list is the tools/list of next without the tools the caller may not call or its
// toolsets do not list, each with the schema the caller's permissions give it.
func (g *Guard) list(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	acct := caller.Of(req.GetExtra())
	list := res.(*mcp.ListToolsResult)
	out := *list
	out.Tools = list.Tools[:0:0]
	budget := g.Budget(acct, ClientOf(req))
	for _, t := range list.Tools {
		info, ok := g.served.Lookup(t.Name)
		if !ok || !MayCall(acct, t.Name, info) || !budget.Lists(info) {
			continue
		}
		if info.Schema != nil {
			own := *t
			own.InputSchema = info.Schema(acct)
			t = &own
		}
		out.Tools = append(out.Tools, t)
	}
	return &out, nil
}

// refuse is the answer to a request the caller's permissions do not allow (a
// result with isError, an empty list or an error), or nil, nil.
func (g *Guard) refuse(method string, req mcp.Request) (mcp.Result, error) {
	acct := caller.Of(req.GetExtra())
	switch method {
	case "tools/call":
		name := req.(*mcp.CallToolRequest).Params.Name
		info, ok := g.served.Lookup(name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q (tools/list has the tools this account may call)", name)}
		}
		if !MayCall(acct, name, info) {
			tool.Count(name, "forbidden")
			if info.Explicit && acct != nil && !acct.Permissions.ReadOnly {
				return tool.ErrorResult(fmt.Sprintf("forbidden: the tool %q is granted only by name: no glob such as \"*\" allows it; "+
					"an admin may add %q to this account's spec.permissions.tools", name, name)), nil
			}
			return tool.ErrorResult(fmt.Sprintf(
				"forbidden: this account's permissions do not allow the tool %q (see tools/list for the tools it may call)", name)), nil
		}
		if budget := g.Budget(acct, ClientOf(req)); !budget.Shows(info) {
			tool.Count(name, "forbidden")
			if info.Fallback {
				return tool.ErrorResult(fmt.Sprintf("the tool %q is not served to this account: it is served each class's own create tool "+
					"(see tools/list)", name)), nil
			}
			return tool.ErrorResult(fmt.Sprintf("the tool %q is not served to this account: with the per-class tools it would see %d tools, "+
				"more than the %d its clients take (%s); call %s with {\"class\": %q} instead",
				name, budget.Would, budget.Limit, budget.Client, tool.Encode(g.style, "sandbar.entity.create"), info.Class)), nil
		}
	case "prompts/list":
		if !g.May(acct, PromptsVerb) {
			return &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}, nil
		}
	case "prompts/get":
		if !g.May(acct, PromptsVerb) {
			return nil, g.Refusal(method, PromptsVerb)
		}
	case "resources/templates/list":
		if !g.May(acct, InstancesVerb) {
			return &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}, nil
		}
	case "completion/complete":
		ref := req.(*mcp.CompleteRequest).Params.Ref
		if ref != nil && ref.Type == "ref/prompt" && !g.May(acct, PromptsVerb) {
			return nil, g.Refusal(method, PromptsVerb)
		}
		if ref != nil && ref.Type == "ref/resource" && !g.May(acct, InstancesVerb) {
			return nil, g.Refusal(method, InstancesVerb)
		}
	}
	return nil, nil
}
