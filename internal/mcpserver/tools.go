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

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// toolDef is one tool as derived from a snapshot.
type toolDef struct {
	canonical   string
	tool        *mcp.Tool
	handler     mcp.ToolHandler
	longRunning bool
}

// verb is an operational verb: one tool per kind of operation, the class an argument.
type verb struct {
	group, name string
	title       string
	description string
	readOnly    bool
	destructive bool
	idempotent  bool
	// longRunning verbs start a task (a WorkflowProcess); they may run as MCP tasks.
	longRunning bool
	input       func(snap *catalog.Snapshot) schema
	run         func(c *call, ctx context.Context) (any, error)
}

// call is one tool call in progress.
type call struct {
	s    *Server
	snap *catalog.Snapshot
	acct *catalog.Account
	args map[string]any
	// session and progressToken let long-running calls report progress.
	session       *mcp.ServerSession
	progressToken any
}

// domainError is a failure the caller can fix; it becomes a result with isError.
type domainError struct{ msg string }

func (e *domainError) Error() string { return e.msg }

func fail(format string, args ...any) error { return &domainError{msg: fmt.Sprintf(format, args...)} }

// badParams is an argument that does not fit a tool's input schema. Since protocol
// revision 2025-11-25 such errors are tool results with isError, so that the model
// sees them and corrects its call; -32602 stays for unknown tools and for arguments
// that are not a JSON object.
func badParams(format string, args ...any) error {
	return &domainError{msg: "invalid arguments: " + fmt.Sprintf(format, args...)}
}

// tools derives every tool the options ask for from a snapshot.
func (s *Server) tools(snap *catalog.Snapshot) []toolDef {
	var defs []toolDef
	if s.opts.ToolSurface != SurfacePerClass {
		for _, v := range append(s.verbs(), s.taskVerbs()...) {
			defs = append(defs, s.verbTool(snap, v))
		}
	}
	if s.opts.ToolSurface != SurfaceOperational {
		for _, name := range snap.ClassNames() {
			if c := snap.Classes[name]; c.Servable() {
				defs = append(defs, s.classTool(c))
			}
		}
	}
	return defs
}

func boolPtr(b bool) *bool { return &b }

func (s *Server) verbTool(snap *catalog.Snapshot, v verb) toolDef {
	canonical := CanonicalVerb(v.group, v.name)
	name := Encode(s.opts.NameStyle, canonical)
	input := schema{"type": "object", "properties": schema{}}
	if v.input != nil {
		input = v.input(snap)
	}
	desc := v.description
	if s.opts.NameStyle == StyleDotted {
		desc = dotted(desc)
	}
	return toolDef{
		canonical: canonical,
		tool: &mcp.Tool{
			Name:        name,
			Title:       v.title,
			Description: desc,
			InputSchema: input,
			Annotations: &mcp.ToolAnnotations{
				Title:           v.title,
				ReadOnlyHint:    v.readOnly,
				DestructiveHint: boolPtr(v.destructive),
				IdempotentHint:  v.idempotent,
				OpenWorldHint:   boolPtr(false),
			},
		},
		handler:     s.handle(name, v.run),
		longRunning: v.longRunning,
	}
}

func (s *Server) classTool(c *catalog.Class) toolDef {
	canonical := CanonicalClassTool(c.Prefix, c.Kind)
	name := Encode(s.opts.NameStyle, canonical)
	desc := fmt.Sprintf("Create a %s instance.", c.Ident())
	if c.Description != "" {
		desc += " " + c.Description
	}
	if len(c.Required) > 0 {
		desc += " Required: " + strings.Join(c.Required, ", ") + "."
	}
	className := c.Name
	return toolDef{
		canonical: canonical,
		tool: &mcp.Tool{
			Name:        name,
			Title:       "Create " + c.Ident(),
			Description: desc,
			InputSchema: ClassInputSchema(c),
			Annotations: &mcp.ToolAnnotations{
				Title:           "Create " + c.Ident(),
				DestructiveHint: boolPtr(false),
				OpenWorldHint:   boolPtr(false),
			},
		},
		handler: s.handle(name, func(cl *call, ctx context.Context) (any, error) {
			meta, err := cl.object("metadata")
			if err != nil {
				return nil, err
			}
			attrs := map[string]any{}
			for k, v := range cl.args {
				if k != "metadata" {
					attrs[k] = v
				}
			}
			return cl.createEntity(ctx, className, attrs, meta, false)
		}),
	}
}

