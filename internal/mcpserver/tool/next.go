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
	"fmt"
	"strings"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Next is a call an answer suggests: the tool, in the name the server serves it
// under, the arguments to give it, and what it is for. An argument in angle
// brackets ("<handle>") is the caller's to fill in.
type Next struct {
	Tool      string         `json:"tool" jsonschema:"The tool to call, as tools/list names it."`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"The arguments to call it with; a string in angle brackets, as \"<handle>\", is for the caller to fill in."`
	For       string         `json:"for" jsonschema:"What the call is for."`
}

// Next is a call of the tool canonical (a dotted canonical name) spelled in the
// call's style, for purpose, with args.
func (c *Call) Next(canonical, purpose string, args map[string]any) Next {
	return Next{Tool: Encode(c.Style, canonical), Arguments: args, For: purpose}
}

// String is the call as an error or a prompt writes it: "call `tool` with {...}",
// the arguments as JSON, so that a model and a program read them alike.
func (n Next) String() string {
	var b strings.Builder
	b.WriteString("call `" + n.Tool + "`")
	if len(n.Arguments) > 0 {
		args, _ := marshal(n.Arguments)
		b.WriteString(" with " + string(args))
	}
	return b.String()
}

// Instead is what an error says to call in place of the call that failed: the
// calls, each "call `tool` with {...} to <purpose>", joined by "; or ".
func Instead(calls ...Next) string {
	parts := make([]string, len(calls))
	for i, n := range calls {
		parts[i] = n.String()
		if n.For != "" {
			parts[i] += " to " + n.For
		}
	}
	return strings.Join(parts, "; or ")
}

// maxCreateCalls bounds the subclasses CreateCalls names for an abstract class.
const maxCreateCalls = 3

// CreateCalls are the calls that create an instance named name of a class, or of
// a few of its concrete subclasses for an abstract one, each with the class's own
// tool: the name set, each required slot left for the caller ("<field>").
func CreateCalls(style NameStyle, snap *catalog.Snapshot, cl *catalog.Class, name string) []Next {
	var out []Next
	for _, n := range append([]string{cl.Name}, snap.Subclasses(cl.Name)...) {
		sub := snap.Classes[n]
		if sub == nil || !sub.Servable() {
			continue
		}
		args := map[string]any{"metadata": map[string]any{"name": name}}
		for _, f := range sub.Required {
			args[f] = "<" + f + ">"
		}
		out = append(out, Next{Tool: Encode(style, CanonicalClassTool(sub.Prefix, sub.Kind)), Arguments: args,
			For: fmt.Sprintf("create the %s %q", sub.Ident(), name)})
		if len(out) == maxCreateCalls {
			break
		}
	}
	return out
}
