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

// Package tool is how a tool is declared and called: a verb declares its arguments
// as a Go struct, from which its input schema is generated (and patched with the
// catalog's enums), and its answer as a Go type, from which its output schema is
// generated; arguments are decoded and checked in one place, strictly, with
// messages a model can act on; one function maps what a verb returns to the
// protocol (domain errors as results with isError, internal errors as -32603 with
// the details only in the log). It also holds the tool names codec and the table
// of tools a server currently serves.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
)

// Spec is what a tool is, apart from its arguments.
type Spec struct {
	// Group and Name make the canonical name sandbar.<group>.<name>.
	Group, Name string
	Title       string
	Description string
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	// LongRunning tools start a WorkflowProcess; they may run as MCP tasks.
	LongRunning bool
	// Explicit tools change what other accounts see or run (workflow definitions) or
	// cannot be undone (deleting an instance): an account may call one only if its
	// permissions name it, never through a glob.
	Explicit bool
	// Waits is how much longer than the call deadline the tool may take: the time it
	// waits, at most, for something the cluster does (a task to end, a Class to be
	// served).
	Waits time.Duration
	// Core verbs are in the core toolset, the one tools/list shows an account that
	// names no toolsets: keep it small, since every class's own tool is listed beside it.
	Core bool
	// InPlaceOfClasses verbs are listed only to accounts that are not served every
	// per-class tool (past their clients' limit, a class whose tool clients would
	// drop, or a tool surface without them): the generic create, and the verb that
	// gives a class's create schema. They may be called all the same.
	InPlaceOfClasses bool
	// Confirms tools ask the user before they do what cannot be undone (Call.Confirm):
	// they take the argument confirm, which says the user has agreed.
	Confirms bool
}

// Call is one tool call in progress: the catalog it sees, the account it acts for,
// and where progress goes.
type Call struct {
	// Tool is the served name of the tool.
	Tool    string
	Snap    *catalog.Snapshot
	Account *catalog.Account
	// Session and ProgressToken let long-running calls report progress.
	Session       *mcp.ServerSession
	ProgressToken any
	// Bounds limit the result (see Bounds).
	Bounds Bounds
	// Deadline bounds the call (0: none); a tool that Waits gets that much more.
	Deadline time.Duration
	// Style spells the names of other tools in what the call answers.
	Style NameStyle
	// Sealer seals the tokens the call hands the client to hand back (continue
	// tokens), bound to the account and the query (see Call.Scope).
	Sealer *seal.Sealer
	// Asking is what the call knows of asking the client's user (Call.Confirm).
	Asking Asking
	// Gate decides whether the call may run (the call policies); nil: it may.
	Gate Gate
	// Client is the name the client gave itself (clientInfo.name), and Revision the
	// protocol revision of the request.
	Client, Revision string
}

// Tokens is the call's sealer; a call made without one (a test's) gets the
// process's own.
func (c *Call) Tokens() *seal.Sealer {
	if c.Sealer != nil {
		return c.Sealer
	}
	return processTokens
}

var processTokens = seal.Random()

// Scope is what a token the call hands out is bound to: the account and the
// parts of the query given (the tool is always one).
func (c *Call) Scope(query ...any) string {
	parts := []any{c.Tool}
	if a := c.Account; a != nil {
		parts = append(parts, a.Namespace, a.Name, a.User)
	}
	return seal.Scope(append(parts, query...)...)
}

// An Enum is a catalog enum in an input schema: the names a snapshot gives (of
// classes, properties or workflows) are the values the argument at Path may take.
// A path such as "entities.class" names a property of a list's items.
type Enum struct {
	Path   string
	Values func(*catalog.Snapshot) []string
}

// rendering is an input schema with its enums' values filled in, and its JSON.
type rendering struct {
	values [][]string
	schema *jsonschema.Schema
	json   json.RawMessage
}

// AccountPatch narrows an input schema for the account that lists the tool (the
// workflows it may start). s is a clone of the schema every account shares, whose
// slices (an enum) share their arrays with it: replace them, do not change them.
type AccountPatch func(s *jsonschema.Schema, snap *catalog.Snapshot, acct *catalog.Account)

// Def is a declared tool: its spec, its input schema and how to run it.
type Def struct {
	Spec
	// canonical overrides sandbar.<group>.<name> (the per-class tools).
	canonical string
	// schema is the input schema the arguments are checked against; the enums are
	// filled in on a copy for tools/list.
	schema *jsonschema.Schema
	enums  []Enum
	// last is the schema as the last snapshot asked for it: most snapshots change
	// no enum (a status, an account), and their schemas are not built again.
	last atomic.Pointer[rendering]
	// perAccount patches are applied, after the enums, for the account of a tools/list.
	perAccount []AccountPatch
	// raw, for tools whose schema is not a Go type (a class's own slots).
	rawSchema any
	// output is the schema of the tool's answers (see OutputSchema), and its JSON.
	output output
	run    func(ctx context.Context, c *Call, args json.RawMessage) (any, error)
	err    error
	// acts say what a call does, for the call policies (WithActs).
	acts Acts
}

