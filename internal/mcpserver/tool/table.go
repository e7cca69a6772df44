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
	"sync"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Info is what the rest of the server needs to know of a served tool.
type Info struct {
	// Canonical is the dotted name, which permissions may also match.
	Canonical string
	ReadOnly  bool
	// LongRunning tools may run as MCP tasks.
	LongRunning bool
	// Explicit tools are allowed only by permissions that name them (Spec.Explicit).
	Explicit bool
	// Schema, when set, is the input schema tools/list shows an account (one whose
	// enums depend on what the account may use); nil: the served schema.
	Schema func(acct *catalog.Account) any
	// Class is the class (its name) whose own create tool this is; empty for the
	// operational verbs.
	Class string
	// Fallback tools are served only to accounts that need them in place of per-class
	// tools (Table.Fallback): the operational verbs of a per-class tool surface.
	Fallback bool
	// Core verbs are in the core toolset (Spec.Core).
	Core bool
	// InPlaceOfClasses verbs are listed only to accounts that are not served every
	// per-class tool (Spec.InPlaceOfClasses); any account may call them.
	InPlaceOfClasses bool
}

// Table is the tools a server serves now, by served name. The catalog sync writes
// it; authorization and the Tasks adapter read it.
type Table struct {
	mu    sync.RWMutex
	tools map[string]Info
	// withheld are the classes whose own tool clients would drop, so it is not served.
	withheld []string
}

// Lookup finds a served tool.
func (t *Table) Lookup(name string) (Info, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i, ok := t.tools[name]
	return i, ok
}

// Replace makes the table the given tools, and records the classes whose own tool
// is withheld.
func (t *Table) Replace(tools map[string]Info, withheld []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tools, t.withheld = tools, withheld
}

// All is every served tool by name. The map is never changed (Replace swaps it):
// read it, do not write it.
func (t *Table) All() map[string]Info {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.tools
}

// Withheld are the classes whose own tool is not served, because clients would drop it.
func (t *Table) Withheld() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.withheld
}
