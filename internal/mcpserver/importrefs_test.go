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
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// An imported item whose reference names an instance that neither exists nor is in
// the bundle is refused with the missing target named, and nothing of it is
// written; the other items, including one that refers to an item of the same
// bundle, are imported.
func TestImportOfADanglingReferenceIsRefusedPerItem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	kind := "ImpDock" + strings.ToUpper(rand.String(4))
	zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeRef, Target: "zorp.spaceboot", Field: "boot"})
	existing, bundled, missing := unique("boot"), unique("bundled-boot"), unique("no-such-boot")
	newBoot(t, "default", existing, map[string]any{"name": "Real"})
	docks := map[string]string{unique("dock-dangling"): missing, unique("dock-existing"): existing, unique("dock-bundled"): bundled}
	items := []any{}
	for dock, boot := range docks {
		items = append(items, map[string]any{"class": "zorp/" + kind, "name": dock, "attributes": map[string]any{"boot": boot}})
	}
	items = append(items, map[string]any{"class": "zorp/SpaceBoot", "name": bundled, "attributes": map[string]any{"name": "Bundled"}})
	t.Cleanup(func() {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("SpaceBoot")
		u.SetNamespace("default")
		u.SetName(bundled)
		_ = k8s.Delete(context.Background(), u)
	})

	cs := connect(t, mcpURL, token, nil)
	g.Eventually(func() bool { _, ok := store.Load().Classes["zorp."+strings.ToLower(kind)]; return ok }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	res := callTool(t, cs, "sandbar_project_import", map[string]any{"bundle": map[string]any{"items": items}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	id := res.StructuredContent.(map[string]any)["taskId"].(string)
	res = callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": id, "waitSeconds": 30})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var out struct {
		Result struct {
			Created, Failed float64
			Errors          []map[string]any
		}
	}
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed())
	g.Expect(out.Result.Created).To(Equal(3.0), text(res))
	g.Expect(out.Result.Failed).To(Equal(1.0), text(res))
	g.Expect(out.Result.Errors).To(ConsistOf(HaveKeyWithValue("error", ContainSubstring(
		`refused, nothing of it was written: slot "boot" refers to the zorp/SpaceBoot "`+missing+
			`" in namespace "default", which does not exist (nor is it an item of the bundle)`))))

	for dock := range docks {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind(kind)
		err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: dock}, u)
		if docks[dock] == missing {
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			g.Expect(err).To(HaveOccurred(), "the dangling item was not written")
		} else {
			g.Expect(err).NotTo(HaveOccurred(), dock)
		}
	}
}
