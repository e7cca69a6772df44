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

// Command chaos is Sandbar's chaos run (`make chaos`): a local control plane, the
// samples, two manager replicas with leader election, and clients of both protocol
// revisions making valid and hostile calls at once, while the API server is paused
// and resumed and the leader is killed and started again. It reports whether a
// replica ever ended on its own, every answer that came past its deadline, the
// replicas' RSS and goroutines over time, and whether every create that answered
// success is stored exactly once; it exits 1 when a check fails. Everything listens
// on loopback, and the run ends by itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// config is what the flags set.
type config struct {
	assets, manager, dir string
	duration             time.Duration
	workers, accounts    int
	hostile              float64
	callTimeout          time.Duration
	pauseEvery, pauseFor time.Duration
	killEvery            time.Duration
	sample               time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "Folder with kube-apiserver, etcd and kubectl.")
	flag.StringVar(&c.manager, "manager", "bin/manager", "The manager binary.")
	flag.StringVar(&c.dir, "dir", ".chaos", "Folder for the kubeconfig, the token key and the replicas' logs (kept after the run).")
	flag.DurationVar(&c.duration, "duration", 10*time.Minute, "How long the clients work and the faults come.")
	flag.IntVar(&c.workers, "workers", 24, "Clients at work at once; half speak 2025-11-25 in sessions, half the stateless 2026-07-28.")
	flag.IntVar(&c.accounts, "accounts", 3, "MCP accounts the clients share.")
	flag.Float64Var(&c.hostile, "hostile", 0.4, "Share of the calls that are hostile: forged tokens and cursors, fuzzed arguments, floods, oversized and malformed bodies.")
	flag.DurationVar(&c.callTimeout, "call-timeout", 10*time.Second, "The replicas' --mcp-call-timeout; every answer must come within it and 2 s more.")
	flag.DurationVar(&c.pauseEvery, "pause-every", 75*time.Second, "How often the API server is paused (SIGSTOP).")
	flag.DurationVar(&c.pauseFor, "pause-for", 8*time.Second, "How long each pause lasts (SIGCONT after it); past the replicas' --leader-elect-renew-deadline (10 s) the leader steps down and exits by design.")
	flag.DurationVar(&c.killEvery, "kill-every", 2*time.Minute, "How often the leader is killed (SIGKILL) and started again.")
	flag.DurationVar(&c.sample, "sample", 10*time.Second, "How often the replicas' RSS and goroutines are sampled.")
	flag.Parse()
	code, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// namespace holds the accounts, their instances and processes.
const namespace = "default"

// run starts the control plane, the accounts and two manager replicas, then runs the
// chaos. It is over 80 lines because each step defers the stop of what it started, so
// the steps stay in one function, in order.
func run(c config) (int, error) {
	if c.assets == "" {
		return 0, errors.New("no control plane binaries: pass --assets or set KUBEBUILDER_ASSETS (make chaos does)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return 0, err
	}
	dir, err := filepath.Abs(c.dir)
	if err != nil {
		return 0, err
	}

	fmt.Println(">> starting etcd and kube-apiserver")
	env := &envtest.Environment{
		BinaryAssetsDirectory: c.assets,
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		_ = env.Stop()
		return 0, fmt.Errorf("starting the control plane: %w", err)
	}
	apiserver, err := apiServerPID(env.Config.Host)
	// The API server must never stay paused, whatever ends the run.
	defer func() {
		if apiserver > 0 {
			_ = syscall.Kill(apiserver, syscall.SIGCONT)
		}
		_ = env.Stop()
	}()
	if err != nil {
		return 0, err
	}
	user, err := env.AddUser(envtest.User{Name: "sandbar-chaos", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return 0, err
	}
	kubeconfigData, err := user.KubeConfig()
	if err != nil {
		return 0, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kubeconfigData, 0o600); err != nil {
		return 0, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfigData)
	if err != nil {
		return 0, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	k8s, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return 0, err
	}
	fmt.Println(">> applying config/samples and the accounts")
	if err := testenv.ApplySamples(ctx, k8s); err != nil {
		return 0, err
	}
	for i := range c.accounts {
		for _, obj := range chaosAccount(i) {
			if err := k8s.Create(ctx, obj); err != nil {
				return 0, err
			}
		}
	}
	tokenKey := filepath.Join(dir, "token-key")
	if err := os.WriteFile(tokenKey, []byte(strings.Repeat("chaos-token-key-", 4)), 0o600); err != nil {
		return 0, err
	}

	fleet := &fleet{cfg: c, dir: dir, kubeconfig: kubeconfig, tokenKey: tokenKey}
	for i := range 2 {
		if err := fleet.add(i); err != nil {
			return 0, err
		}
	}
	defer fleet.stopAll()
	if err := fleet.ready(ctx, 2*time.Minute); err != nil {
		return 0, err
	}
	tokens := make([]string, c.accounts)
	for i := range c.accounts {
		if tokens[i], err = apikey.Issue(ctx, k8s, namespace, accountName(i)); err != nil {
			return 0, err
		}
	}
	if err := fleet.accepting(ctx, tokens, 2*time.Minute); err != nil {
		return 0, err
	}

	r := newRun(c, fleet, k8s, tokens, apiserver)
	return r.do(ctx), nil
}

// apiServerPID is the process of the kube-apiserver that serves host (its secure
// port is on its command line).
func apiServerPID(host string) (int, error) {
	u, err := url.Parse(host)
	if err != nil {
		return 0, err
	}
	port := u.Port()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "kube-apiserver" && strings.Contains(string(cmdline), "--secure-port="+port) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no kube-apiserver process serves port %s", port)
}
