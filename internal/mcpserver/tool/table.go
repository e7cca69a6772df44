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
}

// Table is the tools a server serves now, by served name. The catalog sync writes
// it; authorization and the Tasks adapter read it.
type Table struct {
	mu    sync.RWMutex
	tools map[string]Info
}

// Lookup finds a served tool.
func (t *Table) Lookup(name string) (Info, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i, ok := t.tools[name]
	return i, ok
}

// Replace makes the table the given tools.
func (t *Table) Replace(tools map[string]Info) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tools = tools
}
