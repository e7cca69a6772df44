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
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	wf "github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// tokenKey is the key the suite's manager shares with the MCP server it stands in for.
var tokenKey = []byte("the controllers suite's token key, 32 bytes or more")

// process is a process as the MCP server starts it: sealed with the manager's key.
func process(name, definition string, input any) *metav1alpha1.WorkflowProcess {
	p := unsealed(name, definition, input)
	wf.NewIssuer(tokenKey).Issue(p)
	return p
}

// unsealed is a process as kubectl makes it, without the seal of a manager.
func unsealed(name, definition string, input any) *metav1alpha1.WorkflowProcess {
	p := &metav1alpha1.WorkflowProcess{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		// The sample account, which acts as the sample's Kubernetes ServiceAccount.
		Spec: metav1alpha1.WorkflowProcessSpec{Definition: definition, Owner: "claude"},
	}
	if input != nil {
		raw, _ := json.Marshal(input)
		p.Spec.Input = &apiextensionsv1.JSON{Raw: raw}
	}
	return p
}

// bookClass makes the class <p>/Book with a required string slot title, waits until
// it is Ready and in the catalog, and returns its title Property.
func bookClass(t *testing.T, p string) *metav1alpha1.Property {
	t.Helper()
	title := property(p+".title", metav1alpha1.RangeString)
	book := class(p+".book", p, "Book", nil, slot(title.Name, true))
	create(t, title, book)
	waitClassCondition(t, book.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	NewWithT(t).Eventually(func() bool { return store.Load().FindClass(p+"/Book") != nil }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	return title
}

func waitProcess(t *testing.T, p *metav1alpha1.WorkflowProcess, check func(g Gomega, st metav1alpha1.WorkflowProcessStatus)) metav1alpha1.WorkflowProcessStatus {
	t.Helper()
	return waitProcessWithin(t, timeout, p, check)
}

// waitProcessWithin is waitProcess for a process whose work takes longer than the
// suite's usual wait, such as an import of many items on a busy machine.
func waitProcessWithin(t *testing.T, within time.Duration, p *metav1alpha1.WorkflowProcess, check func(g Gomega, st metav1alpha1.WorkflowProcessStatus)) metav1alpha1.WorkflowProcessStatus {
	t.Helper()
	var got metav1alpha1.WorkflowProcess
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(p), &got)).To(Succeed())
		check(g, got.Status)
	}).WithTimeout(within).WithPolling(poll).Should(Succeed())
	return got.Status
}

func TestProcessLifecycleAndCancellationGuard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := uniq("orders")
	wd := workflow(name, []metav1alpha1.WorkflowState{{Name: "pending"}, {Name: "confirmed"}, {Name: "shipped"},
		{Name: "delivered", Terminal: metav1alpha1.TerminalSuccess}, {Name: "cancelled", Terminal: metav1alpha1.TerminalCancelled}},
		metav1alpha1.WorkflowTransition{Name: "confirm", From: []string{"pending"}, To: "confirmed"},
		metav1alpha1.WorkflowTransition{Name: "ship", From: []string{"confirmed"}, To: "shipped"},
		metav1alpha1.WorkflowTransition{Name: "deliver", From: []string{"shipped"}, To: "delivered"},
		metav1alpha1.WorkflowTransition{Name: "cancel", From: []string{"pending", "confirmed"}, To: "cancelled"})
	create(t, wd)

	first := process(uniq("p"), name, nil)
	create(t, first)
	st := waitProcess(t, first, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseRunning))
		g.Expect(st.State).To(Equal("pending"))
	})
	g.Expect(st.History).To(HaveLen(1))
	g.Expect(condition(st.Conditions, metav1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))

	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
			return err
		}
		first.Spec.CancelRequest = &metav1alpha1.CancelRequest{Reason: "customer called", RequestedBy: "default/claude"}
		return k8s.Update(ctx, first)
	}).WithTimeout(timeout).Should(Succeed())
	st = waitProcess(t, first, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseCancelled))
	})
	g.Expect(st.Cancellation.Accepted).To(BeTrue())
	g.Expect(st.History[len(st.History)-1]).To(And(
		HaveField("Transition", "cancel"), HaveField("Actor", "default/claude"), HaveField("Reason", "customer called")))
	waitEvent(t, "default", first.Name, string(metav1alpha1.PhaseCancelled))

	// A process that shipped can no longer be cancelled: the guard says why.
	second := process(uniq("p"), name, nil)
	create(t, second)
	waitProcess(t, second, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) { g.Expect(st.State).To(Equal("pending")) })
	var def metav1alpha1.WorkflowDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, &def)).To(Succeed())
	w := catalog.ValidateWorkflow(&def, nil)
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
			return err
		}
		for _, step := range []string{"confirm", "ship"} {
			if err := wf.Transition(w, &second.Status, step, "default/claude", "", metav1.Now()); err != nil {
				return err
			}
		}
		return k8s.Status().Update(ctx, second)
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
			return err
		}
		second.Spec.CancelRequest = &metav1alpha1.CancelRequest{}
		return k8s.Update(ctx, second)
	}).WithTimeout(timeout).Should(Succeed())
	st = waitProcess(t, second, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) { g.Expect(st.Cancellation).NotTo(BeNil()) })
	g.Expect(st.Cancellation.Accepted).To(BeFalse())
	g.Expect(st.Cancellation.Reason).To(Equal(wf.NotCancellable))
	g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseRunning))
	g.Expect(st.State).To(Equal("shipped"))

	missing := process(uniq("p"), "no.such.workflow", nil)
	create(t, missing)
	waitProcess(t, missing, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(condition(st.Conditions, metav1alpha1.ConditionReady).Reason).To(Equal(metav1alpha1.ReasonUnknownDefinition))
	})
}

