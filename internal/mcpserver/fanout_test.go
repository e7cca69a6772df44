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

// The authorization calls one MCP request makes: a bounded number, whatever the
// number of instances, URIs and namespaces it touches, and never a way around RBAC.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// maxReviews is the most SubjectAccessReviews one MCP request may ask
// (docs/tenancy.md, "Tenancy").
const maxReviews = 32

// reviewsPerRequest is the manager's histogram of the SubjectAccessReviews each MCP
// request asked.
const reviewsPerRequest = "sandbar_mcp_subjectaccessreviews_per_request"

// reviewsAsked is the API server's own count of the SubjectAccessReviews created so
// far: what the manager asked, whatever it counts itself.
func reviewsAsked(t testing.TB) float64 { return apiRequests(t, "subjectaccessreviews", "POST") }

// apiRequests is the API server's count of the requests of a verb on a resource so far.
func apiRequests(t testing.TB, resource, verb string) float64 {
	t.Helper()
	n, err := testenv.APIRequests(context.Background(), kube.Discovery().RESTClient(), func(labels string) bool {
		return strings.Contains(labels, `resource="`+resource+`"`) && strings.Contains(labels, `verb="`+verb+`"`)
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return n
}

// perRequest reads the manager's histogram of reviews per request for an MCP method:
// how many requests it observed, and how many of them asked at most bound.
func perRequest(t testing.TB, method string, bound float64) (count, within uint64) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != reviewsPerRequest {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "method" || l.GetValue() != method {
					continue
				}
				h := m.GetHistogram()
				count = h.GetSampleCount()
				for _, b := range h.GetBucket() {
					if b.GetUpperBound() == bound {
						within = b.GetCumulativeCount()
					}
				}
			}
		}
	}
	return count, within
}

// readerTenant is an MCP account of a namespace of its own with every namespace in
// its permissions (as every person signed in with OAuth has), acting as a Kubernetes
// ServiceAccount that may read instances cluster-wide (wide) or in the given
// namespaces only.
func readerTenant(t testing.TB, wide bool, namespaces ...string) tenant {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns, name := unique("reader"), unique("reader")
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}
	viewer := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-viewer"}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: name, ServiceAccountName: "agent",
				APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: name + "-key"},
				Permissions:     metav1alpha1.Permissions{Namespaces: []string{"*"}}}},
	}
	if wide {
		objs = append(objs, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-viewer"}, RoleRef: viewer, Subjects: subject})
	}
	for _, n := range namespaces {
		objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: ns + "-viewer"}, RoleRef: viewer, Subjects: subject})
	}
	for _, o := range objs {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() {
		for _, o := range objs[2:] {
			_ = k8s.Delete(context.Background(), o)
		}
		_ = k8s.Delete(context.Background(), objs[0])
	})
	tok, err := apikey.Issue(ctx, k8s, ns, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool {
		a := store.Load().Accounts[name]
		return a != nil && a.Ready
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	return tenant{namespace: ns, token: tok}
}

// namespaces creates n namespaces, named after prefix.
func namespaces(t testing.TB, prefix string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d", prefix, i)}}
		NewWithT(t).Expect(k8s.Create(context.Background(), ns)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
		out = append(out, ns.Name)
	}
	return out
}

// walk pages through resources/list and returns the URIs listed, asserting that no
// page asked more than maxReviews SubjectAccessReviews; with it, the reviews of the
// whole walk and its pages.
func walk(t *testing.T, cs *mcp.ClientSession) (uris map[string]int, reviews float64, pages int) {
	t.Helper()
	g := NewWithT(t)
	uris = map[string]int{}
	cursor := ""
	for {
		before := reviewsAsked(t)
		res, err := cs.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: cursor})
		g.Expect(err).NotTo(HaveOccurred())
		asked := reviewsAsked(t) - before
		g.Expect(asked).To(BeNumerically("<=", maxReviews), "page %d asked %v SubjectAccessReviews", pages, asked)
		reviews += asked
		pages++
		for _, r := range res.Resources {
			uris[r.URI]++
		}
		if cursor = res.NextCursor; cursor == "" {
			return uris, reviews, pages
		}
		g.Expect(pages).To(BeNumerically("<", 1000), "the walk ends")
	}
}

