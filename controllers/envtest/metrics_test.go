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
	"crypto/tls"
	"io"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The metrics endpoint answers only a client whose Kubernetes token the API server
// authenticates and authorizes to get /metrics (the shipped metrics-reader role).
func TestMetricsAnswerOnlyAuthorizedTokens(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scrape := func(token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, metricsURL, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The certificate is self-signed, as in a default install.
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test of authorization, not of the certificate
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	g.Eventually(func() int { code, _ := scrape(""); return code }).WithTimeout(timeout).WithPolling(poll).
		Should(Equal(http.StatusUnauthorized), "no token")
	// controller-runtime's filter answers a token the TokenReview rejects with 500.
	code, body := scrape("not-a-kubernetes-token")
	g.Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusInternalServerError), "a token the API server does not know")
	g.Expect(body).NotTo(ContainSubstring("controller_runtime"))

	// The ClusterRole the chart and config/rbac ship, bound to one ServiceAccount.
	objs, err := testenv.Objects("../../config/rbac/metrics_reader_role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	var reader rbacv1.ClusterRole
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &reader)).To(Succeed())
	reader.Name = uniq("metrics-reader-")
	g.Expect(k8s.Create(ctx, &reader)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, &reader) })

	tokenOf := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		g.Expect(k8s.Create(ctx, sa)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, sa) })
		tr := &authenticationv1.TokenRequest{}
		g.Expect(k8s.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
		return tr.Status.Token
	}
	scraper, stranger := uniq("scraper-"), uniq("stranger-")
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: scraper},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: scraper}}}
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, binding) })

	code, body = scrape(tokenOf(stranger))
	g.Expect(code).To(Equal(http.StatusForbidden), "a Kubernetes identity without the role")
	g.Expect(body).NotTo(ContainSubstring("controller_runtime"))
	token := tokenOf(scraper)
	g.Eventually(func(g Gomega) {
		code, body := scrape(token)
		g.Expect(code).To(Equal(http.StatusOK), body)
		g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}
