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

package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// OpenTo says whether an account may use a workflow through MCP: see its prompt and
// start its processes. A workflow whose spec.namespaces lists namespaces is open only
// to the accounts of those; any other to every account. This is the one rule
// start-process and prompts apply (start-process also refuses the built-in sandbar.*
// workflows, which run through their own verbs).
func (w *Workflow) OpenTo(acct *Account) bool {
	if acct == nil {
		return false
	}
	return len(w.Spec.Namespaces) == 0 || slices.Contains(w.Spec.Namespaces, acct.Namespace)
}

// Closed says why a workflow is not open to an account, for a refusal.
func (w *Workflow) Closed(acct *Account) string {
	ns := ""
	if acct != nil {
		ns = acct.Namespace
	}
	return fmt.Sprintf("the workflow %s is open only to the accounts of namespace(s) %s (its spec.namespaces), not to this account's namespace %q; "+
		"use another workflow, or ask whoever defined it (or a cluster admin) to add the namespace",
		w.Name, strings.Join(w.Spec.Namespaces, ", "), ns)
}
