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

// Package testenv starts a real control plane (etcd and kube-apiserver, through
// envtest) with the Sandbar CRDs for tests, and applies manifests to it.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// RepoRoot is the root of the repository.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Start starts etcd and kube-apiserver with the metamodel CRDs installed. The binaries
// come from KUBEBUILDER_ASSETS, which `make test` sets after building them.
func Start() (*envtest.Environment, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds the control plane binaries")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		_ = env.Stop() // whatever did start
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	return env, nil
}

// SampleFiles are the files of config/samples in the order they apply: the metamodel
// (Properties, Classes, WorkflowDefinitions), then the sample ServiceAccount, then
// the call policies of the order workflow.
var SampleFiles = []string{"properties.yaml", "classes.yaml", "workflows.yaml", "serviceaccount.yaml", "policies.yaml"}

// ApplySamples creates the ClusterRoles of config/tenancy (the sample account's
// RoleBinding names one) and every object of config/samples.
func ApplySamples(ctx context.Context, c client.Client) error {
	if err := Apply(ctx, c, filepath.Join(RepoRoot(), "config", "tenancy", "roles.yaml")); err != nil {
		return err
	}
	dir := filepath.Join(RepoRoot(), "config", "samples")
	for _, f := range SampleFiles {
		if err := Apply(ctx, c, filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	return nil
}

// SetLogger logs errors only, or everything when SANDBAR_TEST_LOG is set.
func SetLogger() {
	level := zapcore.ErrorLevel
	if os.Getenv("SANDBAR_TEST_LOG") != "" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(level)))
}

// Objects reads every object of a multi-document YAML file.
func Objects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

// Decode reads every object of a multi-document YAML text.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// Apply creates the objects of the given YAML files.
func Apply(ctx context.Context, c client.Client, paths ...string) error {
	for _, p := range paths {
		objs, err := Objects(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("%s: creating %s %s: %w", p, o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}

// Bearer is an http.RoundTripper that sends a bearer token with every request, as an
// MCP client configured with a token does.
type Bearer struct {
	Token string
	// Base sends the request (http.DefaultTransport when nil).
	Base http.RoundTripper
}

// RoundTrip sends r, with the token, through Base.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	base := b.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}
