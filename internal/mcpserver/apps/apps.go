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

// Package apps generates the MCP Apps views (extension io.modelcontextprotocol/ui)
// of the metamodel: for each concrete class one ui:// resource that shows a form to
// create or edit an instance and a table of its instances, and one board of the
// caller's processes of each workflow definition, in columns by state. A view is one
// HTML document: the bundle (view.js and view.css, written for any class and kept in
// this package) and the model it renders. Nothing in it reaches past the host
// bridge: its Content-Security-Policy allows no origin, and it calls the server's
// tools through the host.
package apps

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"strings"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// MIMEType is the MIME type of an MCP Apps view.
const MIMEType = "text/html;profile=mcp-app"

// Extension is the MCP Apps extension's identifier, under which clients declare it.
const Extension = "io.modelcontextprotocol/ui"

// uriBase starts every view's URI.
const uriBase = "ui://sandbar/"

// csp is the view's own policy, beside the host's: inline script and style only, no
// origin for anything (no fetch, no images from a network, no frames, no forms
// posted anywhere). The host bridge is postMessage, which a policy does not govern.
const csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; " +
	"connect-src 'none'; frame-src 'none'; form-action 'none'; base-uri 'none'"

var (
	//go:embed view.js
	script string
	//go:embed view.css
	style string
)

// ClassURI is the URI of a class's view.
func ClassURI(prefix, kind string) string { return uriBase + "class/" + prefix + "/" + kind }

// ParseClassURI reads a class view's URI: its prefix and kind, unchecked beyond the
// shape (the caller looks the class up).
func ParseClassURI(uri string) (prefix, kind string, ok bool) {
	rest, ok := strings.CutPrefix(uri, uriBase+"class/")
	if !ok {
		return "", "", false
	}
	prefix, kind, ok = strings.Cut(rest, "/")
	if !ok || prefix == "" || kind == "" || strings.ContainsAny(kind, "/?#") {
		return "", "", false
	}
	return prefix, kind, true
}

// BoardURI is the URI of the workflows' board.
const BoardURI = uriBase + "workflows"

// IsURI reports whether uri is one of the views' (ui://sandbar/...).
func IsURI(uri string) bool { return strings.HasPrefix(uri, uriBase) }

// Tools are the served names of the tools a view calls.
type Tools struct {
	// Create is the class's own create tool, and CreateAny entity.create, for a
	// server that serves no per-class tools; Find and Update are entity.find and
	// entity.update.
	Create    string `json:"create"`
	CreateAny string `json:"createAny"`
	Find      string `json:"find"`
	Update    string `json:"update"`
}

// BoardTools are the served names of the tools the board calls.
type BoardTools struct {
	// Active lists the caller's processes; Transition moves one; History tells its
	// steps.
	Active     string `json:"active"`
	Transition string `json:"transition"`
	History    string `json:"history"`
}

type boardState struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Terminal    string `json:"terminal,omitempty"`
}

type boardTransition struct {
	Name string   `json:"name"`
	From []string `json:"from"`
	To   string   `json:"to"`
}

type boardWorkflow struct {
	Name string `json:"name"`
	// Builtin is a workflow the server moves (package builtin): no one takes its
	// transitions. Approval is the one whose processes are calls held for a person's
	// approval, which people give with kubectl.
	Builtin     bool              `json:"builtin,omitempty"`
	Approval    bool              `json:"approval,omitempty"`
	Description string            `json:"description,omitempty"`
	Initial     string            `json:"initial"`
	States      []boardState      `json:"states"`
	Transitions []boardTransition `json:"transitions"`
}

type boardModel struct {
	View      string          `json:"view"`
	Workflows []boardWorkflow `json:"workflows"`
	Tools     BoardTools      `json:"tools"`
}

// Board is the board of the workflow definitions of snap that are served (those
// without a problem), the built-in ones after the others: one HTML document, which
// shows one definition at a time.
func Board(snap *catalog.Snapshot, tools BoardTools) ([]byte, error) {
	m := boardModel{View: "board", Workflows: []boardWorkflow{}, Tools: tools}
	names := snap.WorkflowNames()
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(b2i(builtin.IsBuiltin(a)), b2i(builtin.IsBuiltin(b))) })
	for _, n := range names {
		w := snap.Workflows[n]
		if w.Problem != nil {
			continue
		}
		b := boardWorkflow{Name: w.Name, Builtin: builtin.IsBuiltin(w.Name), Approval: w.Name == builtin.Approval,
			Description: w.Spec.Description, Initial: w.Spec.Initial, States: []boardState{}, Transitions: []boardTransition{}}
		for _, st := range w.Spec.States {
			b.States = append(b.States, boardState{Name: st.Name, Description: st.Description, Terminal: string(st.Terminal)})
		}
		for _, tr := range w.Spec.Transitions {
			b.Transitions = append(b.Transitions, boardTransition{Name: tr.Name, From: tr.From, To: tr.To})
		}
		m.Workflows = append(m.Workflows, b)
	}
	return document("Sandbar: workflows", m)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// field is one slot as the form shows it.
