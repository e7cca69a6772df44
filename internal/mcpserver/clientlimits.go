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
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/apps"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
)

// entry is one tool a snapshot asks for: its definition, the tool as served and
// what the rest of the server knows of it.
type entry struct {
	def  *tool.Def
	tool *mcp.Tool
	info tool.Info
	// fingerprint changes when the tool does: the tool as JSON, when the planner
	// keeps it (a class's own tool), or the input schema's JSON (an operational
	// verb's, when every account is served the same); else empty, and the sync
	// takes the tool as JSON.
	fingerprint string
}

// planner says which tools a snapshot asks for. The server serves by it and the
// reconcilers report by it (ClientCheck), so both see the same names and schemas.
type planner struct {
	opts  Options
	verbs *verbs.Env
	// operational are the operational verbs, declared once.
	operational []*tool.Def

	mu sync.Mutex
	// classes are the class tools of the last snapshot planned, by the class they
	// were made from: the catalog keeps a class it did not resolve again (the same
	// pointer), and its tool is not made, measured and fingerprinted again. A
	// metamodel applied at once publishes a snapshot per class or so, each with all
	// the classes before it.
	classes map[*catalog.Class]plannedClass
}

// plannedClass is a class's own tool and how it measures.
type plannedClass struct {
	e   entry
	fit tool.Fit
}

