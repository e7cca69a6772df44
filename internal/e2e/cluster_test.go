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

package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// chartCluster starts a control plane without the CRDs (a chart brings them), stopped
// when the test ends, and returns its admin config and Helm 4 run as that admin.
func chartCluster(t *testing.T) (*rest.Config, func(args ...string) (string, error)) {
	t.Helper()
	helm := os.Getenv("HELM4")
	if helm == "" || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("HELM4 or KUBEBUILDER_ASSETS is not set: run the tests with `make test`")
	}
	work := t.TempDir()
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(work, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, func(args ...string) (string, error) {
		cmd := exec.Command(helm, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_CACHE_HOME="+work, "HELM_CONFIG_HOME="+work, "HELM_DATA_HOME="+work)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}