func TestBuiltinValidateExportImport(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("w")
	title := bookClass(t, p)
	for _, n := range []string{"dune", "emma", "ulysses-the-long-one"} {
		g.Expect(k8s.Create(ctx, instance(p+".sandbar.dev", "Book", n, map[string]any{"title": n}))).To(Succeed())
	}
	// Tighten the slot: one stored instance no longer fits the class.
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(title), title); err != nil {
			return err
		}
		max := int64(10)
		title.Spec.MaxLength = &max
		return k8s.Update(ctx, title)
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func() bool {
		c := store.Load().Classes[p+".book"]
		if c == nil || len(c.Slots) == 0 {
			return false
		}
		s, _ := c.Slot("title")
		return s.MaxLength != nil
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())

	validate := process(uniq("v"), builtin.Validate, map[string]any{"class": p + "/Book"})
	create(t, validate)
	st := waitProcess(t, validate, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded), st.StatusMessage)
	})
	var res map[string]any
	g.Expect(json.Unmarshal(st.Result.Raw, &res)).To(Succeed())
	g.Expect(res["checked"]).To(Equal(3.0))
	g.Expect(res["invalid"]).To(Equal(1.0))
	g.Expect(res["failures"]).To(ConsistOf(HaveKeyWithValue("name", "ulysses-the-long-one")))
	g.Expect(st.StatusMessage).To(ContainSubstring("checked 3 instances, 1 invalid"))

	export := process(uniq("e"), builtin.Export, map[string]any{"class": p + "/Book"})
	create(t, export)
	st = waitProcess(t, export, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
	})
	// The items are stored in a chunk owned by the process; the status keeps the summary.
	var bundle map[string]any
	g.Expect(json.Unmarshal(st.Result.Raw, &bundle)).To(Succeed())
	g.Expect(bundle).To(And(HaveKeyWithValue("count", 3.0), Not(HaveKey("items"))))
	stored := builtin.StoredOf(st.Result.Raw)
	g.Expect(stored).NotTo(BeNil())
	g.Expect(stored.Count()).To(Equal(3))
	var exported metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(export), &exported)).To(Succeed())
	chunk, err := builtin.ReadChunk(ctx, k8s, builtin.ProcessRef{Namespace: exported.Namespace, Name: exported.Name, UID: exported.UID}, stored, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chunk).To(HaveLen(3))

	items := []any{
		map[string]any{"class": p + "/Book", "name": "dune", "attributes": map[string]any{"title": "dune"}},
		map[string]any{"class": p + "/Book", "name": "persuasion", "attributes": map[string]any{"title": "persuasion"}},
		map[string]any{"class": p + "/Book", "name": "bad", "attributes": map[string]any{"title": 42}},
	}
	for _, want := range []map[string]float64{{"created": 1, "unchanged": 1, "failed": 1}, {"created": 0, "unchanged": 2, "failed": 1}} {
		imp := process(uniq("i"), builtin.Import, map[string]any{"bundle": map[string]any{"items": items}})
		create(t, imp)
		st = waitProcess(t, imp, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
			g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
		})
		g.Expect(json.Unmarshal(st.Result.Raw, &res)).To(Succeed())
		for k, v := range want {
			g.Expect(res[k]).To(Equal(v), k)
		}
		g.Expect(st.Progress.Done).To(Equal(int64(3)))
	}

	// A chunk done again after its status write was lost finds the instances it wrote:
	// they count as it counted them the first time, not as unchanged.
	redo := process(uniq("i"), builtin.Import, map[string]any{"bundle": map[string]any{"items": []any{
		map[string]any{"class": p + "/Book", "name": "mine", "attributes": map[string]any{"title": "mine"}},
		map[string]any{"class": p + "/Book", "name": "theirs", "attributes": map[string]any{"title": "theirs"}},
		map[string]any{"class": p + "/Book", "name": "fresh", "attributes": map[string]any{"title": "fresh"}},
	}}})
	mine := instance(p+".sandbar.dev", "Book", "mine", map[string]any{"title": "mine"})
	mine.SetAnnotations(map[string]string{metav1alpha1.AnnotationImportedBy: "default/" + redo.Name + " created"})
	g.Expect(k8s.Create(ctx, mine)).To(Succeed())
	g.Expect(k8s.Create(ctx, instance(p+".sandbar.dev", "Book", "theirs", map[string]any{"title": "theirs"}))).To(Succeed())
	create(t, redo)
	st = waitProcess(t, redo, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
	})
	res = map[string]any{}
	g.Expect(json.Unmarshal(st.Result.Raw, &res)).To(Succeed())
	g.Expect(res).To(And(HaveKeyWithValue("created", 2.0), HaveKeyWithValue("unchanged", 1.0), HaveKeyWithValue("updated", 0.0)))
	fresh := instance(p+".sandbar.dev", "Book", "fresh", nil)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(fresh), fresh)).To(Succeed())
	g.Expect(fresh.GetAnnotations()).To(HaveKeyWithValue(metav1alpha1.AnnotationImportedBy, "default/"+redo.Name+" created"))

	// A finished process with a TTL goes away.
	ttl := int64(0)
	gone := process(uniq("t"), builtin.Validate, map[string]any{"class": p + "/Book"})
	gone.Spec.TTLSecondsAfterFinished = &ttl
	create(t, gone)
	g.Eventually(func() bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(gone), &metav1alpha1.WorkflowProcess{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
}

// A chunk that fails does not lose the chunks before it in the same reconcile: their
// cursor and progress are in status while the API keeps failing, and the job then
// resumes from that cursor and ends with the right totals.
func TestBuiltinKeepsProgressWhenAChunkFails(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("k")
	group := p + ".sandbar.dev"
	bookClass(t, p)
	const n = 150 // a chunk of 100, then 50
	for i := range n {
		g.Expect(k8s.Create(ctx, instance(group, "Book", fmt.Sprintf("b%03d", i), map[string]any{"title": "t"}))).To(Succeed())
	}

	// The first list of the class's instances answers; the next ones fail until released.
	var listed atomic.Int64
	var failing atomic.Bool
	failing.Store(true)
	hook := func(list client.ObjectList) error {
		if u, ok := list.(*unstructured.UnstructuredList); !ok || u.GroupVersionKind().Group != group {
			return nil
		}
		if failing.Load() && listed.Load() > 0 {
			return apierrors.NewServiceUnavailable("the API server is unavailable (test)")
		}
		listed.Add(1)
		return nil
	}
	listHook.Store(&hook)
	t.Cleanup(func() { listHook.Store(nil) })

	validate := process(uniq("v"), builtin.Validate, map[string]any{"class": p + "/Book"})
	create(t, validate)
	st := waitProcess(t, validate, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Progress).NotTo(BeNil(), "no progress in status")
		g.Expect(st.Progress.Done).To(Equal(int64(100)))
	})
	g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseRunning))
	g.Expect(st.Cursor).NotTo(BeEmpty())
	var res map[string]any
	g.Expect(json.Unmarshal(st.Result.Raw, &res)).To(Succeed())
	g.Expect(res).To(HaveKeyWithValue("checked", 100.0))

	failing.Store(false)
	st = waitProcess(t, validate, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded), st.StatusMessage)
	})
	res = map[string]any{}
	g.Expect(json.Unmarshal(st.Result.Raw, &res)).To(Succeed())
	g.Expect(res).To(And(HaveKeyWithValue("checked", float64(n)), HaveKeyWithValue("invalid", 0.0)))
	g.Expect(st.StatusMessage).To(ContainSubstring("checked 150 instances, 0 invalid"))
	g.Expect(listed.Load()).To(Equal(int64(2)), "the job resumes from its cursor: one list before the failures, one after")
}

