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