// wearersIn are the URIs of the wearers of uris that are in one of namespaces.
func wearersIn(uris map[string]int, namespaces []string) map[string]int {
	out := map[string]int{}
	for uri, n := range uris {
		ref, err := resources.ParseURI(uri)
		if err == nil && ref.Kind == "Wearer" && ref.Namespace != "" && slices.Contains(namespaces, ref.Namespace) {
			out[uri] = n
		}
	}
	return out
}

// resources/list by an account with every namespace ("*"), over instances in 40
// namespaces: each page asks at most maxReviews SubjectAccessReviews (one for the
// class at the cluster scope when the account may list it there), and the account
// sees exactly the instances RBAC lets it list, each once.
func TestResourcesListOfEveryNamespaceAsksBoundedReviews(t *testing.T) {
	g := NewWithT(t)
	spread := namespaces(t, unique("fan"), 40)
	want := map[string]int{}
	for _, ns := range spread {
		newWearer(t, ns, "w", nil)
		want[resources.InstanceURI("zorp", "Wearer", ns, "w")] = 1
	}
	victim := unique("fan-victim")
	newWearer(t, "default", victim, nil)
	listedBefore, _ := perRequest(t, "resources/list", maxReviews)

	// An account that may list wearers cluster-wide: one review a class.
	wide := readerTenant(t, true)
	uris, reviews, pages := walk(t, connect(t, mcpURL, wide.token, nil))
	g.Expect(wearersIn(uris, spread)).To(Equal(want), "every wearer of the 40 namespaces, once")
	g.Expect(uris).To(HaveKey(resources.InstanceURI("zorp", "Wearer", "default", victim)), "a cluster-wide grant reaches default too")
	servable := 0
	for _, c := range store.Load().Classes {
		if c.Servable() {
			servable++
		}
	}
	g.Expect(reviews).To(BeNumerically("<=", servable), "at most one review a class, over %d pages", pages)
	t.Logf("cluster-wide reader: %d pages, %v SubjectAccessReviews", pages, reviews)

	// An account that may list in 12 of them: it sees those, and nothing of the rest.
	allowed := spread[:12]
	some := readerTenant(t, false, allowed...)
	uris, reviews, pages = walk(t, connect(t, mcpURL, some.token, nil))
	t.Logf("reader of 12 namespaces: %d pages, %v SubjectAccessReviews", pages, reviews)
	mine := map[string]int{}
	for _, ns := range allowed {
		mine[resources.InstanceURI("zorp", "Wearer", ns, "w")] = 1
	}
	g.Expect(wearersIn(uris, spread)).To(Equal(mine), "the wearers of the namespaces RBAC allows, once each, and no other")
	for uri := range uris {
		ref, err := resources.ParseURI(uri)
		if err == nil && ref.IsInstance() {
			g.Expect(slices.Contains(allowed, ref.Namespace) || ref.Namespace == some.namespace).To(BeTrue(), "%s is not the account's to list", uri)
		}
	}

	// The manager's histogram saw every page, none over the bound.
	listed, within := perRequest(t, "resources/list", maxReviews)
	g.Expect(listed).To(BeNumerically(">", listedBefore))
	g.Expect(within).To(Equal(listed), "no resources/list asked more than %d reviews", maxReviews)
}

// listen opens subscriptions/listen (2026-07-28) for uris as the holder of tok, and
// returns the first message of its stream: the acknowledgement, or the error that
// refused it. It closes the stream then.
func listen(t *testing.T, tok string, uris []string) (ack map[string]any, refusal *rpcErrorBody) {
	t.Helper()
	raw := newStatelessRaw(t, mcpURL, tok, false)
	resp := raw.post("subscriptions/listen", "", map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": uris}})
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok && !strings.HasPrefix(sc.Text(), "{") {
			continue
		}
		if !ok {
			data = sc.Text()
		}
		var msg struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
			Error  *rpcErrorBody  `json:"error"`
		}
		NewWithT(t).Expect(json.Unmarshal([]byte(data), &msg)).To(Succeed())
		switch {
		case msg.Error != nil:
			return nil, msg.Error
		case msg.Method == "notifications/subscriptions/acknowledged":
			return msg.Params, nil
		}
	}
	t.Fatalf("subscriptions/listen: no acknowledgement and no error (HTTP %d)", resp.StatusCode)
	return nil, nil
}

