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

package e2e_test

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The chart caps what one export stores (limits.storedResultBytes, 64 MiB by
// default), and lets the manager create the Secrets that hold exports' results: in
// every namespace by default, only in rbac.apiKeyNamespaces (where the accounts and
// their processes live) with them, and never to update or delete any Secret.
func TestChartCapsAndGrantsStoredExportResults(t *testing.T) {
	g := NewWithT(t)
	render := func(flags ...string) string { return renderChart(t, flags...) }
	args := func(rendered string) []string { return managerArgs(t, rendered) }
	secretVerbs := func(rendered, id string) []string {
		var role rbacv1.ClusterRole // a Role's rules read the same
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, decode(t, rendered), id).Object, &role)).To(Succeed())
		var verbs []string
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "secrets") {
				verbs = append(verbs, r.Verbs...)
			}
		}
		return verbs
	}

	def := render()
	g.Expect(args(def)).To(ContainElement("--max-stored-result-bytes=67108864"))
	g.Expect(args(render("--set", "limits.storedResultBytes=1048576"))).To(ContainElement("--max-stored-result-bytes=1048576"))
	g.Expect(secretVerbs(def, "ClusterRole.rbac.authorization.k8s.io sandbar-manager")).To(ConsistOf("get", "list", "watch", "create"))
	narrow := render("--set", "rbac.apiKeyNamespaces={team-a}")
	g.Expect(secretVerbs(narrow, "Role.rbac.authorization.k8s.io team-a/sandbar-api-keys")).To(ConsistOf("get", "list", "watch", "create"))

	g.Expect(chartRefuses(t, "--set", "limits.storedResultBytes=-1")).To(ContainSubstring("/limits/storedResultBytes"), "a negative cap")
}
