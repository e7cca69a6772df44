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
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// An export done again from its start after its status writes were lost (the
// manager stopped after storing chunks, before recording them) stores no item twice
// and loses none: the chunks it writes again are the ones already stored, found by
// their digest, and the status lists each once.
func TestExportDoneAgainAfterLostStatusWritesStoresNoItemTwice(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("x")
	bookClass(t, p)
	const n = 1100 // pages of 500, 500 and 100
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				g.Expect(k8s.Create(ctx, instance(p+".sandbar.dev", "Book", fmt.Sprintf("b%04d", i), map[string]any{"title": "t"}))).To(Succeed())
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()

	export := process(uniq("e"), builtin.Export, map[string]any{"class": p + "/Book"})
	create(t, export)
	st := waitProcess(t, export, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded), st.StatusMessage)
	})
	first := builtin.StoredOf(st.Result.Raw)
	g.Expect(first).NotTo(BeNil())
	g.Expect(first.Count()).To(Equal(n))
	chunks := func() []corev1.Secret {
		var list corev1.SecretList
		g.Expect(k8s.List(ctx, &list, client.InNamespace("default"), client.MatchingLabels{builtin.LabelResultOf: export.Name})).To(Succeed())
		return list.Items
	}
	g.Expect(chunks()).To(HaveLen(len(first.Chunks)))

	// The status as it was before the first chunk: running, nothing recorded.
	var lost metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(export), &lost)).To(Succeed())
	lost.Status.Phase, lost.Status.State, lost.Status.StatusMessage = metav1alpha1.PhaseRunning, "running", "in running"
	lost.Status.Cursor, lost.Status.Result, lost.Status.Progress, lost.Status.CompletionTime = "", nil, nil, nil
	lost.Status.History = lost.Status.History[:1]
	g.Expect(k8s.Status().Update(ctx, &lost)).To(Succeed())

	st = waitProcess(t, export, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded), st.StatusMessage)
		g.Expect(st.History).To(HaveLen(2))
	})
	again := builtin.StoredOf(st.Result.Raw)
	g.Expect(again).To(Equal(first), "the same chunks, each listed once")
	g.Expect(chunks()).To(HaveLen(len(first.Chunks)), "no chunk stored twice")
	names := map[string]bool{}
	for i := range again.Chunks {
		items, err := builtin.ReadChunk(ctx, k8s, builtin.ProcessRef{Namespace: lost.Namespace, Name: lost.Name, UID: lost.UID}, again, i)
		g.Expect(err).NotTo(HaveOccurred())
		for _, raw := range items {
			var item struct{ Name string }
			g.Expect(json.Unmarshal(raw, &item)).To(Succeed())
			if names[item.Name] {
				t.Fatalf("%s stored twice", item.Name)
			}
			names[item.Name] = true
		}
	}
	g.Expect(names).To(HaveLen(n))
}

// An export holds no more than its process's result budget: past it the export
// fails, says why, and keeps the pages it stored within the budget, listed in its
// status and counted there as its account's limit counts them.
func TestExportStopsAtItsResultBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := uniq("x")
	bookClass(t, p)
	const n = 600 // pages of 500 and 100
	for i := range n {
		g.Expect(k8s.Create(ctx, instance(p+".sandbar.dev", "Book", fmt.Sprintf("b%04d", i), map[string]any{"title": fmt.Sprintf("t%d", i)}))).To(Succeed())
	}
	held := func(st metav1alpha1.WorkflowProcessStatus) int64 {
		stored := builtin.StoredOf(st.Result.Raw)
		g.Expect(stored).NotTo(BeNil())
		return int64(len(st.Result.Raw)) + stored.StoredBytes
	}

	// Without a budget the export holds all it stores.
	whole := process(uniq("e"), builtin.Export, map[string]any{"class": p + "/Book"})
	create(t, whole)
	all := held(waitProcess(t, whole, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseSucceeded), st.StatusMessage)
	}))

	// A byte less, and the second page does not fit.
	short := process(uniq("e"), builtin.Export, map[string]any{"class": p + "/Book"})
	short.Spec.ResultBudget = all - 1
	create(t, short)
	st := waitProcess(t, short, func(g Gomega, st metav1alpha1.WorkflowProcessStatus) {
		g.Expect(st.Phase).To(Or(Equal(metav1alpha1.PhaseFailed), Equal(metav1alpha1.PhaseSucceeded)))
	})
	g.Expect(st.Phase).To(Equal(metav1alpha1.PhaseFailed), st.StatusMessage)
	g.Expect(st.StatusMessage).To(MatchRegexp(`the export would hold more than the [0-9.]+ (KiB|bytes) its account had room for when it started ` +
		`\(--max-process-bytes-per-account\): [0-9.]+ (KiB|bytes) so far; nothing more was stored`))
	g.Expect(builtin.StoredOf(st.Result.Raw).Count()).To(Equal(500), "the first page, stored within the budget, is kept")
	g.Expect(held(st)).To(BeNumerically("<=", short.Spec.ResultBudget))
	var chunks corev1.SecretList
	g.Expect(k8s.List(ctx, &chunks, client.InNamespace("default"), client.MatchingLabels{builtin.LabelResultOf: short.Name})).To(Succeed())
	g.Expect(chunks.Items).To(HaveLen(len(builtin.StoredOf(st.Result.Raw).Chunks)), "nothing stored past the budget")
}