// A built-in process runs with the rights of the account that owns it, never the
// manager's, and only as the MCP server started it: one created with kubectl fails
// at once, even naming an account, one that names no account fails, and one whose
// account's Kubernetes identity may not read the class fails with what it may not.
func TestBuiltinRunsOnlyAsItsAccount(t *testing.T) {
	g := NewWithT(t)
	p := uniq("o")
	bookClass(t, p)

	planted := unsealed(uniq("e"), builtin.Export, map[string]any{"class": p + "/Book"})
	create(t, planted)
	st := waitProcess(t, planted, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseFailed))
	})
	g.Expect(st.StatusMessage).To(ContainSubstring("runs only as the Sandbar MCP server started it"))
	g.Expect(st.Result).To(BeNil(), "nothing was read")

	orphan := unsealed(uniq("e"), builtin.Export, map[string]any{"class": p + "/Book"})
	orphan.Spec.Owner = ""
	wf.NewIssuer(tokenKey).Issue(orphan)
	create(t, orphan)
	st = waitProcess(t, orphan, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseFailed))
	})
	g.Expect(st.StatusMessage).To(ContainSubstring("refused: the built-in workflow sandbar.export runs only for an active Sandbar account"))
	g.Expect(st.Result).To(BeNil(), "nothing was read")

	// An account whose Kubernetes ServiceAccount has no RoleBinding.
	name := uniq("n")
	acct := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: name, ServiceAccountName: "nobody",
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "x"}}}
	create(t, acct)
	g.Eventually(func() bool { return store.Load().Accounts[name] != nil }).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	unbound := unsealed(uniq("e"), builtin.Export, map[string]any{"class": p + "/Book"})
	unbound.Spec.Owner = name
	wf.NewIssuer(tokenKey).Issue(unbound)
	create(t, unbound)
	st = waitProcess(t, unbound, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseFailed))
	})
	g.Expect(st.StatusMessage).To(ContainSubstring(`forbidden: ` + "books." + p + `.sandbar.dev is forbidden: User "system:serviceaccount:default:nobody" cannot list resource "books"`))
}

