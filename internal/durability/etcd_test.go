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

package durability_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// etcd is stopped and started again on its data while the API server and the
// manager run on: with no restart of the manager, an import begun before the outage
// finishes with each item once, a Class applied after it is served to a session
// opened before it, and an account locked out after it is refused and its session
// ended.
func TestWorkResumesAfterEtcdRestarts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A control plane of its own, whose etcd keeps its data dir across a restart.
	etcd := &envtest.Etcd{DataDir: t.TempDir()}
	plane := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true}
	plane.ControlPlane.Etcd = etcd
	planeCfg, err := plane.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = plane.Stop() })
	c, err := client.New(planeCfg, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testenv.ApplySamples(ctx, c)).To(Succeed())
	tok, err := apikey.Issue(ctx, c, "default", "claude")
	g.Expect(err).NotTo(HaveOccurred())
	lockee := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lockee"},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: "lockee", ServiceAccountName: "claude",
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "lockee-key"}}}
	g.Expect(c.Create(ctx, lockee)).To(Succeed())
	lockeeTok, err := apikey.Issue(ctx, c, "default", "lockee")
	g.Expect(err).NotTo(HaveOccurred())

	// A renewal of the lease that etcd's outage holds up waits for half the renew
	// deadline (client-go's timeout of a lease request), and the next try must still
	// fit in it: the default 10 s does not give a restart of etcd room.
	m := startManager(t, kubeconfig(t, plane), "manager", tok, "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s",
		"--kube-api-qps=400", "--kube-api-burst=800")
	g.Eventually(func() int { return initialize(m.url, lockeeTok) }).WithTimeout(timeout).WithPolling(100 * time.Millisecond).
		Should(Equal(http.StatusOK))
	// Sessions opened before the outage: one that will see a new Class, one that will be locked out.
	watcher := connectAs(t, m.url, tok)
	locked := connectAs(t, m.url, lockeeTok)
	_, err = locked.ListTools(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() []string { return toolNames(g, watcher) }).WithTimeout(timeout).WithPolling(100*time.Millisecond).
		Should(ContainElement("sandbar_class_zorp_SpaceBoot"), "the samples are served")

	// An import, under way when etcd stops.
	const n = 1500
	res, rpcErr := rpcAs(t, m.url, tok, "tools/call", map[string]any{"name": "sandbar_project_import",
		"arguments": map[string]any{"bundle": map[string]any{"items": importItems("etcd", n)}}, "task": map[string]any{}})
	g.Expect(rpcErr).To(BeNil())
	id := res["task"].(map[string]any)["taskId"].(string)
	processIn := func() *metav1alpha1.WorkflowProcess {
		var p metav1alpha1.WorkflowProcess
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: id}, &p)).To(Succeed())
		return &p
	}
	var before *metav1alpha1.WorkflowProcess
	g.Eventually(func() int64 {
		if before = processIn(); before.Status.Progress != nil {
			return before.Status.Progress.Done
		}
		return 0
	}).WithTimeout(timeout).WithPolling(20 * time.Millisecond).Should(BeNumerically(">", 0))

	g.Expect(etcd.Stop()).To(Succeed())
	g.Expect(before.Status.Phase).To(Equal(metav1alpha1.PhaseRunning), "the import was under way when etcd stopped")
	g.Expect(before.Status.Progress.Done).To(BeNumerically("<", n))
	down := time.Now()
	g.Eventually(func() error {
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return c.Get(short, client.ObjectKeyFromObject(lockee), &metav1alpha1.ServiceAccount{})
	}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(HaveOccurred(), "the API server cannot read without etcd")
	g.Expect(etcd.Start()).To(Succeed())
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(lockee), &metav1alpha1.ServiceAccount{})
	}).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("etcd was down for %s", time.Since(down).Round(100*time.Millisecond))

	t.Run("an import begun before finishes, each item once", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() string { return taskStatusAs(t, m.url, tok, id) }).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).
			Should(Equal("completed"), func() string { return fmt.Sprintf("status: %+v", processIn().Status) })
		result, rpcErr := rpcAs(t, m.url, tok, "tasks/result", map[string]any{"taskId": id})
		g.Expect(rpcErr).To(BeNil())
		g.Expect(result["structuredContent"]).To(Equal(map[string]any{"created": float64(n), "updated": 0.0, "unchanged": 0.0, "failed": 0.0}))
		g.Expect(processIn().Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
		importedOnce(g, c, "etcd", n, id)
	})

	t.Run("a Class applied after is reconciled and served", func(t *testing.T) {
		g := NewWithT(t)
		prop := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: "lantern.glow"}, Spec: metav1alpha1.PropertySpec{Range: metav1alpha1.RangeNumber}}
		lantern := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: "zorp.lantern"}, Spec: metav1alpha1.ClassSpec{
			Prefix: "zorp", Kind: "Lantern", Slots: []metav1alpha1.SlotRef{{Property: "lantern.glow", Required: true}}}}
		g.Expect(c.Create(ctx, prop)).To(Succeed())
		g.Expect(c.Create(ctx, lantern)).To(Succeed())
		g.Eventually(func() bool {
			var crd apiextensionsv1.CustomResourceDefinition
			if c.Get(ctx, client.ObjectKey{Name: "lanterns.zorp.sandbar.dev"}, &crd) != nil {
				return false
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true
				}
			}
			return false
		}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(BeTrue(), "the Class's CRD is established")
		g.Eventually(func() metav1.ConditionStatus {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(lantern), lantern)).To(Succeed())
			if cond := meta.FindStatusCondition(lantern.Status.Conditions, metav1alpha1.ConditionReady); cond != nil {
				return cond.Status
			}
			return ""
		}).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Equal(metav1.ConditionTrue))
		g.Eventually(func() []string { return toolNames(g, watcher) }).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(ContainElement("sandbar_class_zorp_Lantern"),
			"the session opened before the outage is served the Class's tool")
	})

	t.Run("an account locked out after is refused", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Patch(ctx, lockee, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"active":false}}`)))).To(Succeed())
		g.Eventually(func() error {
			_, err := locked.ListTools(ctx, nil)
			return err
		}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(MatchError(Or(ContainSubstring("Unauthorized"),
			ContainSubstring("connection closed"))), "the session opened before the outage is stopped")
		g.Expect(initialize(m.url, lockeeTok)).To(Equal(http.StatusUnauthorized), "the token opens no new session")
		g.Expect(initialize(m.url, tok)).To(Equal(http.StatusOK), "other accounts are served")
	})

	g.Expect(m.running()).To(BeTrue(), "the manager ran throughout, never restarted")
}

// toolNames are the names of the tools a session is served.
func toolNames(g Gomega, cs *mcp.ClientSession) []string {
	tools, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// connectAs opens an MCP session (the go-sdk client, Streamable HTTP) with a token.
func connectAs(t *testing.T, url, tok string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "durability", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: testenv.Bearer{Token: tok}}}, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
