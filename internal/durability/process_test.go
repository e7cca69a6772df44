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
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

var (
	buildOnce   sync.Once
	buildDir    string
	manager     string
	buildOutput []byte
	buildErr    error
)

// managerBinary is the manager, built once per run as a cluster would run it.
func managerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "sandbar-durability-"); buildErr != nil {
			return
		}
		manager = filepath.Join(buildDir, "manager")
		build := exec.Command("go", "build", "-trimpath", "-o", manager, "./cmd")
		build.Dir = testenv.RepoRoot()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOutput, buildErr = build.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building the manager: %v\n%s", buildErr, buildOutput)
	}
	return manager
}

func removeManagerBinary() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// kubeconfig writes a kubeconfig of an administrator of the control plane.
func kubeconfig(t *testing.T, env *envtest.Environment) string {
	t.Helper()
	admin, err := env.AddUser(envtest.User{Name: "durability-admin", Groups: []string{"system:masters"}}, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	data, err := admin.KubeConfig()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return path
}

// process of a manager binary: its MCP URL, and a channel closed when it exits.
type managerProcess struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startManager runs the manager binary with a kubeconfig, leader election in
// default, its own addresses and the given flags, and waits until it serves the
// account of tok.
func startManager(t *testing.T, kubeconfig, name, tok string, flags ...string) *managerProcess {
	t.Helper()
	g := NewWithT(t)
	mcpAddr, probeAddr := freeAddr(t), freeAddr(t)
	args := append([]string{"--kubeconfig=" + kubeconfig, "--leader-elect", "--leader-election-namespace=default",
		"--mcp-bind-address=" + mcpAddr, "--health-probe-bind-address=" + probeAddr, "--metrics-bind-address=0",
		"--mcp-rate-limit=0", "--audit-log=off"}, flags...)
	cmd := exec.Command(managerBinary(t), args...)
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	g.Expect(err).NotTo(HaveOccurred())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	g.Expect(cmd.Start()).To(Succeed())
	m := &managerProcess{url: "http://" + mcpAddr + "/mcp", cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(m.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-m.exited
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("%s's log:\n%s", name, tail(string(log), 60))
		}
	})
	g.Eventually(func() int {
		select {
		case <-m.exited:
			return -1
		default:
		}
		return initialize(m.url, tok)
	}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(Equal(http.StatusOK), "%s serves the account", name)
	return m
}

// kill ends the manager at once, as a node that fails does: no lease is released,
// no request finished.
func (m *managerProcess) kill(t *testing.T) {
	t.Helper()
	NewWithT(t).Expect(m.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	<-m.exited
}

func (m *managerProcess) running() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// initialize is the HTTP status of an initialize request with a token.
func initialize(url, tok string) int {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},` +
		`"clientInfo":{"name":"durability","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// leaseHolder is the identity holding the manager's lease in default ("" if none).
func leaseHolder(c client.Client) string {
	var l coordinationv1.Lease
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "sandbar-manager.meta.sandbar.dev"}, &l); err != nil ||
		l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// importItems are n SpaceBoots for sandbar_project_import, named prefix-NNNN.
func importItems(prefix string, n int) []any {
	items := make([]any, 0, n)
	for i := range n {
		items = append(items, map[string]any{"class": "zorp/SpaceBoot", "name": fmt.Sprintf("%s-%04d", prefix, i),
			"attributes": map[string]any{"name": "Imported " + prefix, "tentacleCount": i % 64}})
	}
	return items
}

// importedOnce checks that the n items of importItems(prefix, n) exist in default,
// each whole and each made by the import process id.
func importedOnce(g Gomega, c client.Client, prefix string, n int, id string) {
	var boots unstructured.UnstructuredList
	boots.SetAPIVersion("zorp.sandbar.dev/v1")
	boots.SetKind("SpaceBootList")
	g.Expect(c.List(context.Background(), &boots, client.InNamespace("default"))).To(Succeed())
	got := map[string]bool{}
	for _, b := range boots.Items {
		if !strings.HasPrefix(b.GetName(), prefix+"-") {
			continue
		}
		got[b.GetName()] = true
		var i int
		_, err := fmt.Sscanf(strings.TrimPrefix(b.GetName(), prefix+"-"), "%d", &i)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(b.Object["spec"]).To(Equal(map[string]any{"name": "Imported " + prefix, "tentacleCount": int64(i % 64)}), b.GetName())
		g.Expect(b.GetAnnotations()).To(HaveKeyWithValue("meta.sandbar.dev/imported-by", "default/"+id+" created"), b.GetName())
	}
	g.Expect(got).To(HaveLen(n), "every item exists")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
