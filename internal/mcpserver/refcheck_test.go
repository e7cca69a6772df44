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

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// A ref slot that names no existing instance is refused on create (the operational
// verb, its dry run and the class's own tool) and on update, with the missing
// target named; nothing is written.
func TestDanglingReferenceIsRefusedOnCreateAndUpdate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	zorpClass(t, "RefDock", metav1alpha1.PropertySpec{Range: metav1alpha1.RangeRef, Target: "zorp.spaceboot", Field: "boot"})
	cs := connect(t, mcpURL, token, nil)
	g.Eventually(func() bool { _, ok := listTools(t, cs)["sandbar_class_zorp_RefDock"]; return ok }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	missing := unique("no-such-boot")
	dock := func(name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("RefDock")
		return u, k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, u)
	}
	refusal := `slot "boot" refers to the zorp/SpaceBoot "` + missing + `" in namespace "default", which does not exist`

	for _, call := range []struct {
		tool string
		args func(name string) map[string]any
	}{
		{"sandbar_entity_create", func(name string) map[string]any {
			return map[string]any{"class": "zorp/RefDock", "attributes": map[string]any{"boot": missing}, "metadata": map[string]any{"name": name}}
		}},
		{"sandbar_entity_validate", func(name string) map[string]any {
			return map[string]any{"class": "zorp/RefDock", "attributes": map[string]any{"boot": missing}, "metadata": map[string]any{"name": name}}
		}},
		{"sandbar_class_zorp_RefDock", func(name string) map[string]any {
			return map[string]any{"boot": missing, "metadata": map[string]any{"name": name}}
		}},
	} {
		name := unique("dangling")
		res := callTool(t, cs, call.tool, call.args(name))
		g.Expect(res.IsError).To(BeTrue(), "%s: %s", call.tool, text(res))
		g.Expect(text(res)).To(And(ContainSubstring(refusal), ContainSubstring("sandbar_entity_find")), call.tool)
		_, err := dock(name)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s wrote nothing: %v", call.tool, err)
	}

	// An existing target is accepted; an update to a missing one is refused and
	// leaves the instance as it was.
	target := unique("real-boot")
	newBoot(t, "default", target, map[string]any{"name": "Real"})
	name := unique("docked")
	res := callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/RefDock",
		"attributes": map[string]any{"boot": target}, "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	t.Cleanup(func() {
		if u, err := dock(name); err == nil {
			_ = k8s.Delete(context.Background(), u)
		}
	})
	before, err := dock(name)
	g.Expect(err).NotTo(HaveOccurred())
	res = callTool(t, cs, "sandbar_entity_update", map[string]any{"class": "zorp/RefDock", "name": name,
		"attributes": map[string]any{"boot": missing}})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(refusal))
	after, err := dock(name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.GetResourceVersion()).To(Equal(before.GetResourceVersion()), "the update wrote nothing")
	g.Expect(after.Object["spec"]).To(HaveKeyWithValue("boot", target))
}

// workflow.start-process refuses a subject that is not an instance in the account's
// namespace, where its process lives, with the words a dangling reference gets, and
// starts nothing: an instance of the same name in another namespace, which the
// account's Kubernetes identity may not read, does not count. A subject that exists
// starts the process.
func TestStartProcessOfAMissingSubjectIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tn := newTenant(t, metav1alpha1.Permissions{})
	cs := connect(t, mcpURL, tn.token, nil)
	order := func(ns, name string) {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"number": "ORD-1", "customer": "someone"}}}
		u.SetAPIVersion("order.sandbar.dev/v1")
		u.SetKind("Order")
		u.SetNamespace(ns)
		u.SetName(name)
		g.Expect(k8s.Create(ctx, u)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	}
	processes := func() []metav1alpha1.WorkflowProcess {
		var list metav1alpha1.WorkflowProcessList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(tn.namespace))).To(Succeed())
		return list.Items
	}
	start := func(class, name string) string {
		res := callTool(t, cs, "sandbar_workflow_start-process", map[string]any{"workflow": "order.fulfillment",
			"subject": map[string]any{"class": class, "name": name}})
		if res.IsError {
			return text(res)
		}
		return ""
	}

	missing := unique("no-such-order")
	g.Expect(start("order/Order", missing)).To(And(
		ContainSubstring(`subject refers to the order/Order "`+missing+`" in namespace "`+tn.namespace+`", which does not exist`),
		ContainSubstring("Nothing was started"), ContainSubstring("sandbar_entity_find")))
	theirs := unique("their-order")
	order("default", theirs)
	g.Expect(start("order.order", theirs)).To(ContainSubstring(`subject refers to the order/Order "` + theirs + `" in namespace "` + tn.namespace + `", which does not exist`))
	g.Expect(start("order/NoSuchKind", missing)).To(ContainSubstring(`unknown class "order/NoSuchKind"`))
	g.Expect(processes()).To(BeEmpty(), "nothing was started")

	mine := unique("my-order")
	order(tn.namespace, mine)
	g.Expect(start("order/Order", mine)).To(BeEmpty())
	started := processes()
	g.Expect(started).To(HaveLen(1))
	g.Expect(started[0].Spec.Subject).To(Equal(&metav1alpha1.SubjectRef{Class: "order/Order", Name: mine}))
}
