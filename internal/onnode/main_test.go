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

// Package onnode_test installs the chart as a user does, on a one-node cluster with a
// real kubelet and container runtime (package testenv/node): the manager image in
// pods, the chart's probes, its in-cluster identity and RBAC, its Service, leader
// election between pods, a rolling upgrade, a drain against its PodDisruptionBudget,
// and an uninstall and a second install. `make test-cluster` runs it.
package onnode_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/sandbar-dev/sandbar/internal/testenv/node"
)

// cluster is the one-node cluster every test here uses; image is the manager image's
// reference, as loaded into it.
var (
	cluster *node.Cluster
	image   string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cfg, err := config()
	if err != nil {
		fmt.Fprintln(os.Stderr, "onnode:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if cluster, err = node.Start(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "onnode: starting the one-node cluster:", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "onnode: the cluster's components logged into %s (removed now)\n", cluster.Logs())
	}
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "onnode: stopping the cluster:", err)
		return 1
	}
	return code
}

// config is the cluster's configuration from what `make test-cluster` sets:
// KUBEBUILDER_ASSETS (the control plane), NODE_ASSETS (hack/node-binaries.sh, and the
// pause binary in it) and SANDBAR_IMAGE (make image's tarball).
func config() (node.Config, error) {
	var cfg node.Config
	for _, v := range []struct {
		name string
		to   *string
	}{{"KUBEBUILDER_ASSETS", &cfg.ControlPlane}, {"NODE_ASSETS", &cfg.Node}, {"SANDBAR_IMAGE", &image}, {"HELM", new(string)}, {"HELM4", new(string)}} {
		if *v.to = os.Getenv(v.name); *v.to == "" {
			return cfg, fmt.Errorf("%s is not set: run the tests with `make test` or `make test-cluster`", v.name)
		}
	}
	cfg.Pause = filepath.Join(cfg.Node, "pause")
	cfg.Images = []string{image}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(image) })
	if err != nil {
		return cfg, fmt.Errorf("the image tarball %s: %w", image, err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 {
		return cfg, fmt.Errorf("the image tarball %s holds %d images: want one, with one tag", image, len(m))
	}
	image = m[0].RepoTags[0]
	dir, err := os.MkdirTemp("", "sandbar-node-")
	if err != nil {
		return cfg, err
	}
	cfg.Dir = dir
	cfg.Log = os.Stderr
	return cfg, nil
}
