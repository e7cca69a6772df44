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

package onnode_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

const (
	namespace = "sandbar-system"
	release   = "sandbar"
	// leaseName is the manager's leader election lease (cmd: LeaderElectionID).
	leaseName = "sandbar-manager.meta.sandbar.dev"
	// leaseDuration is the chart's leaderElectionLease.duration.
	leaseDuration = 15 * time.Second
)

// TestTheChartOnANode is a user's way through the chart, one step after the other:
// each step starts from where the last one left the cluster.
func TestTheChartOnANode(t *testing.T) {
	k := newKube(t)
	k.namespace(t)
	steps := []struct {
		name string
		run  func(*testing.T, *kube)
	}{
		{"Helm4InstallsTwoReadyReplicasThatServeMCPThroughTheService", installs},
		{"ALiveReplicaLeadsWithinTheLeaseWhenTheLeaderPodIsDeleted", failsOver},
		{"HelmUpgradeRollsThePodsWithoutAFailedCall", upgrades},
		{"DrainKeepsAReplicaByThePodDisruptionBudget", drains},
		{"UninstallKeepsTheMetamodelAndHelm3InstallAdoptsIt", reinstalls},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, k) }) {
			return // the later steps start from where this one should have left the cluster
		}
	}
}

func installs(t *testing.T, k *kube) {
	g := NewWithT(t)
	k.helm(t, os.Getenv("HELM4"), "install", release, chart(), "--namespace", namespace,
		"--set", "image.repository="+repository(), "--set-string", "image.tag="+tag(), "--set", "image.pullPolicy=Never",
		"--set", "bootstrap.enabled=true", "--wait", "--timeout", "4m")
	pods := k.readyReplicas(t, 2)
	for _, p := range pods {
		g.Expect(p.Spec.ServiceAccountName).To(Equal(release+"-manager"), "the manager's in-cluster identity is the chart's")
		g.Expect(p.Spec.Containers[0].Image).To(Equal(image))
	}
	k.service(t)
	tools := k.listTools(t, "2025-11-25")
	g.Expect(tools).To(ContainElement("sandbar_tasks_get"), "the bootstrap account's tools, through the Service")
}

func failsOver(t *testing.T, k *kube) {
	g := NewWithT(t)
	var leader string
	g.Eventually(func() string {
		leader = k.leader(t)
		return leader
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).ShouldNot(BeEmpty(), "a replica leads")
	others := k.readyReplicas(t, 2)
	deleted := time.Now()
	g.Expect(k.c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: leader}})).To(Succeed())
	k.kubectl(t, "apply", "-f", filepath.Join(testenv.RepoRoot(), "config", "samples", "properties.yaml"),
		"-f", filepath.Join(testenv.RepoRoot(), "config", "samples", "classes.yaml"))
	var next string
	g.Eventually(func() string {
		next = k.leader(t)
		return next
	}).WithTimeout(time.Until(deleted.Add(leaseDuration))).WithPolling(200*time.Millisecond).ShouldNot(Or(BeEmpty(), Equal(leader)),
		"another replica holds the lease within the chart's lease duration (%s)", leaseDuration)
	// The replacement pod starts in a few seconds here (its image is on the node), so
	// it may win the lease the leader released on SIGTERM before the running replica's
	// next try: either is a live replica.
	which := "the replica that replaces it"
	for _, p := range others {
		if p.Name == next {
			which = "the other running replica"
		}
	}
	t.Logf("%s (%s) took the lease %s after %s was deleted", which, next, time.Since(deleted).Round(100*time.Millisecond), leader)
	k.classReady(t, "zorp.spaceboot")
	k.readyReplicas(t, 2)
}

