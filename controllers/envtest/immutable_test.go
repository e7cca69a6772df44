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
	"path/filepath"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// processPolicyIn applies the admission policy on processes that config/admission
// ships, bound to namespace ns only, and removes it when the test ends.
func processPolicyIn(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	objs, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "admission", "builtin-processes.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	policy, binding := objs[0], objs[1]
	name := uniq("processes")
	policy.SetName(name)
	binding.SetName(name)
	g.Expect(unstructured.SetNestedField(binding.Object, name, "spec", "policyName")).To(Succeed())
	g.Expect(unstructured.SetNestedStringMap(binding.Object, map[string]string{corev1.LabelMetadataName: ns},
		"spec", "matchResources", "namespaceSelector", "matchLabels")).To(Succeed())
	for _, o := range []*unstructured.Unstructured{policy, binding} {
		g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
}

// updateSpec changes a process with mutate and writes it, again on a conflict (the
// controller writes the status meanwhile), and answers the API server's verdict.
func updateSpec(key client.ObjectKey, mutate func(*metav1alpha1.WorkflowProcess)) error {
	var err error
	for range 50 {
		var p metav1alpha1.WorkflowProcess
		if err = k8s.Get(context.Background(), key, &p); err != nil {
			return err
		}
		mutate(&p)
		if err = k8s.Update(context.Background(), &p); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// A tenant allowed to update processes in its namespace (the instance editor's role)
// cannot make another account's export run on other input, about another subject,
// for another owner or within another budget: the API server refuses every change to
// what a process runs, for whom and within what, adding or removing the field
// included, whoever asks (the CRD's rules; the input, which they cannot see, by the
// shipped admission policy). A cancel request, a TTL, a label and status updates
// still go through.
func TestProcessSpecKeepsWhatItRunsAndForWhom(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := uniq("immutable")
	g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	processPolicyIn(t, ns)

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

	export := process(uniq("e"), builtin.Export, map[string]any{"class": "zorp/SpaceBoot", "namespace": ns})
	export.Namespace = ns
	export.Spec.Subject = &metav1alpha1.SubjectRef{Class: "zorp/SpaceBoot", Name: "mine"}
	export.Spec.ResultBudget = 1 << 20
	bare := process(uniq("p"), uniq("wf"), nil)
	bare.Namespace = ns
	bare.Spec.Owner = ""
	create(t, export, bare)

	for _, tc := range []struct {
		name    string
		of      *metav1alpha1.WorkflowProcess
		mutate  func(*metav1alpha1.WorkflowProcess)
		message string
	}{
		{"another input", export, func(p *metav1alpha1.WorkflowProcess) {
			p.Spec.Input = rawJSON(`{"class":"zorp/SpaceBoot","namespace":"kube-system"}`)
		}, "input is immutable"},
		{"input removed", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Input = nil }, "input is immutable"},
		{"input added", bare, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Input = rawJSON(`{"class":"zorp/SpaceBoot"}`) }, "input is immutable"},
		{"another subject", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Subject.Name = "theirs" }, "subject is immutable"},
		{"subject of another class", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Subject.Class = "order/Order" }, "subject is immutable"},
		{"subject removed", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Subject = nil }, "subject is immutable"},
		{"subject added", bare, func(p *metav1alpha1.WorkflowProcess) {
			p.Spec.Subject = &metav1alpha1.SubjectRef{Class: "zorp/SpaceBoot", Name: "theirs"}
		}, "subject is immutable"},
		{"another owner", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Owner = "mallory" }, "owner is immutable"},
		{"owner removed", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Owner = "" }, "owner is immutable"},
		{"owner added", bare, func(p *metav1alpha1.WorkflowProcess) { p.Spec.Owner = "mallory" }, "owner is immutable"},
		{"a larger budget", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.ResultBudget = 1 << 30 }, "resultBudget is immutable"},
		{"budget removed", export, func(p *metav1alpha1.WorkflowProcess) { p.Spec.ResultBudget = 0 }, "resultBudget is immutable"},
		{"budget added", bare, func(p *metav1alpha1.WorkflowProcess) { p.Spec.ResultBudget = 1 << 30 }, "resultBudget is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := updateSpec(client.ObjectKeyFromObject(tc.of), tc.mutate)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err).To(MatchError(ContainSubstring(tc.message)))
		})
	}

	// What may change still does.
	ttl := int64(60)
	g.Expect(updateSpec(client.ObjectKeyFromObject(export), func(p *metav1alpha1.WorkflowProcess) {
		p.Spec.CancelRequest = &metav1alpha1.CancelRequest{Reason: "not needed", RequestedBy: ns + "/claude"}
		p.Spec.TTLSecondsAfterFinished = &ttl
		p.Labels = map[string]string{"team": "a"}
	})).To(Succeed())
	g.Expect(updateSpec(client.ObjectKeyFromObject(bare), func(p *metav1alpha1.WorkflowProcess) {
		p.Spec.CancelRequest = &metav1alpha1.CancelRequest{}
	})).To(Succeed())
	g.Eventually(func() error {
		var p metav1alpha1.WorkflowProcess
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bare), &p); err != nil {
			return err
		}
		p.Status.StatusMessage = "moved by hand"
		return k8s.Status().Update(ctx, &p)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	var got metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(export), &got)).To(Succeed())
	g.Expect(got.Spec.Input.Raw).To(MatchJSON(export.Spec.Input.Raw))
	g.Expect(got.Spec.Subject).To(Equal(export.Spec.Subject))
	g.Expect(got.Spec.Owner).To(Equal("claude"))
	g.Expect(got.Spec.ResultBudget).To(Equal(export.Spec.ResultBudget))
	g.Expect(got.Spec.CancelRequest).NotTo(BeNil())
	g.Expect(got.Spec.TTLSecondsAfterFinished).To(HaveValue(Equal(ttl)))
}