func newPlanner(opts Options, env *verbs.Env) (*planner, error) {
	all := env.All
	if opts.Verbs != nil {
		all = func() []*tool.Def { return opts.Verbs(env) }
	}
	p := &planner{opts: opts, verbs: env, operational: all()}
	for _, d := range p.operational {
		if err := d.Err(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *planner) entry(d *tool.Def, snap *catalog.Snapshot) entry {
	t := d.Tool(p.opts.NameStyle, snap)
	// An operational verb whose schema is every account's carries it as JSON
	// (Def.InputJSON); its name, description and annotations do not change with the
	// snapshot, so that JSON is its fingerprint.
	var fingerprint string
	if b, ok := t.InputSchema.(json.RawMessage); ok {
		fingerprint = string(b)
	}
	if !p.opts.NoViews && slices.Contains(resources.BoardTools, d.Canonical()) {
		t.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": apps.BoardURI}}
	}
	info := tool.Info{Canonical: d.Canonical(), ReadOnly: d.ReadOnly, LongRunning: d.LongRunning, Explicit: d.Explicit,
		Core: d.Core, InPlaceOfClasses: d.InPlaceOfClasses}
	if d.PerAccount() {
		info.Schema = func(acct *catalog.Account) any { return d.InputSchemaFor(snap, acct) }
	}
	return entry{def: d, tool: t, info: info, fingerprint: fingerprint}
}

// classTool is a class's own create tool as served, and how it measures against
// what clients accept.
func (p *planner) classTool(c *catalog.Class, snap *catalog.Snapshot) (entry, tool.Fit) {
	e := p.entry(p.verbs.ClassTool(c), snap)
	e.info.Class = c.Ident()
	// Clients that render MCP Apps show the class's form and table with its tool; the
	// rest see the tool as it is. A class too large for a view has none.
	if !p.opts.NoViews && apps.Fits(snap, c) {
		e.tool.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": apps.ClassURI(c.Prefix, c.Kind)}}
	}
	return e, tool.Measure(e.tool, p.opts.ClientPrefix)
}

// tools are the tools a snapshot asks for, as the tool surface says, and the
// classes (idents) whose own tool clients would drop, which is therefore not served.
// A per-class surface keeps the operational verbs as fallbacks, served to the
// accounts that need them in place of per-class tools.
func (p *planner) tools(snap *catalog.Snapshot) ([]entry, []string) {
	var out []entry
	var withheld []string
	if p.opts.ToolSurface != SurfaceOperational {
		p.mu.Lock()
		defer p.mu.Unlock()
		planned := make(map[*catalog.Class]plannedClass, len(p.classes))
		for _, name := range snap.ClassNames() {
			c := snap.Classes[name]
			if !c.Servable() {
				continue
			}
			pc, ok := p.classes[c]
			if !ok {
				pc.e, pc.fit = p.classTool(c, snap)
				if !pc.e.def.PerAccount() {
					fp, _ := json.Marshal(pc.e.tool)
					pc.e.fingerprint = string(fp)
				}
			}
			if !pc.e.def.PerAccount() {
				planned[c] = pc
			}
			e, fit := pc.e, pc.fit
			if !fit.OK() {
				withheld = append(withheld, c.Ident())
				continue
			}
			out = append(out, e)
		}
		p.classes = planned
	}
	ops := make([]entry, 0, len(p.operational))
	for _, d := range p.operational {
		e := p.entry(d, snap)
		e.info.Fallback = p.opts.ToolSurface == SurfacePerClass
		ops = append(ops, e)
	}
	sort.Strings(withheld)
	return append(ops, out...), withheld
}

// ClientCheck measures what an MCP server with the same options serves against what
// clients accept, for the status of Classes and ServiceAccounts. It uses the code
// that builds the served tools: the names and schemas it measures are those served.
type ClientCheck struct{ plan *planner }

// NewClientCheck checks for a server with these options.
func NewClientCheck(opts Options) (*ClientCheck, error) {
	p, err := newPlanner(opts, &verbs.Env{Style: opts.NameStyle})
	if err != nil {
		return nil, err
	}
	return &ClientCheck{plan: p}, nil
}

// Class is the verdict on a concrete class's own create tool: its reason is
// ReasonWithinClientLimits, ReasonNameTooLong or ReasonSchemaTooLarge.
func (c *ClientCheck) Class(cl *catalog.Class) catalog.Problem {
	e, fit := c.plan.classTool(cl, nil)
	style, prefix := c.plan.opts.NameStyle, c.plan.opts.ClientPrefix
	if fit.OK() {
		msg := fmt.Sprintf("its tool %s fits every client: %d characters with the prefix %q (at most %d), an input schema of %d bytes (at most %d)",
			e.tool.Name, fit.NameLength, prefix, tool.MaxClientName, fit.SchemaBytes, tool.MaxSchemaBytes)
		if c.plan.opts.ToolSurface == SurfaceOperational {
			msg += "; the server serves no per-class tools (tool surface operational)"
		}
		return catalog.Problem{Reason: metav1alpha1.ReasonWithinClientLimits, Message: msg}
	}
	reason := metav1alpha1.ReasonSchemaTooLarge
	if fit.NameTooLong() {
		reason = metav1alpha1.ReasonNameTooLong
	}
	return catalog.Problem{Reason: reason, Message: fmt.Sprintf(
		"the tool %s is not served, because clients would drop it: %s; create instances with %s and {\"class\": %q}",
		e.tool.Name, fit.Problems(prefix), tool.Encode(style, "sandbar.entity.create"), cl.Ident())}
}

// Account is the verdict on what an account is served of a snapshot's tools against
// the most tools its clients take: ReasonWithinClientLimits, ReasonNearToolLimit (it
// fits, with 80% or more of them) or ReasonTooManyTools.
func (c *ClientCheck) Account(snap *catalog.Snapshot, acct *catalog.Account) catalog.Problem {
	entries, withheld := c.plan.tools(snap)
	table := make(map[string]tool.Info, len(entries))
	for _, e := range entries {
		table[e.tool.Name] = e.info
	}
	b := authorize.Plan(acct, "", table, len(withheld) > 0, c.plan.opts.DefaultMaxTools)
	reason := metav1alpha1.ReasonWithinClientLimits
	switch {
	case !b.Fits():
		reason = metav1alpha1.ReasonTooManyTools
	case b.Near():
		reason = metav1alpha1.ReasonNearToolLimit
	}
	return catalog.Problem{Reason: reason, Message: b.Describe()}
}