func upgrades(t *testing.T, k *kube) {
	g := NewWithT(t)
	before := names(k.readyReplicas(t, 2))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var calls, failed, sessionCalls, reconnects atomic.Int64
	var firstFailure atomic.Value
	var upgraded atomic.Bool
	var callsAfter atomic.Int64

	// A client of the stateless revision calls ten times a second (the two clients
	// together keep within the account's rate limit, 20 a second).
	find := func() *mcp.CallToolParams { // a call's params are the SDK's to change: one each
		return &mcp.CallToolParams{Name: "sandbar_entity_find", Arguments: map[string]any{"class": "zorp/SpaceBoot"}}
	}
	stateless := k.connect(t, "2026-07-28")
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			res, err := stateless.CallTool(ctx, find())
			if ctx.Err() != nil {
				return
			}
			calls.Add(1)
			if err == nil && res.IsError {
				err = fmt.Errorf("%v", res.Content)
			}
			if err != nil {
				failed.Add(1)
				firstFailure.CompareAndSwap(nil, err.Error())
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	// A session client of 2025-11-25 makes a new session when its replica is gone.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var cs *mcp.ClientSession
		for ctx.Err() == nil {
			if cs == nil {
				var err error
				if cs, err = k.dial(ctx, "2025-11-25"); err != nil {
					continue
				}
			}
			if res, err := cs.CallTool(ctx, find()); err != nil || res.IsError {
				_ = cs.Close()
				cs = nil
				reconnects.Add(1)
				continue
			}
			sessionCalls.Add(1)
			if upgraded.Load() {
				callsAfter.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond): // a session client's pace
			}
		}
		if cs != nil {
			_ = cs.Close()
		}
	}()
	g.Eventually(calls.Load).WithTimeout(30*time.Second).Should(BeNumerically(">", 10), "the stateless client calls")

	k.helm(t, os.Getenv("HELM4"), "upgrade", release, chart(), "--namespace", namespace, "--reuse-values",
		"--set", "mcp.rateBurst=120", "--wait", "--timeout", "4m")
	after := k.readyReplicas(t, 2)
	g.Expect(names(after)).NotTo(ContainElement(BeElementOf(before)), "the upgrade replaced both pods")
	// Helm is done when the new pods are Ready; the old ones may still be draining.
	g.Eventually(func() ([]string, error) {
		var pods corev1.PodList
		err := k.c.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/name": "sandbar"})
		return names(pods.Items), err
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).ShouldNot(ContainElement(BeElementOf(before)), "the old pods are gone")
	upgraded.Store(true)
	g.Eventually(callsAfter.Load).WithTimeout(30*time.Second).Should(BeNumerically(">", 0),
		"the 2025-11-25 client goes on after the upgrade")
	stop()
	wg.Wait()
	_ = stateless.Close()
	t.Logf("during the upgrade: %d calls of 2026-07-28, %d failed; %d calls of 2025-11-25 in sessions, %d new sessions",
		calls.Load(), failed.Load(), sessionCalls.Load(), reconnects.Load())
	g.Expect(failed.Load()).To(BeZero(), "calls of 2026-07-28 failed during the rolling upgrade; the first: %v", firstFailure.Load())
	g.Expect(reconnects.Load()).To(BeNumerically(">", 0), "the 2025-11-25 client's session was in a replaced pod: it made a new one")
	for _, p := range after {
		g.Expect(p.Spec.Containers[0].Args).To(ContainElement("--mcp-rate-burst=120"))
	}
}

