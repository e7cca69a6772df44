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

// Command cluster runs a one-node Kubernetes cluster on this machine in the
// foreground (package internal/testenv/node): the control plane, a kubelet with
// containerd, CNI and kube-proxy, with the manager image loaded. Ctrl-C stops it and
// removes what it made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sandbar-dev/sandbar/internal/testenv/node"
)

func main() {
	var cfg node.Config
	flag.StringVar(&cfg.Dir, "dir", "bin/cluster", "folder of the cluster's state, removed when it stops")
	flag.StringVar(&cfg.ControlPlane, "control-plane", "", "folder of etcd, kube-apiserver and kubectl (hack/control-plane-binaries.sh)")
	flag.StringVar(&cfg.Node, "node", "", "folder of the node's binaries (hack/node-binaries.sh)")
	flag.StringVar(&cfg.Pause, "pause", "", "the pause binary (hack/cluster/pause)")
	flag.Func("image", "image tarball to load (repeatable)", func(v string) error {
		cfg.Images = append(cfg.Images, v)
		return nil
	})
	flag.Parse()
	cfg.Log = os.Stderr
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(cfg node.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if entries, err := os.ReadDir(cfg.Dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: a cluster runs there, or one did not stop cleanly (remove it)", cfg.Dir)
	}
	c, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Printf(`
A one-node cluster is up (node %s). In another terminal:

  export KUBECONFIG=%s
  kubectl get nodes
  kubectl get pods -A

Images loaded: %s
The components' logs: %s
Ctrl-C here stops the cluster and removes %s.
`, node.NodeName, c.Kubeconfig, strings.Join(cfg.Images, ", "), c.Logs(), cfg.Dir)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "cluster: stopping")
	return c.Stop()
}