// Err is why a definition cannot be served (its arguments or its answer type has
// no schema, or its answer is not a JSON object).
func (d *Def) Err() error { return d.err }

// Verb declares a tool whose arguments are the struct In and whose answer is Out:
// its input schema is generated from In (json tags name the arguments, omitempty
// makes one optional, the jsonschema tag describes it), and a call's arguments are
// checked against that schema and decoded into In before run sees them. Unknown
// arguments are refused. Its output schema is generated from Out (see
// OutputSchema), and what run answers is the result's structured content.
func Verb[In, Out any](spec Spec, run func(ctx context.Context, c *Call, in In) (Out, error), constraints ...Constraint) *Def {
	out, err := outputOf[Out](spec.LongRunning)
	if err != nil {
		return &Def{Spec: spec, err: fmt.Errorf("tool %s.%s: %w", spec.Group, spec.Name, err)}
	}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		// A programming error: the server refuses to start (see Err).
		return &Def{Spec: spec, err: fmt.Errorf("tool %s.%s: arguments %T: %w", spec.Group, spec.Name, *new(In), err)}
	}
	simplify(s)
	if spec.ReadOnly {
		addContinueArg(s)
	}
	if spec.Confirms {
		addConfirmArg(s)
	}
	for _, c := range constraints {
		if err := c(s); err != nil {
			return &Def{Spec: spec, err: fmt.Errorf("tool %s.%s: %w", spec.Group, spec.Name, err)}
		}
	}
	d := &Def{Spec: spec, schema: s, output: out}
	d.run = func(ctx context.Context, c *Call, raw json.RawMessage) (any, error) {
		var in In
		if err := decode(raw, d.schema, c.Tool, &in); err != nil {
			return nil, err
		}
		v, err := run(ctx, c, in)
		return v, err
	}
	return d
}

// Raw declares a tool whose input schema is built at run time (a class's create tool:
// one argument per slot), and whose answer is Out. run checks the arguments itself.
func Raw[Out any](canonical string, spec Spec, schema any, run func(ctx context.Context, c *Call, args map[string]any) (Out, error)) *Def {
	out, err := outputOf[Out](spec.LongRunning)
	if err != nil {
		return &Def{Spec: spec, canonical: canonical, err: fmt.Errorf("tool %s: %w", canonical, err)}
	}
	d := &Def{Spec: spec, canonical: canonical, rawSchema: schema, output: out}
	d.run = func(ctx context.Context, c *Call, raw json.RawMessage) (any, error) {
		args, err := object(raw, c.Tool)
		if err != nil {
			return nil, err
		}
		v, err := run(ctx, c, args)
		return v, err
	}
	return d
}

// Output is the schema of the tool's answers.
func (d *Def) Output() *jsonschema.Schema { return d.output.schema }

// Patch adds a catalog enum to the input schema tools/list shows.
func (d *Def) Patch(e Enum) *Def {
	d.enums = append(d.enums, e)
	return d
}

// PatchFor adds an account-dependent change to the input schema tools/list shows.
func (d *Def) PatchFor(p AccountPatch) *Def {
	d.perAccount = append(d.perAccount, p)
	return d
}

// Patched reports whether the input schema takes catalog enums.
func (d *Def) Patched() bool { return len(d.enums) > 0 }

// PerAccount reports whether the input schema depends on the account that lists it.
func (d *Def) PerAccount() bool { return len(d.perAccount) > 0 }

// InputSchemaFor is the input schema an account sees for a snapshot.
func (d *Def) InputSchemaFor(snap *catalog.Snapshot, acct *catalog.Account) any {
	if len(d.perAccount) == 0 || d.schema == nil {
		return d.InputSchema(snap)
	}
	s := d.render(snap).schema.CloneSchemas()
	for _, p := range d.perAccount {
		p(s, snap, acct)
	}
	return s
}

// Canonical is the dotted name: sandbar.<group>.<name>.
func (d *Def) Canonical() string {
	if d.canonical != "" {
		return d.canonical
	}
	return CanonicalVerb(d.Group, d.Name)
}

// InputSchema is the input schema for a snapshot. It is shared: not to be changed.
func (d *Def) InputSchema(snap *catalog.Snapshot) any {
	if d.rawSchema != nil {
		return d.rawSchema
	}
	return d.render(snap).schema
}

// InputJSON is the input schema for a snapshot as JSON, and whether it is the
// schema of every account (false for a tool whose schema PatchFor narrows, and one
// whose schema is built at run time: a class's own tool).
func (d *Def) InputJSON(snap *catalog.Snapshot) (json.RawMessage, bool) {
	if d.rawSchema != nil || d.schema == nil || d.PerAccount() {
		return nil, false
	}
	return d.render(snap).json, true
}

