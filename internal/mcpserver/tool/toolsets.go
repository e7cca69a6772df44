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
	"slices"
	"strings"
)

// The toolsets an account may name in spec.toolsets: the groups of operational
// verbs tools/list shows it. Per-class tools are listed whatever the toolsets.
const (
	// ToolsetCore is the default: the verbs a client needs to work with instances
	// and processes (Spec.Core), small enough that every class's own tool fits
	// beside it for every known client.
	ToolsetCore = "core"
	// ToolsetAll is every operational verb.
	ToolsetAll = "all"
)

// VerbGroups are the groups of the operational verbs (Spec.Group), each a toolset of
// its own: the tools named sandbar_<group>_*.
var VerbGroups = []string{"schema", "class", "types", "property", "codec", "entity", "tasks", "validation", "project", "workflow"}

// ToolsetNames are the toolsets an account may name, as the ServiceAccount CRD's
// enum lists them.
func ToolsetNames() []string {
	return append([]string{ToolsetCore, ToolsetAll}, VerbGroups...)
}

// Listed says whether tools/list shows a served tool to an account of these toolsets
// (empty: core): a per-class tool always; a verb when one of the toolsets holds it.
// classesServed says whether the account is served every per-class tool: then the
// core toolset does not hold the verbs in their place (Spec.InPlaceOfClasses).
// Toolsets narrow what is listed, never what may be called.
func Listed(toolsets []string, info Info, classesServed bool) bool {
	if info.Class != "" {
		return true
	}
	core := info.Core && (!info.InPlaceOfClasses || !classesServed)
	if len(toolsets) == 0 {
		return core
	}
	group := groupOf(info.Canonical)
	for _, ts := range toolsets {
		if ts == ToolsetAll || (ts == group && group != "") || (ts == ToolsetCore && core) {
			return true
		}
	}
	return false
}

// groupOf is the group of a verb's canonical name, sandbar.<group>.<name>.
func groupOf(canonical string) string {
	rest, ok := strings.CutPrefix(canonical, "sandbar.")
	if !ok {
		return ""
	}
	group, _, _ := strings.Cut(rest, ".")
	if !slices.Contains(VerbGroups, group) {
		return ""
	}
	return group
}
