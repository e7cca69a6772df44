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

package mcpserver_test

// An account's byte limit holds however its starts interleave: a process's bytes are
// reserved before it starts, atomically across replicas, and an export keeps within
// what was reserved for it.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// bulkyClass is a zorp class with 40 instances of 64 KiB of random text each: an
// export of it stores about 1.5 MiB, compressed.
func bulkyClass(t *testing.T) string {
	t.Helper()
	kind := "Bulky" + strings.ToUpper(rand.String(4))
	zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString})
	createInstances(t, kind, 40, func(i int) string { return fmt.Sprintf("bulky-%02d", i) },
		func(int) map[string]any { return map[string]any{strings.ToLower(kind): rand.String(64 << 10)} })
	return "zorp/" + kind
}

// accountHolds is what an account's processes hold, as its byte limit counts them,
// once all have ended: their inputs, their results and the chunks of stored ones.
// It fails the test while one still runs.
func accountHolds(g Gomega, account string) int64 {
	var list metav1alpha1.WorkflowProcessList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace("default"))).To(Succeed())
	n := int64(0)
	for _, p := range list.Items {
		if p.Spec.Owner != account {
			continue
		}
		g.Expect(workflow.Terminal(&p.Status)).To(BeTrue(), "%s has ended", p.Name)
		if p.Spec.Input != nil {
			n += int64(len(p.Spec.Input.Raw))
		}
		if p.Status.Result != nil {
			n += int64(len(p.Status.Result.Raw))
			if st := builtin.StoredOf(p.Status.Result.Raw); st != nil {
				n += st.StoredBytes
			}
		}
	}
	return n
}

// Eight exports started at once through two replicas, for one account whose limit
// is less than two exports hold: once they have all ended the account holds no more
// than its limit, and each start refused says what the account holds and how to
// free room.
func TestConcurrentExportsThroughTwoReplicasStayWithinTheAccountsByteLimit(t *testing.T) {
	g := NewWithT(t)
	const limit, n = 2 << 20, 8
	class := bulkyClass(t)
	opts := mcpserver.Options{MaxProcessBytesPerAccount: limit}
	replicas := []string{serve(t, opts), serve(t, opts)}
	acct, tok := newAccount(t, unique("racer"), metav1alpha1.Permissions{ReadOnly: true})
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		sessions[i] = connect(t, replicas[i%len(replicas)], tok, nil)
	}

	results, errs := make([]*mcp.CallToolResult, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = sessions[i].CallTool(context.Background(), &mcp.CallToolParams{
				Name: "sandbar_project_export", Arguments: map[string]any{"class": class}})
		})
	}
	close(start)
	wg.Wait()

	var started []string
	for i, res := range results {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		if !res.IsError {
			started = append(started, taskID(t, res))
			continue
		}
		g.Expect(text(res)).To(And(
			HavePrefix("refused: this account's processes hold "),
			ContainSubstring("over the account's limit of 2.0 MiB (--max-process-bytes-per-account); nothing was started"),
			ContainSubstring("kubectl delete workflowprocess -n default"),
			ContainSubstring("ask an admin to raise --max-process-bytes-per-account")))
	}
	g.Expect(started).NotTo(BeEmpty())
	g.Expect(held(t, acct.Name)).To(ConsistOf(started), "nothing was created for a refused start")

	var holds int64
	g.Eventually(func(g Gomega) { holds = accountHolds(g, acct.Name) }).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	t.Logf("%d of %d exports started; the account holds %d bytes, its limit %d", len(started), n, holds, limit)
	g.Expect(holds).To(BeNumerically("<=", limit), "%d bytes past the limit", holds-limit)

	// The replicas kept the account's reservations in a Lease of its namespace, which
	// goes with the account.
	var ledger coordinationv1.Lease
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "sandbar-processes-" + acct.Name}, &ledger)).To(Succeed())
	g.Expect(ledger.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "ServiceAccount"), HaveField("Name", acct.Name), HaveField("UID", acct.UID))))
}