// handle wraps a tool's work: it decodes the arguments, turns domain errors into
// results with isError, hides internal errors behind -32603, and counts the call.
func (s *Server) handle(tool string, run func(c *call, ctx context.Context) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		defer func() { toolDuration.WithLabelValues(tool).Observe(time.Since(start).Seconds()) }()
		args := map[string]any{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				toolCalls.WithLabelValues(tool, "protocol_error").Inc()
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the arguments of %s must be a JSON object", tool)}
			}
		}
		c := &call{s: s, snap: s.store.Load(), acct: accountOf(req.GetExtra()), args: args,
			session: req.Session, progressToken: req.Params.GetProgressToken()}
		if c.acct == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no authenticated account"}
		}
		out, err := run(c, ctx)
		var de *domainError
		var rpc *jsonrpc.Error
		switch {
		case errors.As(err, &de):
			toolCalls.WithLabelValues(tool, "error").Inc()
			return errorResult(de.msg), nil
		case errors.As(err, &rpc):
			toolCalls.WithLabelValues(tool, "protocol_error").Inc()
			return nil, rpc
		case err != nil:
			toolCalls.WithLabelValues(tool, "internal_error").Inc()
			ctrl.LoggerFrom(ctx).WithName("mcp").Error(err, "tool call failed", "tool", tool)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error; the server log has the details"}
		}
		toolCalls.WithLabelValues(tool, "ok").Inc()
		return jsonResult(out), nil
	}
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func jsonResult(v any) *mcp.CallToolResult {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return errorResult("internal error: result is not JSON")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}
}

var verbName = regexp.MustCompile(`\bsandbar_[a-z]+_[a-z-]+\b`)

// dotted rewrites underscore tool names in a text to the dotted style.
func dotted(text string) string {
	return verbName.ReplaceAllStringFunc(text, func(n string) string { return strings.ReplaceAll(n, "_", ".") })
}

// --- arguments -------------------------------------------------------------------

func (c *call) str(key string, required bool) (string, error) {
	v, ok := c.args[key]
	if !ok || v == nil {
		if required {
			return "", badParams("missing argument %q", key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", badParams("argument %q must be a string", key)
	}
	return s, nil
}

func (c *call) integer(key string, def, lo, hi int64) (int64, error) {
	v, ok := c.args[key]
	if !ok || v == nil {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) {
		return 0, badParams("argument %q must be an integer", key)
	}
	n := int64(f)
	if n < lo || n > hi {
		return 0, badParams("argument %q must be between %d and %d", key, lo, hi)
	}
	return n, nil
}

func (c *call) object(key string) (map[string]any, error) {
	v, ok := c.args[key]
	if !ok || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badParams("argument %q must be an object", key)
	}
	return m, nil
}

// class resolves the "class" argument: a Class name ("zorp.spaceboot"), an ident
// ("zorp/SpaceBoot" or ":zorp/SpaceBoot") or a kind alone when only one class has it.
func (c *call) class(key string) (*catalog.Class, error) {
	ref, err := c.str(key, true)
	if err != nil {
		return nil, err
	}
	if cl := c.snap.FindClass(ref); cl != nil {
		return cl, nil
	}
	return nil, fail("unknown class %q; known classes: %s", ref, strings.Join(classIdents(c.snap, false), ", "))
}

func classIdents(snap *catalog.Snapshot, concreteOnly bool) []string {
	var out []string
	for _, name := range snap.ClassNames() {
		cl := snap.Classes[name]
		if concreteOnly && !cl.Servable() {
			continue
		}
		out = append(out, cl.Ident())
	}
	sort.Strings(out)
	return out
}

// namespaceArg resolves the "namespace" argument.
func (c *call) namespaceArg() (string, error) {
	requested, err := c.str("namespace", false)
	if err != nil {
		return "", err
	}
	return c.namespace(requested)
}

// namespace resolves a requested namespace against the account's namespaces.
func (c *call) namespace(requested string) (string, error) {
	if requested == "" || requested == c.acct.Namespace {
		return c.acct.Namespace, nil
	}
	for _, ns := range c.acct.Permissions.Namespaces {
		if ns == requested || ns == "*" {
			return requested, nil
		}
	}
	return "", fail("forbidden: this account may act in namespace %q%s, not %q",
		c.acct.Namespace, extraNamespaces(c.acct), requested)
}

func extraNamespaces(a *catalog.Account) string {
	if len(a.Permissions.Namespaces) == 0 {
		return ""
	}
	return " and " + strings.Join(a.Permissions.Namespaces, ", ")
}