// A finished process that names no TTL of its own is deleted once the manager's
// default TTL (an hour in this suite) has passed since it ended. One still running,
// one that has just ended and one whose own TTL is longer stay.
func TestFinishedProcessesExpireAfterTheDefaultTTL(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := uniq("expiring")
	wd := workflow(name, []metav1alpha1.WorkflowState{{Name: "open"}, {Name: "done", Terminal: metav1alpha1.TerminalSuccess}},
		metav1alpha1.WorkflowTransition{Name: "finish", From: []string{"open"}, To: "done"})
	create(t, wd)
	running, expired, recent, ownTTL := process(uniq("p"), name, nil), process(uniq("p"), name, nil),
		process(uniq("p"), name, nil), process(uniq("p"), name, nil)
	day := int64(24 * 60 * 60)
	ownTTL.Spec.TTLSecondsAfterFinished = &day
	create(t, running, expired, recent, ownTTL)
	for _, p := range []*metav1alpha1.WorkflowProcess{running, expired, recent, ownTTL} {
		waitProcess(t, p, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) { g.Expect(st.State).To(Equal("open")) })
	}

	// Ended two hours ago, as a client that moved it then would have written it.
	w := catalog.ValidateWorkflow(wd, nil)
	finish := func(p *metav1alpha1.WorkflowProcess, at metav1.Time) {
		g.Eventually(func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			if err := wf.Transition(w, &p.Status, "finish", "default/claude", "", at); err != nil {
				return err
			}
			return k8s.Status().Update(ctx, p)
		}).WithTimeout(timeout).Should(Succeed())
	}
	longAgo := metav1.NewTime(time.Now().Add(-2 * time.Hour))
	finish(ownTTL, longAgo)
	finish(recent, metav1.Now())
	finish(expired, longAgo)

	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(expired), &metav1alpha1.WorkflowProcess{}))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the expired process is deleted")
	for _, p := range []*metav1alpha1.WorkflowProcess{running, recent, ownTTL} {
		var got metav1alpha1.WorkflowProcess
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), &got)).To(Succeed(), "%s stays", p.Name)
	}
	var got metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(running), &got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(metav1alpha1.PhaseRunning))
}

