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
	"sort"
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

// Clients are the tools each known client takes at most (0: no known limit). The
// ServiceAccount field spec.clients names them.
var Clients = map[string]int{
	"claude-ai":      256, // claude.ai connectors
	"claude-desktop": 256, // Claude Desktop connectors
	"claude-code":    0,
	"codex":          0,
	"cursor":         40,
	"vscode":         128,
	"mcp-inspector":  0,
}

// ClientNames are the known clients, sorted.
func ClientNames() []string {
	out := make([]string, 0, len(Clients))
	for n := range Clients {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

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

// ToolLimit is the most tools an account's clients take: its spec.maxTools, else the
// strictest limit of the clients it declares, else def (0: none). client names the
// client the limit comes from ("spec.maxTools", a client's name, or "default").
func ToolLimit(acct *catalog.Account, def int) (limit int, client string) {
	if acct == nil {
		return def, "default"
	}
	if acct.MaxTools > 0 {
		return acct.MaxTools, "spec.maxTools"
	}
	if len(acct.Clients) > 0 {
		for _, c := range acct.Clients {
			if n := Clients[c]; n > 0 && (limit == 0 || n < limit) {
				limit, client = n, c
			}
		}
		return limit, client
	}
	return def, "default"
}