type rpcErrorBody struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// subscriptions/listen of thousands of URIs asks a review per class and namespace,
// not per URI (one for the class, for an account that may read it cluster-wide), at
// most maxReviews in all; what RBAC forbids is refused, and a listen that would need
// more reviews than the bound is refused with what to do instead.
func TestSubscriptionsListenOfManyURIsAsksBoundedReviews(t *testing.T) {
	g := NewWithT(t)
	spread := namespaces(t, unique("listen"), 40)
	uris := func(nss []string, each int) []string {
		var out []string
		for _, ns := range nss {
			for i := range each {
				out = append(out, resources.InstanceURI("zorp", "Wearer", ns, fmt.Sprintf("w-%03d", i)))
			}
		}
		return out
	}

	listenedBefore, _ := perRequest(t, "subscriptions/listen", maxReviews)

	// 2,500 URIs, for an account that may read wearers cluster-wide.
	wide := readerTenant(t, true)
	before := reviewsAsked(t)
	ack, refusal := listen(t, wide.token, uris(spread[:25], 100))
	g.Expect(refusal).To(BeNil())
	g.Expect(ack["notifications"].(map[string]any)["resourceSubscriptions"]).To(HaveLen(2500))
	g.Expect(reviewsAsked(t)-before).To(BeNumerically("<=", 2), "2,500 URIs of one class, read cluster-wide")

	// 1,000 URIs in the 10 namespaces an account may read: a review a namespace.
	some := readerTenant(t, false, spread[:10]...)
	before = reviewsAsked(t)
	ack, refusal = listen(t, some.token, uris(spread[:10], 100))
	g.Expect(refusal).To(BeNil())
	g.Expect(ack["notifications"].(map[string]any)["resourceSubscriptions"]).To(HaveLen(1000))
	g.Expect(reviewsAsked(t)-before).To(BeNumerically("<=", 11), "one review at the cluster scope, then one a namespace")

	// One URI of a namespace it may not read refuses the listen.
	before = reviewsAsked(t)
	_, refusal = listen(t, some.token, append(uris(spread[:10], 100), uris(spread[10:11], 1)...))
	g.Expect(refusal).NotTo(BeNil())
	g.Expect(refusal.Message).To(ContainSubstring(`cannot get resource "wearers"`))
	g.Expect(refusal.Message).To(ContainSubstring(spread[10]))
	g.Expect(reviewsAsked(t) - before).To(BeNumerically("<=", maxReviews))

	// An account that may read all 40 namespaces, but not cluster-wide: a listen of
	// all of them would need 41 reviews, more than one request may ask.
	many := readerTenant(t, false, spread...)
	before = reviewsAsked(t)
	_, refusal = listen(t, many.token, uris(spread, 10))
	g.Expect(reviewsAsked(t) - before).To(BeNumerically("<=", maxReviews))
	g.Expect(refusal).NotTo(BeNil(), "more namespaces than one request may check")
	g.Expect(refusal.Message).To(ContainSubstring("SubjectAccessReviews"))
	// Split in two, each is accepted.
	for _, half := range [][]string{spread[:20], spread[20:]} {
		before = reviewsAsked(t)
		_, refusal = listen(t, many.token, uris(half, 10))
		g.Expect(refusal).To(BeNil())
		g.Expect(reviewsAsked(t) - before).To(BeNumerically("<=", maxReviews))
	}

	// The manager's histogram saw each listen when its stream closed, none over the
	// bound.
	g.Eventually(func() uint64 { n, _ := perRequest(t, "subscriptions/listen", maxReviews); return n - listenedBefore }).
		WithTimeout(timeout).WithPolling(poll).Should(BeNumerically(">=", 6))
	listened, within := perRequest(t, "subscriptions/listen", maxReviews)
	g.Expect(within).To(Equal(listened), "no subscriptions/listen asked more than %d reviews", maxReviews)
}
