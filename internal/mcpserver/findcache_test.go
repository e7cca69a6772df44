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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/instances"
)

// verdictTTL is how long the manager keeps the answer of a SubjectAccessReview: the
// bound on how long a removed RoleBinding still lets cached finds through
// (docs/performance.md).
const verdictTTL = 5 * time.Second

// findLists is the manager's count of finds' lists from source.
func findLists(t testing.TB, source string) float64 {
	return counter(t, instances.ListsMetric, "source", source)
}

// A find of an identity that may list a class in a namespace is read from the
// manager's cache after one authorization check: the API server counts no list of
// the class for it. Once the RoleBinding that allowed it is removed, finds are
// refused in the API server's words within the check's lifetime.
func TestACachedFindIsRefusedOnceItsRoleBindingIsRemoved(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, account := unique("readers"), unique("reader")
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-viewer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		binding,
		&metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: account, ServiceAccountName: "agent",
				APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: account + "-key"}, Permissions: metav1alpha1.Permissions{ReadOnly: true}}},
	}
	for _, o := range objs {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), objs[0]) })
	tok := issueWhenReady(t, ns, account)
	name := unique("cached-boot")
	newBoot(t, ns, name, map[string]any{"name": "Cached"})

	cs := connect(t, mcpURL, tok, nil)
	find := func() *mcp.CallToolResult {
		return callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": ns})
	}
	g.Eventually(func() string { return text(find()) }).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring(name),
		"the cache has seen the instance")
	lists, cached := apiRequests(t, "spaceboots", "LIST"), findLists(t, instances.Cached)
	for range 20 {
		res := find()
		g.Expect(res.IsError).To(BeFalse(), text(res))
		g.Expect(text(res)).To(ContainSubstring(name))
	}
	g.Expect(apiRequests(t, "spaceboots", "LIST")).To(Equal(lists), "cached finds list nothing at the API server")
	g.Expect(findLists(t, instances.Cached)).To(BeNumerically(">=", cached+20), "the finds were read from the cache")

	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	removed := time.Now()
	g.Eventually(func() string { return text(find()) }).WithTimeout(verdictTTL+5*time.Second).WithPolling(poll).Should(And(
		HavePrefix("forbidden: "), ContainSubstring(`User "system:serviceaccount:`+ns+`:agent" cannot list resource "spaceboots"`)),
		"a removed RoleBinding stops cached finds within the check's lifetime (%s)", verdictTTL)
	t.Logf("finds were refused %s after the RoleBinding was removed", time.Since(removed).Round(100*time.Millisecond))
}

// A continue token of a page read from the cache may be handed to a replica that
// lists the class through the API server (it has not cached it yet): the live pages
// go on after the last instance answered, and no instance is answered twice.
func TestAPageReadFromTheCacheIsContinuedByALiveList(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := bytes.Repeat([]byte("k"), 32)
	cachedURL := serve(t, mcpserver.Options{TokenKey: key})
	live := managerCluster
	live.Instances = nil
	liveURL, err := startServerWith(ctx, store, mcpserver.Options{TokenKey: key}, live)
	g.Expect(err).NotTo(HaveOccurred())

	id := rand.String(6)
	var want []string
	for i := range 45 {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "Paged"}}}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("SpaceBoot")
		u.SetNamespace("default")
		u.SetName(fmt.Sprintf("paged-%s-%02d", id, i))
		u.SetLabels(map[string]string{"paged": id})
		g.Expect(k8s.Create(ctx, u)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
		want = append(want, u.GetName())
	}
	type page struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
		Continue string `json:"continue"`
	}
	find := func(cs *mcp.ClientSession, limit int, cont string) page {
		args := map[string]any{"class": "zorp/SpaceBoot", "labelSelector": "paged=" + id, "limit": limit}
		if cont != "" {
			args["continue"] = cont
		}
		res := callTool(t, cs, "sandbar_entity_find", args)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		var p page
		g.Expect(json.Unmarshal([]byte(text(res)), &p)).To(Succeed())
		return p
	}
	cachedCS, liveCS := connect(t, cachedURL, token, nil), connect(t, liveURL, token, nil)
	g.Eventually(func() int { return len(find(cachedCS, 100, "").Items) }).WithTimeout(timeout).WithPolling(poll).Should(Equal(45),
		"the cache has every instance")
	before := findLists(t, instances.Cached)
	first := find(cachedCS, 30, "")
	g.Expect(findLists(t, instances.Cached)).To(Equal(before+1), "the first page was read from the cache")
	g.Expect(first.Items).To(HaveLen(30))
	var got []string
	for _, it := range first.Items {
		got = append(got, it.Name)
	}
	for cont := first.Continue; cont != ""; {
		p := find(liveCS, 10, cont)
		for _, it := range p.Items {
			got = append(got, it.Name)
		}
		cont = p.Continue
	}
	g.Expect(got).To(Equal(want), "every instance once, in name order")
}