// Starts of one account made at once through two replicas never leave it holding
// more processes than its limit.
func TestConcurrentStartsThroughTwoReplicasStayWithinTheAccountsProcessLimit(t *testing.T) {
	g := NewWithT(t)
	const limit, n = 3, 12
	opts := mcpserver.Options{MaxProcessesPerAccount: limit}
	replicas := []string{serve(t, opts), serve(t, opts)}
	acct, tok := newAccount(t, unique("crowd"), metav1alpha1.Permissions{})
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		sessions[i] = connect(t, replicas[i%len(replicas)], tok, nil)
	}
	results, errs := make([]*mcp.CallToolResult, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = sessions[i].CallTool(context.Background(), &mcp.CallToolParams{
				Name: "sandbar_workflow_start-process", Arguments: map[string]any{"workflow": "order.fulfillment"}})
		})
	}
	close(start)
	wg.Wait()
	var started []string
	for i, res := range results {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		if !res.IsError {
			started = append(started, taskID(t, res))
			continue
		}
		g.Expect(text(res)).To(HavePrefix("refused: this account holds 3 processes"))
	}
	t.Logf("%d of %d starts admitted, the limit %d", len(started), n, limit)
	g.Expect(held(t, acct.Name)).To(And(ConsistOf(started), HaveLen(limit)))
}

// An export started with less room left than it needs is admitted with that room,
// fails when it would hold more, says why and what to do, and stores nothing past
// it: the account stays within its limit.
func TestExportPastTheRoomItsAccountHadFailsAndSaysWhy(t *testing.T) {
	g := NewWithT(t)
	const limit = 2 << 20
	class := bulkyClass(t)
	url := serve(t, mcpserver.Options{MaxProcessBytesPerAccount: limit})
	acct, tok := newAccount(t, unique("squeezed"), metav1alpha1.Permissions{})
	cs := connect(t, url, tok, nil)
	res := startOrder(t, cs, map[string]any{"note": strings.Repeat("x", 700<<10)}, nil)
	g.Expect(res.IsError).To(BeFalse(), text(res))
	order := taskID(t, res)
	// The order runs until someone moves it; cancelled, it keeps its input.
	res = callTool(t, cs, "sandbar_tasks_cancel", map[string]any{"taskId": order})
	g.Expect(res.IsError).To(BeFalse(), text(res))

	p := startExport(t, cs, class, timeout)
	holds := accountHolds(g, acct.Name)
	t.Logf("the export %s; the account holds %d bytes, its limit %d", p.Status.Phase, holds, limit)
	var o metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: order}, &o)).To(Succeed())
	g.Expect(p.Spec.ResultBudget).To(Equal(int64(limit-len(o.Spec.Input.Raw)-len(p.Spec.Input.Raw))), "the room the account had left")
	g.Expect(p.Status.Phase).To(Equal(metav1alpha1.PhaseFailed), p.Status.StatusMessage)
	g.Expect(p.Status.StatusMessage).To(And(
		ContainSubstring("the export would hold more than the 1.3 MiB its account had room for when it started (--max-process-bytes-per-account)"),
		ContainSubstring("nothing more was stored"),
		ContainSubstring("delete finished processes"),
		ContainSubstring("export one class at a time")))
	g.Expect(resultChunks(t, p.Name)).To(BeEmpty(), "nothing was stored")
	g.Expect(holds).To(BeNumerically("<=", limit), "%d bytes past the limit", holds-limit)
}

// An export reserves the room its account has left, but no more than one export may
// store: the rest stays free for other starts.
func TestExportReservesNoMoreThanOneExportMayStore(t *testing.T) {
	g := NewWithT(t)
	const limit, storeCap = 4 << 20, 1 << 20
	url := serve(t, mcpserver.Options{MaxProcessBytesPerAccount: limit, MaxStoredResultBytes: storeCap})
	_, tok := newAccount(t, unique("capped"), metav1alpha1.Permissions{})
	cs := connect(t, url, tok, nil)
	p := startExport(t, cs, "zorp/SpaceBoot", timeout)
	g.Expect(p.Spec.ResultBudget).To(Equal(int64(storeCap)))
	g.Expect(p.Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded), p.Status.StatusMessage)
}
