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

package envtest_test

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// A tenant that may move processes with kubectl (the instance editor's role grants
// the status) cannot rewrite or drop a process's result: an export's result says what
// it stores, which its account's byte limit counts, and a smaller one would let the
// account hold more than its limit. Moving the process's state still goes through.
func TestATenantCannotRewriteAProcesssResult(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	as, ns := tenantWithProcessPolicy(t, "results", []string{"workflowprocesses", "workflowprocesses/status"}, "get", "list", "update", "patch")

	// The policy takes effect once the API server has loaded it: until a change of
	// input to a probe is refused.
	probe := process(uniq("probe"), uniq("wf"), map[string]any{"n": 0})
	probe.Namespace = ns
	create(t, probe)
	n := 0
	g.Eventually(func() error {
		n++
		return updateSpec(client.ObjectKeyFromObject(probe), func(p *metav1alpha1.WorkflowProcess) {
			p.Spec.Input = rawJSON(`{"n":` + strconv.Itoa(n) + `}`)
		})
	}).WithTimeout(timeout).WithPolling(poll).Should(MatchError(ContainSubstring("input is immutable")))

	// A finished process with a result, as the manager writes it (the suite's
	// controller does not know this workflow, so it leaves the status alone).
	p := process(uniq("done"), uniq("wf"), nil)
	p.Namespace = ns
	create(t, p)
	key := client.ObjectKeyFromObject(p)
	// A status update through c, again on a conflict (the controller writes the
	// status too).
	statusAs := func(c client.Client, mutate func(*metav1alpha1.WorkflowProcess)) error {
		var err error
		for range 50 {
			var cur metav1alpha1.WorkflowProcess
			if err = c.Get(ctx, key, &cur); err != nil {
				return err
			}
			mutate(&cur)
			if err = c.Status().Update(ctx, &cur); !apierrors.IsConflict(err) {
				return err
			}
		}
		return err
	}
	g.Expect(statusAs(k8s, func(cur *metav1alpha1.WorkflowProcess) {
		cur.Status.Result = rawJSON(`{"stored":{"bytes":9000000}}`)
		cur.Status.State = "open"
	})).To(Succeed())
	setStatus := func(mutate func(*metav1alpha1.WorkflowProcess)) error { return statusAs(as, mutate) }
	g.Expect(setStatus(func(cur *metav1alpha1.WorkflowProcess) { cur.Status.Result = rawJSON(`{"stored":{"bytes":1}}`) })).
		To(MatchError(ContainSubstring("status.result is written only by a Sandbar manager")), "rewriting the result")
	g.Expect(setStatus(func(cur *metav1alpha1.WorkflowProcess) { cur.Status.Result = nil })).
		To(MatchError(ContainSubstring("status.result is written only by a Sandbar manager")), "dropping the result")
	g.Expect(setStatus(func(cur *metav1alpha1.WorkflowProcess) { cur.Status.State = "closed" })).To(Succeed(), "moving the process")

	g.Expect(k8s.Get(ctx, key, p)).To(Succeed())
	g.Expect(p.Status.Result).NotTo(BeNil())
	g.Expect(string(p.Status.Result.Raw)).To(MatchJSON(`{"stored":{"bytes":9000000}}`))
}