// The validation workflow reports an instance whose ref slot names an instance that
// does not exist (one deleted after it was referred to, or written with kubectl).
func TestBuiltinValidateReportsDanglingReferences(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("r")
	group := p + ".sandbar.dev"
	bookClass(t, p)
	ref := property(p+".book", metav1alpha1.RangeRef)
	ref.Spec.Target = p + ".book"
	loan := class(p+".loan", p, "Loan", nil, slot(ref.Name, true))
	create(t, ref, loan)
	waitClassCondition(t, loan.Name, metav1alpha1.ConditionReady, metav1.ConditionTrue, metav1alpha1.ReasonReady)
	g.Eventually(func() bool { return store.Load().FindClass(p+"/Loan") != nil }).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())

	g.Expect(k8s.Create(ctx, instance(group, "Book", "dune", map[string]any{"title": "dune"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, instance(group, "Loan", "kept", map[string]any{"book": "dune"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, instance(group, "Loan", "lost", map[string]any{"book": "emma"}))).To(Succeed())

	validate := process(uniq("v"), builtin.Validate, map[string]any{"class": p + "/Loan"})
	create(t, validate)
	st := waitProcess(t, validate, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded), st.StatusMessage)
	})
	var res map[string]any
	g.Expect(json.Unmarshal(st.Result.Raw, &res)).To(Succeed())
	g.Expect(res["checked"]).To(Equal(2.0))
	g.Expect(res["invalid"]).To(Equal(1.0))
	g.Expect(res["danglingRefs"]).To(Equal(1.0))
	g.Expect(res["failures"]).To(ConsistOf(And(HaveKeyWithValue("name", "lost"),
		HaveKeyWithValue("problems", ConsistOf(ContainSubstring(`slot "book" refers to the `+p+`/Book "emma" in namespace "default", which does not exist`))))))
	g.Expect(st.StatusMessage).To(ContainSubstring("checked 2 instances, 1 invalid (1 references to missing instances)"))
}

// An import that takes several reconciles goes from chunk to chunk without redoing
// one: each reconcile starts from the status the last one wrote, so no status write
// is refused as a conflict (the manager would log each as a reconciler error, and
// the refused chunk's work would be done again).
func TestALongImportWritesNoConflicts(t *testing.T) {
	g := NewWithT(t)
	p := uniq("w")
	bookClass(t, p)
	var items []any
	for i := range 1500 {
		n := fmt.Sprintf("b%04d", i)
		items = append(items, map[string]any{"class": p + "/Book", "name": n, "attributes": map[string]any{"title": n}})
	}
	before := reconcileErrors(t, "workflowprocess")
	start := time.Now()
	imp := process(uniq("i"), builtin.Import, map[string]any{"bundle": map[string]any{"items": items}})
	create(t, imp)
	// 1,500 creates take about 9 s on a quiet 2-core machine, and over 20 s while other
	// packages' tests share its cores.
	st := waitProcessWithin(t, 2*time.Minute, imp, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded), st.StatusMessage)
	})
	t.Logf("imported %d items in %s", len(items), time.Since(start).Round(time.Millisecond))
	var res map[string]any
	g.Expect(json.Unmarshal(st.Result.Raw, &res)).To(Succeed())
	g.Expect(res).To(And(HaveKeyWithValue("created", 1500.0), HaveKeyWithValue("failed", 0.0)))
	g.Expect(reconcileErrors(t, "workflowprocess")-before).To(BeZero(), "reconciler errors during the import")
}

// reconcileErrors is controller-runtime's count of a controller's reconciler errors.
func reconcileErrors(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