func drains(t *testing.T, k *kube) {
	g := NewWithT(t)
	k.readyReplicas(t, 2)
	out, err := k.kubectlErr("drain", "sandbar-node", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=15s")
	g.Expect(err).To(HaveOccurred(), "drain could not empty the node without breaking the budget:\n%s", out)
	g.Expect(out).To(ContainSubstring("disruption budget"), "drain says why it waited")
	ready := k.readyPods(t)
	g.Expect(ready).To(HaveLen(1), "one replica stays, by the PodDisruptionBudget (minAvailable 1)")
	g.Expect(k.listTools(t, "2025-11-25")).NotTo(BeEmpty(), "the remaining replica serves MCP through the Service")
	k.kubectl(t, "uncordon", "sandbar-node")
	k.readyReplicas(t, 2)
}

func reinstalls(t *testing.T, k *kube) {
	g := NewWithT(t)
	ctx := context.Background()
	res := k.callTool(t, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Kept", "metadata": map[string]any{"name": "kept"}})
	g.Expect(res.IsError).To(BeFalse(), "%v", res.Content)
	boot := &unstructured.Unstructured{}
	boot.SetAPIVersion("zorp.sandbar.dev/v1")
	boot.SetKind("SpaceBoot")
	g.Expect(k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kept"}, boot)).To(Succeed())

	k.helm(t, os.Getenv("HELM4"), "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "2m")
	g.Eventually(k.readyPods).WithArguments(t).WithTimeout(time.Minute).Should(BeEmpty())
	for _, crd := range []string{"classes.meta.sandbar.dev", "properties.meta.sandbar.dev", "workflowprocesses.meta.sandbar.dev", "spaceboots.zorp.sandbar.dev"} {
		g.Expect(k.c.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(), "uninstall keeps %s", crd)
	}
	kept := &unstructured.Unstructured{}
	kept.SetGroupVersionKind(boot.GroupVersionKind())
	g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(boot), kept)).To(Succeed(), "uninstall keeps the instances")
	g.Expect(kept.GetUID()).To(Equal(boot.GetUID()))

	k.helm(t, os.Getenv("HELM"), "install", release, chart(), "--namespace", namespace,
		"--set", "image.repository="+repository(), "--set-string", "image.tag="+tag(), "--set", "image.pullPolicy=Never",
		"--set", "bootstrap.enabled=true", "--wait", "--timeout", "4m")
	k.readyReplicas(t, 2)
	k.classReady(t, "zorp.spaceboot")
	k.service(t)
	g.Expect(k.listTools(t, "2025-11-25")).To(ContainElement("sandbar_class_zorp_SpaceBoot"), "the second install serves the kept class")
	res = k.callTool(t, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "name": "kept"})
	g.Expect(res.IsError).To(BeFalse(), "%v", res.Content)
	g.Expect(res.StructuredContent).To(HaveKeyWithValue("items", ContainElement(HaveKeyWithValue("name", "kept"))),
		"the second install finds the kept instance")
}

// kube is the cluster as the tests reach it: a client, kubectl and Helm with the
// admin kubeconfig, and the MCP Service.
type kube struct {
	c      client.Client
	mcpURL string
	token  string
}

func newKube(t testing.TB) *kube {
	scheme := runtime.NewScheme()
	g := NewWithT(t)
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(metav1alpha1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cluster.Rest, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return &kube{c: c}
}

// namespace makes the release's namespace, enforcing Pod Security "restricted".
func (k *kube) namespace(t testing.TB) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	NewWithT(t).Expect(k.c.Create(context.Background(), ns)).To(Succeed())
}

func (k *kube) env() []string {
	return append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig,
		"PATH="+os.Getenv("KUBEBUILDER_ASSETS")+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func (k *kube) helm(t testing.TB, helm string, args ...string) string {
	t.Helper()
	cmd := exec.Command(helm, args...)
	cmd.Env = k.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, k.describe())
	}
	return string(out)
}

func (k *kube) kubectlErr(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), args...)
	cmd.Env = k.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (k *kube) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := k.kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// describe is what a user would look at when an install hangs: the pods and their
// events, and the managers' last log lines.
func (k *kube) describe() string {
	pods, _ := k.kubectlErr("-n", namespace, "describe", "pods")
	logs, _ := k.kubectlErr("-n", namespace, "logs", "-l", "app.kubernetes.io/name=sandbar", "--tail=20", "--prefix")
	return "\n--- pods\n" + pods + "\n--- logs\n" + logs
}

// readyPods are the manager's pods that are Ready and not being deleted.
func (k *kube) readyPods(t testing.TB) []corev1.Pod {
	var pods corev1.PodList
	NewWithT(t).Expect(k.c.List(context.Background(), &pods, client.InNamespace(namespace),
		client.MatchingLabels{"app.kubernetes.io/name": "sandbar"})).To(Succeed())
	var ready []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, p)
			}
		}
	}
	return ready
}

