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
	"context"
	"encoding/json"
)

// Gate decides, before a call runs, whether it may: the call policies. Every
// tools/call passes it, whatever the transport, revision or form (a task, a
// fallback tool), since it stands in Handler, the one way into a tool. It answers
// nil to let the call run, and a domain error that refuses it. args are the
// call's arguments without confirm.
type Gate func(ctx context.Context, d *Def, c *Call, args json.RawMessage) error

// Act is one thing a call does, as the call policies see it: a create of an
// instance, the update of one, each item of an import. A tool whose arguments say
// more than its name and its class and namespace arguments (which the gate reads
// itself) declares Acts.
type Act struct {
	// Verb is the policy verb (create, update, delete, import, ...); empty: the
	// tool's own.
	Verb string
	// AlsoVerbs are other verbs the act counts as, for the policies' match: an item
	// of an import writes an instance as a create or an update does.
	AlsoVerbs []string
	// Class is the class acted on, as prefix/Kind or name; Namespace where ("" for
	// the account's own); Name the instance or process, if named.
	Class, Namespace, Name string
	// Attributes are the slot values the act writes.
	Attributes map[string]any
	// Object reads the stored instance the act changes (an update, a delete), for
	// the policies that look at it; nil when there is none.
	Object func(ctx context.Context) (map[string]any, error)
}

// Acts turns a call's arguments (as JSON decoded into any) into what it does.
type Acts func(c *Call, args map[string]any) ([]Act, error)

// WithActs declares what a call of the tool does, for the call policies.
func (d *Def) WithActs(a Acts) *Def {
	d.acts = a
	return d
}

// DeclaresActs says whether the tool declares its acts (ActsOf): then its call's
// verbs are in its arguments.
func (d *Def) DeclaresActs() bool { return d.acts != nil }

// ActsOf is what a call of the tool does, as its declaration says, or nil and false
// for a tool that declares nothing (the gate reads its arguments itself).
func (d *Def) ActsOf(c *Call, args map[string]any) ([]Act, bool, error) {
	if d.acts == nil {
		return nil, false, nil
	}
	acts, err := d.acts(c, args)
	return acts, true, err
}

// NotePolicy records a call policy's decision on a request, for its audit event
// and span: "<kind> <policy>, rule <rule>: <action>".
func NotePolicy(ctx context.Context, decision string) {
	Note(ctx, func(o *Object) { o.Policies = append(o.Policies, decision) })
}