type field struct {
	Field       string   `json:"field"`
	Range       string   `json:"range"`
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Many        bool     `json:"many,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
	Pattern     string   `json:"pattern,omitempty"`
	MaxLength   *int64   `json:"maxLength,omitempty"`
	// Target is the class a reference names, as prefix/Kind.
	Target string `json:"target,omitempty"`
	// Section is a Markdown section of the class's codec: a text area.
	Section bool `json:"section,omitempty"`
}

// classModel is what the bundle renders a class's view from.
type classModel struct {
	View        string  `json:"view"`
	Class       string  `json:"class"`
	Description string  `json:"description,omitempty"`
	Tools       Tools   `json:"tools"`
	Fields      []field `json:"fields"`
}

// MaxBytes is the most a view may take. A class whose view would be larger is shown
// without its slots' descriptions; one that is larger still has no view (Class says
// why).
const MaxBytes = 200 << 10

// Class is the view of a concrete class of snap: one HTML document of at most
// MaxBytes.
func Class(snap *catalog.Snapshot, c *catalog.Class, tools Tools) ([]byte, error) {
	m, err := fitted(classOf(snap, c, tools))
	if err != nil {
		return nil, err
	}
	return document(title(m), m)
}

// Fits reports whether a class has a view (see MaxBytes), without making it.
func Fits(snap *catalog.Snapshot, c *catalog.Class) bool {
	_, err := fitted(classOf(snap, c, Tools{}))
	return err == nil
}

// fitted is a class's model as its view shows it: whole, or without the slots'
// descriptions if the view would take more than MaxBytes so; an error if it would
// even without them.
func fitted(m classModel) (classModel, error) {
	n, err := size(title(m), m)
	if err != nil || n <= MaxBytes {
		return m, err
	}
	m.Fields = slices.Clone(m.Fields)
	for i := range m.Fields {
		m.Fields[i].Description = ""
	}
	if n, err = size(title(m), m); err != nil || n <= MaxBytes {
		return m, err
	}
	return m, fmt.Errorf("the view of %s would take %d KiB, more than the %d KiB a view may: its tools work without it",
		m.Class, n>>10, MaxBytes>>10)
}

// title is a class view's title.
func title(m classModel) string { return "Sandbar: " + m.Class }

func classOf(snap *catalog.Snapshot, c *catalog.Class, tools Tools) classModel {
	m := classModel{View: "class", Class: c.Ident(), Description: c.Description, Tools: tools, Fields: []field{}}
	for _, s := range c.Slots {
		if s.Definition == nil {
			continue
		}
		f := field{Field: s.Field, Range: string(s.Range), Description: s.Description, Required: s.Required, Many: s.Many(),
			Enum: s.Enum, Minimum: s.Minimum, Maximum: s.Maximum, Pattern: s.Pattern, MaxLength: s.MaxLength,
			Section: slices.Contains(c.Codec.Sections, s.Field)}
		if s.Range == metav1alpha1.RangeRef {
			f.Target = s.Target
			if t := targetOf(snap, s.Target); t != nil {
				f.Target = t.Ident()
			}
		}
		m.Fields = append(m.Fields, f)
	}
	return m
}

// document is a view's HTML: the policy, the bundle's style, the model as JSON (which
// encoding/json writes with <, > and & escaped, so it cannot end its script element)
// and the bundle.
func document(title string, model any) ([]byte, error) {
	b, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(head) + len(title) + len(middle) + len(b) + len(tail))
	buf.WriteString(head)
	buf.WriteString(html.EscapeString(title))
	buf.WriteString(middle)
	buf.Write(b)
	buf.WriteString(tail)
	return buf.Bytes(), nil
}

// size is the bytes of document(title, model), without making it.
func size(title string, model any) (int, error) {
	b, err := json.Marshal(model)
	return len(head) + len(html.EscapeString(title)) + len(middle) + len(b) + len(tail), err
}

// The parts of every view around its title and model.
var (
	head = `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta http-equiv="Content-Security-Policy" content="` + csp + `">` +
		`<meta name="viewport" content="width=device-width, initial-scale=1"><title>`
	middle = `</title><style>` + style + `</style></head><body><main id="app"></main><script type="application/json" id="sandbar-model">`
	tail   = `</script><script>` + script + `</script></body></html>`
)

// targetOf is the class a reference names, if snap (which may be nil: a class
// measured on its own) has it.
func targetOf(snap *catalog.Snapshot, name string) *catalog.Class {
	if snap == nil {
		return nil
	}
	return snap.Classes[name]
}
