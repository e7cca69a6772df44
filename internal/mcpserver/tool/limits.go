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

package tool

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// What MCP clients accept of a server's tools. Beyond these limits a client drops a
// tool, or all tools past a count, without telling anyone; the server keeps within
// them and says what it did instead (conditions on Classes and ServiceAccounts).
const (
	// MaxClientName is the longest tool name clients accept, with the prefix some of
	// them add (Claude Code: mcp__<server>__<tool>).
	MaxClientName = 64
	// MaxSchemaBytes is the largest input schema, as JSON, that the claude.ai and
	// Claude Desktop connectors keep.
	MaxSchemaBytes = 16 << 10
	// DefaultClientPrefix is what Claude Code puts before a tool's name for a server
	// registered as "sandbar".
	DefaultClientPrefix = "mcp__sandbar__"
)

// Client is a known MCP client: what people call it, and the most tools it takes
// of a server (0: no known limit).
type Client struct {
	Title string
	Tools int
}

// Clients are the known clients, by the name the ServiceAccount field spec.clients
// gives them, with what each takes as of November 2026 (docs/clients.md says where
// each is documented).
var Clients = map[string]Client{
	"antigravity":    {"Antigravity", 100},
	"claude-ai":      {"claude.ai", 256},      // its connectors
	"claude-desktop": {"Claude Desktop", 256}, // its connectors
	"claude-code":    {"Claude Code", 0},      // it defers tool definitions (tool search) and reads names up front
	"codex":          {"Codex", 0},
	"cowork":         {"Claude Cowork", 256}, // it drops the tools past 256 without a word
	"cursor":         {"Cursor", 80},         // it warns past 80
	"vscode":         {"VS Code", 128},       // it refuses a server of more
	"windsurf":       {"Windsurf", 50},
	"mcp-inspector":  {"MCP Inspector", 0},
}

// ClientNames are the known clients, sorted.
func ClientNames() []string { return slices.Sorted(maps.Keys(Clients)) }

// Fit is how a tool measures against what clients accept.
type Fit struct {
	// Name is the served name; NameLength its length with the client prefix.
	Name       string
	NameLength int
	// SchemaBytes is the size of the input schema as JSON.
	SchemaBytes int
}

// NameTooLong reports whether clients that prefix names refuse the tool.
func (f Fit) NameTooLong() bool { return f.NameLength > MaxClientName }

// SchemaTooLarge reports whether connectors drop the tool for its input schema.
func (f Fit) SchemaTooLarge() bool { return f.SchemaBytes > MaxSchemaBytes }

// OK reports whether every client keeps the tool.
func (f Fit) OK() bool { return !f.NameTooLong() && !f.SchemaTooLarge() }

// Problems says what clients would do with the tool, in words for a status message;
// empty when they keep it.
func (f Fit) Problems(prefix string) string {
	var out []string
	if f.NameTooLong() {
		out = append(out, fmt.Sprintf("its name %q is %d characters with the client prefix %q, more than the %d clients accept",
			f.Name, f.NameLength, prefix, MaxClientName))
	}
	if f.SchemaTooLarge() {
		out = append(out, fmt.Sprintf("its input schema is %d bytes, more than the %d (16 KiB) connectors keep",
			f.SchemaBytes, MaxSchemaBytes))
	}
	return strings.Join(out, "; ")
}

// Measure measures a tool as a client receives it, its name behind prefix.
func Measure(t *mcp.Tool, prefix string) Fit {
	f := Fit{Name: t.Name, NameLength: len(prefix) + len(t.Name)}
	if b, err := json.Marshal(t.InputSchema); err == nil {
		f.SchemaBytes = len(b)
	}
	return f
}

// clientNames are the names known clients give themselves (clientInfo.name, in
// initialize or, on 2026-07-28, in each request's _meta), lower-cased, by the name
// spec.clients gives them. Claude Cowork connects through claude.ai's connectors and
// names itself claude-ai: an account that serves it declares cowork.
var clientNames = map[string]string{
	"antigravity":                   "antigravity",
	"antigravity-client":            "antigravity",
	"claude-ai":                     "claude-ai", // claude.ai, Claude Desktop and Claude Cowork connectors
	"claude-desktop":                "claude-desktop",
	"claude-code":                   "claude-code",
	"codex":                         "codex",
	"codex-mcp-client":              "codex",
	"cursor":                        "cursor",
	"cursor-vscode":                 "cursor",
	"vscode":                        "vscode",
	"visual studio code":            "vscode",
	"visual studio code - insiders": "vscode",
	"visual-studio-code":            "vscode",
	"windsurf":                      "windsurf",
	"windsurf-client":               "windsurf",
	"mcp-inspector":                 "mcp-inspector",
}

// ClientOf is the known client (a key of Clients) that a client's own name says it
// is, or "" for a name no known client gives itself.
func ClientOf(name string) string {
	if len(name) > 64 {
		return ""
	}
	return clientNames[strings.ToLower(strings.TrimSpace(name))]
}

// ToolLimit is the most tools an account's clients take: its spec.maxTools, else the
// strictest limit of the clients it declares, else the limit of the known client the
// request comes from (client, from ClientOf; "" for none), else def (0: none).
// source names where the limit comes from ("spec.maxTools", "<client>, as the
// account declares" (spec.clients, or --oauth-clients for people), "<client>, as the
// client names itself", or "default"), the client as people call it.
func ToolLimit(acct *catalog.Account, client string, def int) (limit int, source string) {
	switch {
	case acct != nil && acct.MaxTools > 0:
		return acct.MaxTools, "spec.maxTools"
	case acct != nil && len(acct.Clients) > 0:
		for _, c := range acct.Clients {
			if n := Clients[c].Tools; n > 0 && (limit == 0 || n < limit) {
				limit, source = n, Clients[c].Title+", as the account declares"
			}
		}
		return limit, source
	case client != "":
		if c, ok := Clients[client]; ok {
			return c.Tools, c.Title + ", as the client names itself"
		}
	}
	return def, "default"
}