// toolSchema is the input schema as a tool carries it: the JSON, made once for the
// enums' values, when it is every account's, so that listing and serving it encode
// nothing again.
func (d *Def) toolSchema(snap *catalog.Snapshot) any {
	if b, ok := d.InputJSON(snap); ok {
		return b
	}
	return d.InputSchema(snap)
}

// render is the input schema with the enums' values for snap, built only when they
// differ from the last snapshot's.
func (d *Def) render(snap *catalog.Snapshot) *rendering {
	values := make([][]string, len(d.enums))
	for i, e := range d.enums {
		values[i] = e.Values(snap)
	}
	if r := d.last.Load(); r != nil && slices.EqualFunc(r.values, values, slices.Equal) {
		return r
	}
	s := d.schema
	if len(d.enums) > 0 {
		s = s.CloneSchemas()
		for i, e := range d.enums {
			// A path that names no argument changes nothing (TestEnumPathsNameArguments,
			// in package verbs, says which).
			if p := Argument(s, e.Path); p != nil {
				p.Enum = nil
				for _, v := range values[i] {
					p.Enum = append(p.Enum, v)
				}
			}
		}
	}
	r := &rendering{values: values, schema: s}
	r.json, _ = json.Marshal(s) // the SDK reports a schema that does not encode
	d.last.Store(r)
	return r
}

// Argument is the schema of the argument at a path ("entities.class": the class
// of a list's items), or nil.
func Argument(s *jsonschema.Schema, path string) *jsonschema.Schema {
	p := s
	for _, part := range strings.Split(path, ".") {
		if p = p.Properties[part]; p == nil {
			return nil
		}
		if p.Items != nil {
			p = p.Items
		}
	}
	return p
}

// Run decodes the arguments and runs the tool.
func (d *Def) Run(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
	if d.err != nil {
		return nil, d.err // not served (see Err); a test may still call it
	}
	return d.run(ctx, c, args)
}

// Tool is the MCP tool of a definition, named in a style.
func (d *Def) Tool(style NameStyle, snap *catalog.Snapshot) *mcp.Tool {
	f := false
	return &mcp.Tool{
		Name:        Encode(style, d.Canonical()),
		Title:       d.Title,
		Description: style.Spell(d.Description),
		InputSchema: d.toolSchema(snap),
		// Its JSON, made once: a tools/list of many class tools encodes it often.
		OutputSchema: outputJSON(d),
		Annotations: &mcp.ToolAnnotations{
			Title:           d.Title,
			ReadOnlyHint:    d.ReadOnly,
			DestructiveHint: &d.Destructive,
			IdempotentHint:  d.Idempotent,
			OpenWorldHint:   &f,
		},
	}
}

// outputJSON is the output schema as tools/list shows it; nil (not an empty
// json.RawMessage, which the SDK would refuse) for a tool that has none.
func outputJSON(d *Def) any {
	if d.output.json == nil {
		return nil
	}
	return d.output.json
}

// Constraint adds what a Go type cannot say to a generated schema.
type Constraint func(s *jsonschema.Schema) error

// property is an argument's schema; naming one the struct does not have is an error.
func property(s *jsonschema.Schema, arg string) (*jsonschema.Schema, error) {
	p := s.Properties[arg]
	if p == nil {
		return nil, fmt.Errorf("a constraint names the argument %q, which the arguments do not have", arg)
	}
	return p, nil
}

// Between bounds an integer or number argument.
func Between(arg string, lo, hi float64) Constraint {
	return func(s *jsonschema.Schema) error {
		p, err := property(s, arg)
		if err == nil {
			p.Minimum, p.Maximum = &lo, &hi
		}
		return err
	}
}

// OneOf limits a string argument to fixed values.
func OneOf(arg string, values ...string) Constraint {
	return func(s *jsonschema.Schema) error {
		p, err := property(s, arg)
		if err != nil {
			return err
		}
		p.Enum = nil
		for _, v := range values {
			p.Enum = append(p.Enum, v)
		}
		return nil
	}
}

// MaxItems bounds a list argument.
func MaxItems(arg string, n int) Constraint {
	return func(s *jsonschema.Schema) error {
		p, err := property(s, arg)
		if err == nil {
			p.MaxItems = &n
		}
		return err
	}
}

// Nested applies constraints to an object argument, or to the items of a list argument.
func Nested(arg string, cs ...Constraint) Constraint {
	return func(s *jsonschema.Schema) error {
		p, err := property(s, arg)
		if err != nil {
			return err
		}
		if p.Items != nil {
			p = p.Items
		}
		for _, c := range cs {
			if err := c(p); err != nil {
				return fmt.Errorf("%s: %w", arg, err)
			}
		}
		return nil
	}
}

// simplify makes a generated schema read as a person would write it: an optional
// pointer field is its type, not [null, type].
func simplify(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		simplify(p)
	}
	simplify(s.Items)
	if s.AdditionalProperties != nil && !closed(s) {
		simplify(s.AdditionalProperties)
	}
}