// readyReplicas waits for the Deployment to have n replicas, all Ready and of its
// latest revision, and returns their pods.
func (k *kube) readyReplicas(t testing.TB, n int) []corev1.Pod {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() error {
		var d appsv1.Deployment
		if err := k.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: release}, &d); err != nil {
			return err
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != int32(n) || s.ReadyReplicas != int32(n) || s.Replicas != int32(n) {
			return fmt.Errorf("deployment: %d replicas, %d updated, %d ready", s.Replicas, s.UpdatedReplicas, s.ReadyReplicas)
		}
		if got := len(k.readyPods(t)); got != n {
			return fmt.Errorf("%d ready pods", got)
		}
		return nil
	}).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "%s", k.describe())
	return k.readyPods(t)
}

// leader is the pod that holds the leader election lease.
func (k *kube) leader(t testing.TB) string {
	var lease coordinationv1.Lease
	if err := k.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: leaseName}, &lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod
}

func (k *kube) classReady(t testing.TB, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		var c metav1alpha1.Class
		return k.c.Get(context.Background(), client.ObjectKey{Name: name}, &c) == nil &&
			meta.IsStatusConditionTrue(c.Status.Conditions, metav1alpha1.ConditionReady)
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(BeTrue(), "Class %s is reconciled Ready", name)
}

// tokenFromNotes runs the command the release's NOTES give for the bootstrap
// account's token, and returns the token.
func (k *kube) tokenFromNotes(t testing.TB) string {
	t.Helper()
	notes := k.helm(t, os.Getenv("HELM4"), "get", "notes", release, "--namespace", namespace)
	line := regexp.MustCompile(`(?m)^\s*(export SANDBAR_TOKEN=.*)$`).FindStringSubmatch(notes)
	if line == nil {
		t.Fatalf("the NOTES give no SANDBAR_TOKEN:\n%s", notes)
	}
	cmd := exec.Command("bash", "-c", line[1]+` && printf %s "$SANDBAR_TOKEN"`)
	cmd.Env = k.env()
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), ":") || strings.HasSuffix(string(out), ":") {
		t.Fatalf("the NOTES' command %q: %v (%d bytes)", line[1], err, len(out))
	}
	return string(out)
}

// service points the MCP clients at the release's Service: its cluster IP, reached in
// the cluster's network namespace, and the bootstrap account's token as the NOTES
// say to read it.
func (k *kube) service(t testing.TB) {
	t.Helper()
	var svc corev1.Service
	NewWithT(t).Expect(k.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: release + "-mcp"}, &svc)).To(Succeed())
	addr := net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(svc.Spec.Ports[0].Port))
	k.mcpURL = "http://" + addr + "/mcp"
	k.token = k.tokenFromNotes(t)
	// Ready pods are not yet a reachable Service: kube-proxy writes the new Service's
	// rules on its next sync, which a busy node takes its time over (a fresh install's
	// first connection was refused). A client waits for it as a user would retry.
	NewWithT(t).Eventually(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := cluster.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		return err
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "the Service %s takes connections", addr)
}

func (k *kube) dial(ctx context.Context, revision string) (*mcp.ClientSession, error) {
	hc := cluster.HTTPClient()
	hc.Transport = testenv.Bearer{Token: k.token, Base: hc.Transport}
	return mcp.NewClient(&mcp.Implementation{Name: "sandbar-onnode", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: k.mcpURL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
}

func (k *kube) connect(t testing.TB, revision string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := k.dial(ctx, revision)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return cs
}

func (k *kube) listTools(t testing.TB, revision string) []string {
	t.Helper()
	cs := k.connect(t, revision)
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (k *kube) callTool(t testing.TB, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	cs := k.connect(t, "2025-11-25")
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return res
}

func chart() string { return filepath.Join(testenv.RepoRoot(), "charts", "sandbar") }

func repository() string { return image[:strings.LastIndex(image, ":")] }

func tag() string { return image[strings.LastIndex(image, ":")+1:] }

func names(pods []corev1.Pod) []string {
	var n []string
	for _, p := range pods {
		n = append(n, p.Name)
	}
	return n
}
