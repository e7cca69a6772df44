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
	"slices"
	"strings"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// Budget is what an account is served of a tool table, against the most tools its
// clients take (tool.ToolLimit), and what tools/list shows it of that (its toolsets,
// tool.Listed). The MCP server serves by it, and the ServiceAccount reconciler
// reports it, from the same function (Plan).
type Budget struct {
	// Would is how many tools the account would be listed with its per-class tools,
	// and PerClass how many of those are per-class tools.
	Would, PerClass int
	// Limit is the most tools its clients take (0: no limit), from Client (where the
	// limit comes from: "spec.maxTools", a client's name, or "default").
	Limit  int
	Client string
	// Over: the per-class tools would push the account past its limit, so it is
	// served the operational verbs (which take the class as an argument) instead.
	Over bool
	// Served is how many tools it is listed.
	Served int
	// Toolsets are the account's toolsets (empty: core).
	Toolsets []string
	// narrow: its spec.permissions.tools is a list without "*", so the tools it
	// allows are the admin's choice, and each is listed whatever the toolsets.
	narrow bool
	// fallback: the fallback tools (tool.Info.Fallback) are served to the account,
	// and the verbs in place of the per-class tools (InPlaceOfClasses) listed.
	fallback bool
	// hidden counts the tools the account may call that its toolsets do not list.
	hidden int
}

// Plan is the budget of an account for the tools of a table, for requests of a
// client (tool.ClientOf; "" for an unknown one); withheld says whether some class's
// own tool is not served (then every account gets the fallback tools).
// defaultLimit applies to accounts that declare no clients and no spec.maxTools,
// from clients that are not known.
func Plan(acct *catalog.Account, client string, tools map[string]tool.Info, withheld bool, defaultLimit int) Budget {
	b := Budget{}
	if acct != nil {
		b.Toolsets = acct.Toolsets
		b.narrow = acct.Permissions.Tools != nil && !slices.Contains(acct.Permissions.Tools, "*")
	}
	// listed counts the verbs listed whether or not the account is served its
	// per-class tools; inPlace those listed only when it is not.
	var listed, perClass, fallback, inPlace, hidden int
	for name, info := range tools {
		if !MayCall(acct, name, info) {
			continue
		}
		always := info.Class == "" && b.listed(info, true)
		switch {
		case info.Class != "":
			perClass++
		case always && info.Fallback:
			fallback++
		case always:
			listed++
		case b.listed(info, false):
			inPlace++
		default:
			hidden++
		}
	}
	b.PerClass, b.fallback, b.hidden = perClass, withheld || perClass == 0, hidden
	b.Limit, b.Client = tool.ToolLimit(acct, client, defaultLimit)
	b.Would = listed + perClass
	if b.fallback {
		b.Would += fallback + inPlace
	}
	b.Over = b.Limit > 0 && b.Would > b.Limit && perClass > 0
	b.Served = b.Would
	if b.Over {
		b.Served = listed + fallback + inPlace
		b.fallback = true
	}
	return b
}

// Shows says whether an account with this budget is served a tool it may call:
// whether it may call it.
func (b Budget) Shows(info tool.Info) bool {
	switch {
	case info.Fallback:
		return b.fallback
	case info.Class != "":
		return !b.Over
	}
	return true
}

// Lists says whether tools/list shows the account a served tool it may call: one
// it is served, of its toolsets (or any, for narrow permissions).
func (b Budget) Lists(info tool.Info) bool {
	return b.Shows(info) && b.listed(info, !b.fallback)
}

// listed says whether the account's toolsets list a tool it may call, or its
// permissions are narrow (a list without "*"): then every tool they allow is.
func (b Budget) listed(info tool.Info, classesServed bool) bool {
	return b.narrow || tool.Listed(b.Toolsets, info, classesServed)
}

// Describe says in words what the account sees, for its status.
func (b Budget) Describe() string {
	var msg string
	switch {
	case b.Over:
		msg = fmt.Sprintf("the account would see %d tools, more than the %d its clients take (%s); it is served %d tools: "+
			"the operational verbs, which take the class as an argument, instead of its %d per-class tools",
			b.Would, b.Limit, b.Client, b.Served, b.PerClass)
		if b.Served > b.Limit {
			msg += fmt.Sprintf("; that is still more than %d: narrow spec.toolsets or spec.permissions.tools", b.Limit)
		}
	case b.Limit > 0 && b.Served > b.Limit:
		msg = fmt.Sprintf("the account sees %d tools, more than the %d its clients take (%s): narrow spec.toolsets or spec.permissions.tools",
			b.Served, b.Limit, b.Client)
	case b.Near():
		msg = fmt.Sprintf("the account sees %d tools, %d%% of the %d its clients take (%s): near the limit", b.Served, b.Served*100/b.Limit, b.Limit, b.Client)
		if b.PerClass > 0 {
			msg += fmt.Sprintf(", past which it is served the operational verbs instead of its %d per-class tools", b.PerClass)
		}
	case b.Limit > 0:
		msg = fmt.Sprintf("the account sees %d tools; its clients take %d (%s)", b.Served, b.Limit, b.Client)
	default:
		msg = fmt.Sprintf("the account sees %d tools; its clients declare no limit", b.Served)
	}
	if b.Client == "default" {
		msg += "; a client that names itself as one of " + strings.Join(tool.ClientNames(), ", ") + " gets that client's limit"
	}
	if b.hidden > 0 {
		toolsets := "core"
		if len(b.Toolsets) > 0 {
			toolsets = strings.Join(b.Toolsets, ", ")
		}
		msg += fmt.Sprintf("; %d more tools its permissions allow are not listed (toolsets: %s), and may be called by name", b.hidden, toolsets)
	}
	return msg
}

// Fits reports whether the account sees no more tools than its clients take.
func (b Budget) Fits() bool { return !b.Over && (b.Limit == 0 || b.Served <= b.Limit) }

// Near reports whether the account fits, with 80% or more of the tools its clients
// take: a warning before the limit cuts its per-class tools.
func (b Budget) Near() bool { return b.Limit > 0 && b.Fits() && b.Served*5 >= b.Limit*4 }
