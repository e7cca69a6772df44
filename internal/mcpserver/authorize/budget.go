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

package authorize

import (
	"fmt"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// Budget is what an account is served of a tool table, against the most tools its
// clients take (tool.ToolLimit). The MCP server serves by it, and the ServiceAccount
// reconciler reports it, from the same function (Plan).
type Budget struct {
	// Would is how many tools the account would see with its per-class tools, and
	// PerClass how many of those are per-class tools.
	Would, PerClass int
	// Limit is the most tools its clients take (0: no limit), from Client (a client's
	// name, "spec.maxTools" or "default").
	Limit  int
	Client string
	// Over: the per-class tools would push the account past its limit, so it is
	// served the operational verbs (which take the class as an argument) instead.
	Over bool
	// Served is how many tools it sees.
	Served int
	// fallback: the fallback tools (tool.Info.Fallback) are served to the account.
	fallback bool
}

// Plan is the budget of an account for the tools of a table; withheld says whether
// some class's own tool is not served (then every account gets the fallback tools).
// defaultLimit applies to accounts that declare no clients and no spec.maxTools.
func Plan(acct *catalog.Account, tools map[string]tool.Info, withheld bool, defaultLimit int) Budget {
	var operational, perClass, fallback int
	for name, info := range tools {
		if !MayCall(acct, name, info) {
			continue
		}
		switch {
		case info.Fallback:
			fallback++
		case info.Class != "":
			perClass++
		default:
			operational++
		}
	}
	b := Budget{PerClass: perClass, fallback: withheld}
	b.Limit, b.Client = tool.ToolLimit(acct, defaultLimit)
	b.Would = operational + perClass
	if withheld {
		b.Would += fallback
	}
	b.Over = b.Limit > 0 && b.Would > b.Limit && perClass > 0
	b.Served = b.Would
	if b.Over {
		b.fallback = true
		b.Served = operational + fallback
	}
	return b
}

// Shows says whether an account with this budget sees a served tool it may call.
func (b Budget) Shows(info tool.Info) bool {
	switch {
	case info.Fallback:
		return b.fallback
	case info.Class != "":
		return !b.Over
	}
	return true
}

// Describe says in words what the account sees, for its status.
func (b Budget) Describe() string {
	switch {
	case b.Over:
		msg := fmt.Sprintf("the account would see %d tools, more than the %d its clients take (%s); it is served %d tools: "+
			"the operational verbs, which take the class as an argument, instead of its %d per-class tools",
			b.Would, b.Limit, b.Client, b.Served, b.PerClass)
		if b.Served > b.Limit {
			msg += fmt.Sprintf("; that is still more than %d: narrow spec.permissions.tools", b.Limit)
		}
		return msg
	case b.Limit > 0 && b.Served > b.Limit:
		return fmt.Sprintf("the account sees %d tools, more than the %d its clients take (%s): narrow spec.permissions.tools",
			b.Served, b.Limit, b.Client)
	case b.Limit > 0:
		return fmt.Sprintf("the account sees %d tools; its clients take %d (%s)", b.Served, b.Limit, b.Client)
	}
	return fmt.Sprintf("the account sees %d tools; its clients declare no limit", b.Served)
}

// Fits reports whether the account sees no more tools than its clients take.
func (b Budget) Fits() bool { return !b.Over && (b.Limit == 0 || b.Served <= b.Limit) }
