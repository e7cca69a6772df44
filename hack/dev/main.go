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

// Command dev runs Sandbar on one machine with nothing else: a local control plane
// (etcd and kube-apiserver), the metamodel CRDs, the samples, and the manager in the
// foreground. Ctrl-C stops everything and removes what it made.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dev:", err)
		os.Exit(1)
	}
}

func tokenOrHint(token string) string {
	if token == "" {
		return "<run: bin/manager create-key --name claude>"
	}
	return token
}

// banner is what make dev prints once the manager serves MCP (its /readyz): the kubeconfig, the
// kubectl to use, the MCP URL, the sample account's token, the .mcp.json's path and
// content.
const banner = `
Sandbar's local control plane is up. In another terminal:

  export KUBECONFIG=%s
  kubectl get sandbar                 # the metamodel, with Ready conditions
  kubectl get spaceboots -A           # instances of a generated instance API
  kubectl explain classes.spec

(kubectl matching the API server's version: %s)

MCP is served at %s. The token of the sample account default/claude
(shown only now; make dev issues a new one each time):

  export SANDBAR_TOKEN=%s

A ready .mcp.json, written to %s (Claude Code reads it from this folder):

%s

An order over 10,000 (the call policy order-limits) waits for a person in approvers:
  kubectl get approvals                                   # what waits
  bin/kubectl-sandbar approve NAME --as=alice --as-group=approvers
  bin/kubectl-sandbar deny NAME --as=alice --as-group=approvers --reason "over budget"

Ctrl-C here stops the manager and the control plane.

`

// devNamespace is the manager's namespace under make dev.
const devNamespace = "sandbar-system"

func run() error {
	var (
		assets  = flag.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "Folder with kube-apiserver, etcd and kubectl.")
		manager = flag.String("manager", "bin/manager", "The manager binary to run.")
		dir     = flag.String("dir", ".dev", "Folder for the kubeconfig (removed on exit).")
		samples = flag.Bool("samples", true, "Apply config/samples and issue a key for the sample ServiceAccount default/claude.")
		mcpAddr = flag.String("mcp-address", "127.0.0.1:8080", "Where the manager serves MCP.")
	)
	flag.Parse()
	root := testenv.RepoRoot()
	if *assets == "" {
		return errors.New("no control plane binaries: pass --assets or set KUBEBUILDER_ASSETS (make dev does)")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Println(">> starting etcd and kube-apiserver")
	env := &envtest.Environment{
		BinaryAssetsDirectory: *assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		_ = env.Stop() // whatever did start
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() {
		fmt.Println(">> stopping the control plane")
		_ = env.Stop()
	}()

	kubeconfig, kubeconfigData, err := writeKubeconfig(env, *dir)
	if err != nil {
		return err
	}
	defer os.Remove(kubeconfig)

	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfigData)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	// The manager's namespace, as a pod of the chart or the kustomize install has one:
	// the tasks of people signed in with OAuth live there (--oauth-tasks-namespace),
	// apart from every namespace people work in.
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: devNamespace}})); err != nil {
		return err
	}
	// The admission policies the chart and config/admission install: a process of
	// a built-in workflow, or of a person, is made by a manager only, and a decision
	// on an Approval is its writer's own.
	fmt.Println(">> applying config/admission")
	admission := filepath.Join(root, "config", "admission")
	if err := testenv.Apply(ctx, c, filepath.Join(admission, "builtin-processes.yaml"), filepath.Join(admission, "crds.yaml"),
		filepath.Join(admission, "approvals.yaml")); err != nil {
		return err
	}
	var token string
	if *samples {
		fmt.Println(">> applying config/samples")
		if err := testenv.ApplySamples(ctx, c); err != nil {
			return err
		}
		if token, err = apikey.Issue(ctx, c, "default", "claude"); err != nil {
			return err
		}
	}
	mcpURL := "http://" + *mcpAddr + "/mcp"
	mcpJSON, mcpFile, err := writeMCPJSON(root, mcpURL)
	if err != nil {
		return err
	}

	kubectl := filepath.Join(*assets, "kubectl")
	return runManager(ctx, *manager, *mcpAddr, kubeconfig, func() {
		fmt.Printf(banner, kubeconfig, kubectl, mcpURL, tokenOrHint(token), mcpFile, mcpJSON)
	})
}

// writeKubeconfig writes a kubeconfig of a system:masters user of env into dir: its
// path and content.
func writeKubeconfig(env *envtest.Environment, dir string) (string, []byte, error) {
	user, err := env.AddUser(envtest.User{Name: "sandbar-dev", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", nil, err
	}
	kubeconfigData, err := user.KubeConfig()
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	kubeconfig, err := filepath.Abs(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(kubeconfig, kubeconfigData, 0o600); err != nil {
		return "", nil, err
	}
	return kubeconfig, kubeconfigData, nil
}

// writeMCPJSON writes a .mcp.json for the server at url into root: its content and path.
func writeMCPJSON(root, url string) ([]byte, string, error) {
	mcpJSON, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"sandbar": map[string]any{
		"type":    "http",
		"url":     url,
		"headers": map[string]string{"Authorization": "Bearer ${SANDBAR_TOKEN:-disabled}"},
	}}}, "", "  ")
	if err != nil {
		return nil, "", err
	}
	mcpFile := filepath.Join(root, ".mcp.json")
	if err := os.WriteFile(mcpFile, append(mcpJSON, '\n'), 0o644); err != nil {
		return nil, "", err
	}
	return mcpJSON, mcpFile, nil
}

// runManager runs the manager against kubeconfig, serving MCP at mcpAddr, until ctx
// ends (then it stops it: SIGTERM, and after 15 s SIGKILL) or the manager stops.
func runManager(ctx context.Context, manager, mcpAddr, kubeconfig string, ready func()) error {
	// The key that seals the cursors and continue tokens the server hands clients,
	// as the chart keeps one in a Secret for its replicas.
	tokenKey := filepath.Join(filepath.Dir(kubeconfig), "token-key")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if err := os.WriteFile(tokenKey, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return fmt.Errorf("writing the token key: %w", err)
	}
	cmd := exec.Command(manager,
		"--mcp-bind-address="+mcpAddr, "--mcp-token-key-file="+tokenKey, "--oauth-tasks-namespace="+devNamespace,
		"--health-probe-bind-address=127.0.0.1:8081",
		// Plain HTTP on loopback: curl http://127.0.0.1:8082/metrics needs no token.
		"--metrics-bind-address=127.0.0.1:8082", "--metrics-secure=false")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the manager: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The banner once the server is ready (its catalog built, the sample account's
	// key checked), so that a client started from it is answered, not refused.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for waiting := true; waiting; {
		select {
		case err := <-exited:
			return fmt.Errorf("the manager stopped: %v", err)
		case <-ctx.Done():
			waiting = false
		case <-poll.C:
			if serving("http://" + mcpAddr + "/readyz") {
				ready()
				waiting = false
			}
		}
	}
	select {
	case err := <-exited:
		return fmt.Errorf("the manager stopped: %v", err)
	case <-ctx.Done():
	}
	fmt.Println(">> stopping the manager")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			fmt.Println(">> the manager exited:", err)
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		fmt.Println(">> the manager did not stop in 15 s and was killed:", <-exited)
	}
	return nil
}

// serving says whether url answers 200 OK within a second.
func serving(url string) bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
