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

// Command soak is Sandbar's load and soak benchmark (`make soak`): a local control
// plane, the samples, the manager binary, and many MCP client sessions doing mixed
// work for a while, then a burst of sessions opened and abandoned. It prints the
// manager's RSS and goroutines every sample interval and, at the end, the calls,
// errors by kind, latencies per tool, the slopes after warm-up and its checks; it
// exits 1 when a check fails. docs/reliability.md says what the report means.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/testenv"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// config is what the flags set.
type config struct {
	assets, manager, dir        string
	sessions, abandoned         int
	duration, sessionTimeout    time.Duration
	sample, think               time.Duration
	stateless                   float64
	perAccount, live            int
	rateLimit                   float64
	rateBurst                   int
	maxRSSSlope, maxGorSlope    float64
	patchEvery                  time.Duration
	minFlatWindow               time.Duration
	managerFlags                string
	goroutineSlack, heapSlackMB float64
}

// namespace holds the soak's accounts and instances.
const namespace = "default"

func main() {
	var c config
	flag.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "Folder with kube-apiserver, etcd and kubectl.")
	flag.StringVar(&c.manager, "manager", "bin/manager", "The manager binary to soak.")
	flag.StringVar(&c.dir, "dir", ".soak", "Folder for the kubeconfig, the manager's log and its audit stream (kept after the run).")
	flag.IntVar(&c.sessions, "sessions", 100, "MCP client sessions doing mixed work at once.")
	flag.DurationVar(&c.duration, "duration", 10*time.Minute, "How long the sessions work.")
	flag.IntVar(&c.abandoned, "abandoned", 1000, "Sessions opened and abandoned in the burst after the work.")
	flag.DurationVar(&c.sessionTimeout, "session-timeout", time.Minute, "The manager's --mcp-session-timeout: abandoned sessions must be gone, and their memory released, this long after they were opened.")
	flag.DurationVar(&c.sample, "sample", 10*time.Second, "How often the manager's RSS and goroutines are sampled.")
	flag.DurationVar(&c.think, "think", time.Second, "Mean pause of a session between two calls (each pause is 0.5 to 1.5 times it).")
	flag.Float64Var(&c.stateless, "stateless", 0.1, "Share of the sessions that speak the stateless revision 2026-07-28 (no session, so no subscriptions, tasks or abandoning).")
	flag.IntVar(&c.perAccount, "sessions-per-account", 10, "Sessions that share one MCP ServiceAccount (and its rate limit).")
	flag.IntVar(&c.live, "live", 5, "Instances each session keeps: past it, a create deletes the session's oldest first, so the cluster's instances level off.")
	flag.Float64Var(&c.rateLimit, "rate-limit", 100, "The manager's --mcp-rate-limit (requests per second per account).")
	flag.IntVar(&c.rateBurst, "rate-burst", 200, "The manager's --mcp-rate-burst.")
	flag.DurationVar(&c.patchEvery, "patch-every", 20*time.Second, "How often each subscribed instance is patched with the Kubernetes API.")
	flag.Float64Var(&c.maxRSSSlope, "max-rss-slope", 2, "Steepest RSS slope after warm-up (the second half of the work) that counts as flat, in MiB per minute.")
	flag.DurationVar(&c.minFlatWindow, "min-flat-window", 3*time.Minute, "Shortest work after warm-up whose slopes are judged; a shorter run prints them unjudged.")
	flag.Float64Var(&c.maxGorSlope, "max-goroutine-slope", 10, "Steepest goroutine slope after warm-up that counts as flat, per minute.")
	flag.Float64Var(&c.goroutineSlack, "goroutine-slack", 50, "Goroutines above the level before the burst that the manager may still have once the abandoned sessions timed out.")
	flag.Float64Var(&c.heapSlackMB, "heap-slack", 16, "MiB of heap goal (go_memstats_next_gc_bytes, twice the heap live at the last collection) above the level before the burst that the manager may still have after a collection past the abandoned sessions' timeout.")
	flag.StringVar(&c.managerFlags, "manager-flags", "", "More flags for the manager, space-separated.")
	flag.Parse()
	code, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// freePort is a loopback address no one listens on now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// wait polls cond until it holds or the timeout passes.
