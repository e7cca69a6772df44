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

package access

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// MayCall says whether an account may see and call a served tool: a read-only
// account only read-only tools, and only tools matching one of its globs (matched
// against the served and the canonical name; no globs means every tool).
func MayCall(acct *catalog.Account, name string, info tool.Info) bool {
	if acct == nil || (acct.Permissions.ReadOnly && !info.ReadOnly) {
		return false
	}
	globs := acct.Permissions.Tools
	if len(globs) == 0 {
		globs = []string{"*"}
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, info.Canonical); ok {
			return true
		}
	}
	return false
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

// Tools filters tools/list and guards tools/call by the caller's permissions. A tool
// the caller may not call is not listed, and calling it is a result with isError
// that says so.
func Tools(served *tool.Table) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				list := res.(*mcp.ListToolsResult)
				acct := AccountOf(req.GetExtra())
				out := *list
				out.Tools = list.Tools[:0:0]
				for _, t := range list.Tools {
					if info, ok := served.Lookup(t.Name); ok && MayCall(acct, t.Name, info) {
						out.Tools = append(out.Tools, t)
					}
				}
				return &out, nil
			case "tools/call":
				name := req.(*mcp.CallToolRequest).Params.Name
				if info, ok := served.Lookup(name); ok && !MayCall(AccountOf(req.GetExtra()), name, info) {
					tool.Count(name, "forbidden")
					return tool.ErrorResult(fmt.Sprintf(
						"forbidden: this account's permissions do not allow the tool %q (see tools/list for the tools it may call)", name)), nil
				}
			}
			return next(ctx, method, req)
		}
	}
}