func wait(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// run starts the control plane, the accounts and the manager, then runs the soak. It
// is over 80 lines because each step defers the stop of what it started, so the
// steps stay in one function, in order.
func run(c config) (int, error) {
	if c.assets == "" {
		return 0, errors.New("no control plane binaries: pass --assets or set KUBEBUILDER_ASSETS (make soak does)")
	}
	if c.sessions < 1 || c.perAccount < 1 || c.live < 1 {
		return 0, errors.New("--sessions, --sessions-per-account and --live must be at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
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
	defer func() { _ = env.Stop() }()
	user, err := env.AddUser(envtest.User{Name: "sandbar-soak", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return 0, err
	}
	kubeconfigData, err := user.KubeConfig()
	if err != nil {
		return 0, err
	}
	kubeconfig, err := filepath.Abs(filepath.Join(c.dir, "kubeconfig"))
	if err != nil {
		return 0, err
	}
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
	fmt.Println(">> applying config/samples and the soak's accounts")
	if err := testenv.ApplySamples(ctx, k8s); err != nil {
		return 0, err
	}
	accounts := (c.sessions+c.perAccount-1)/c.perAccount + 1 // the last one opens the burst
	for i := range accounts {
		for _, obj := range soakAccount(i) {
			if err := k8s.Create(ctx, obj); err != nil {
				return 0, err
			}
		}
	}

	// The manager.
	mcpAddr, err := freePort()
	if err != nil {
		return 0, err
	}
	probeAddr, err := freePort()
	if err != nil {
		return 0, err
	}
	metricsAddr, err := freePort()
	if err != nil {
		return 0, err
	}
	logFile, err := os.Create(filepath.Join(c.dir, "manager.log"))
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	args := []string{
		"--mcp-bind-address=" + mcpAddr, "--health-probe-bind-address=" + probeAddr,
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false",
		"--mcp-session-timeout=" + c.sessionTimeout.String(),
		"--mcp-rate-limit=" + strconv.FormatFloat(c.rateLimit, 'f', -1, 64),
		"--mcp-rate-burst=" + strconv.Itoa(c.rateBurst),
		"--audit-log=" + filepath.Join(c.dir, "audit.jsonl"),
	}
	args = append(args, strings.Fields(c.managerFlags)...)
	fmt.Printf(">> starting %s %s\n", c.manager, strings.Join(args, " "))
	cmd := exec.Command(c.manager, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the manager: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
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
	}()
	alive := func() bool {
		select {
		case err := <-exited:
			exited <- err
			return false
		default:
			return true
		}
	}
	ready := func() bool {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if err := wait(ctx, 2*time.Minute, "the manager ready", func() bool { return !alive() || ready() }); err != nil || !alive() {
		return 0, fmt.Errorf("the manager did not become ready (see %s): %v", logFile.Name(), err)
	}
	for _, name := range []string{"zorp.spaceboot", "zorp.wearer"} {
		var cl metav1alpha1.Class
		if err := wait(ctx, 2*time.Minute, "Class "+name+" ready", func() bool {
			return k8s.Get(ctx, client.ObjectKey{Name: name}, &cl) == nil && readyCondition(cl.Status.Conditions)
		}); err != nil {
			return 0, err
		}
	}
	// Wearers to export: a fixed set, so an export's size stays the same.
	for i := range 30 {
		w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"handle": fmt.Sprintf("soak/wearer-%d", i)}}}
		w.SetAPIVersion("zorp.sandbar.dev/v1")
		w.SetKind("Wearer")
		w.SetNamespace(namespace)
		w.SetName(fmt.Sprintf("soak-wearer-%d", i))
		if err := k8s.Create(ctx, w); err != nil {
			return 0, fmt.Errorf("seeding wearers: %w", err)
		}
	}
	tokens := make([]string, accounts)
	for i := range accounts {
		if tokens[i], err = apikey.Issue(ctx, k8s, namespace, accountName(i)); err != nil {
			return 0, err
		}
	}
	s := &soak{cfg: c, k8s: k8s, url: "http://" + mcpAddr + "/mcp", metrics: "http://" + metricsAddr + "/metrics",
		pid: cmd.Process.Pid, tokens: tokens, rec: newRecorder()}
	for i, tok := range tokens {
		if err := wait(ctx, time.Minute, "account "+accountName(i)+" served", func() bool { return s.accepts(tok) }); err != nil {
			return 0, err
		}
	}
	code := s.run(ctx)
	if !alive() {
		fmt.Printf("FAIL: the manager exited during the soak (see %s)\n", logFile.Name())
		code = 1
	}
	return code, nil
}

// readyCondition says whether conditions hold Ready=True.
func readyCondition(conds []metav1.Condition) bool {
	for _, c := range conds {
		if c.Type == "Ready" {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func accountName(i int) string { return fmt.Sprintf("soak-%d", i) }

// soakAccount is an MCP account that may call every tool its sessions use, acting
// as a Kubernetes ServiceAccount of its own that may edit the instances of the
// namespace (each Kubernetes identity gets its own client in the manager, with its
// own --kube-api-qps, as each tenant's does).
func soakAccount(i int) []client.Object {
	name := accountName(i)
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-sandbar-editor"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-editor"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		},
		&metav1alpha1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: metav1alpha1.ServiceAccountSpec{
				ServiceName:        name,
				ServiceAccountName: name,
				APIKeySecretRef:    metav1alpha1.SecretKeyRef{Name: name + "-key"},
				Permissions:        metav1alpha1.Permissions{Tools: []string{"*", "sandbar_entity_delete"}},
			},
		},
	}
}

// collectChunks deletes the result chunks (Secrets) of deleted processes, as the
// garbage collector of a real cluster does through their owner references: the
// local control plane runs no controller manager.
func collectChunks(ctx context.Context, k8s client.Client) {
	var secrets corev1.SecretList
	if k8s.List(ctx, &secrets, client.InNamespace(namespace), client.HasLabels{builtin.LabelResultOf}) != nil {
		return
	}
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		var p metav1alpha1.WorkflowProcess
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sec.Labels[builtin.LabelResultOf]}, &p); err != nil &&
			client.IgnoreNotFound(err) == nil {
			_ = k8s.Delete(ctx, sec)
		}
	}
}
