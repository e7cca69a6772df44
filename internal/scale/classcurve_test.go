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

// Package scale_test measures what a manager costs as its metamodel grows: a manager
// binary, built from cmd as a cluster runs it, on a control plane of its own.
package scale_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/instances"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The knobs (environment variables) of BenchmarkClassCurve:
//
//	SANDBAR_BENCH_CLASSES    the steps of the curve, in classes (default 100,500,1000)
//	SANDBAR_BENCH_INSTANCES  instances created after the last step (default 10000)
//	SANDBAR_BENCH_MANAGER    a manager binary to measure instead of one built from ./cmd
//	SANDBAR_BENCH_PROFILES   a directory for the manager's goroutine and heap profiles at each step
//	SANDBAR_BENCH_GOMEMLIMIT the manager's GOMEMLIMIT (as 100MiB; default none)
//	SANDBAR_BENCH_MEMORY_LIMIT runs the manager in a memory cgroup of its own with this
//	                         limit (as 128Mi, a container's limits.memory), which its Go
//	                         runtime reads as a pod's; needs a writable cgroup file system
const (
	envClasses   = "SANDBAR_BENCH_CLASSES"
	envInstances = "SANDBAR_BENCH_INSTANCES"
	envManager   = "SANDBAR_BENCH_MANAGER"
	envProfiles  = "SANDBAR_BENCH_PROFILES"
	envMemLimit  = "SANDBAR_BENCH_GOMEMLIMIT"
	envCgroup    = "SANDBAR_BENCH_MEMORY_LIMIT"
)

const mib = 1 << 20

// BenchmarkClassCurve applies generated Classes (each with its CRD) to a control plane
// of its own, with a manager process serving them, and prints at each step the
// manager's RSS, heap and goroutines and the API server's RSS; the baseline is the
// same manager with none of them, measured first in the same run. The metrics
// reported are the last step's figures and the cost per class (the difference to
// the baseline over the classes).
func BenchmarkClassCurve(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run make bench")
	}
	steps := []int{100, 500, 1000}
	if v := os.Getenv(envClasses); v != "" {
		steps = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want classes as 100,500,1000", envClasses, v)
			}
			steps = append(steps, n)
		}
		slices.Sort(steps)
	}
	instances := 10000
	if v := os.Getenv(envInstances); v != "" {
		var err error
		if instances, err = strconv.Atoi(v); err != nil || instances < 0 {
			b.Fatalf("%s=%q: want a number", envInstances, v)
		}
	}
	c := newCurve(b)
	defer c.stop()

	base := c.measure(b, "baseline", 0, 0, 0)
	last := base
	for _, n := range steps {
		took := c.applyClasses(b, n)
		last = c.measure(b, "classes", n, 0, took)
	}
	if instances > 0 {
		took := c.createInstances(b, steps[len(steps)-1], instances)
		last = c.measure(b, "instances", steps[len(steps)-1], instances, took)
		c.listAll(b, instances)
	}
	c.subscribed(b, last)
	c.found(b, last)
	if c.cgroup != nil {
		peak, kills, err := c.cgroup.stats()
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("classcurve: memory cgroup limited to %s: peak usage %.1f MiB (page cache included), %d processes killed for memory\n",
			os.Getenv(envCgroup), peak, kills)
		b.ReportMetric(peak, "MiB-cgroup-peak")
		b.ReportMetric(float64(kills), "oom-kills")
	}

	n := float64(last.classes)
	b.ReportMetric(last.rss, "MiB-rss")
	b.ReportMetric(base.rss, "MiB-rss-baseline")
	b.ReportMetric(last.goroutines, "goroutines")
	b.ReportMetric(base.goroutines, "goroutines-baseline")
	b.ReportMetric(last.apiRSS, "MiB-apiserver")
	b.ReportMetric(base.apiRSS, "MiB-apiserver-baseline")
	b.ReportMetric((last.rss-base.rss)*1024/n, "KiB-rss/class")
	b.ReportMetric((last.goroutines-base.goroutines)/n, "goroutines/class")
	b.ReportMetric((last.apiRSS-base.apiRSS)/n, "MiB-apiserver/class")
}

// curve is the control plane, the manager and what the benchmark made.
type curve struct {
	env        *envtest.Environment
	k8s        client.Client
	apiPID     int
	mgr        *exec.Cmd
	cgroup     *memCgroup
	exited     chan struct{}
	dir        string
	mcpURL     string
	metrics    string
	pprof      string
	token      string
	profiles   string
	classes    int
	instancesN int
}

type sample struct {
	phase                                  string
	classes, instances                     int
	rss, heap, goroutines, apiRSS, watches float64
	// cachedFinds is how many finds' lists the manager has read from its cache, and
	// fullFinds how many it listed through the API server as its cache was full.
	cachedFinds, fullFinds float64
	// anon is the part of rss that is no file's pages (the binary's code is).
	anon float64
	// gomemlimit is the manager's Go memory limit in bytes (math.MaxInt64: none).
	gomemlimit float64
	took       time.Duration
}

func newCurve(b *testing.B) *curve {
	b.Helper()
	testenv.SetLogger()
	c := &curve{profiles: os.Getenv(envProfiles)}
	var err error
	if c.dir, err = os.MkdirTemp("", "sandbar-classcurve-"); err != nil {
		b.Fatal(err)
	}
	if c.env, err = testenv.Start(); err != nil {
		b.Fatal(err)
	}
	cfg := c.env.Config
	cfg.QPS, cfg.Burst = 500, 1000
	if c.k8s, err = client.New(cfg, client.Options{Scheme: controllers.NewScheme()}); err != nil {
		c.stop()
		b.Fatal(err)
	}
	if c.apiPID, err = apiServerPID(cfg.Host); err != nil {
		c.stop()
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := testenv.ApplySamples(ctx, c.k8s); err != nil {
		c.stop()
		b.Fatal(err)
	}
	// The sample account lists the benchmark's instances too.
	objs := []client.Object{
		&metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: "bench.name"},
			Spec: metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString, Description: "A name."}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bench-instances"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"bench.sandbar.dev"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-instances"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bench-instances"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "claude"}}},
	}
	for _, o := range objs {
		if err := c.k8s.Create(ctx, o); err != nil {
			c.stop()
			b.Fatal(err)
		}
	}
	if c.token, err = apikey.Issue(ctx, c.k8s, "default", "claude"); err != nil {
		c.stop()
		b.Fatal(err)
	}
	if err := c.startManager(); err != nil {
		c.stop()
		b.Fatal(err)
	}
	return c
}

func (c *curve) stop() {
	if c.mgr != nil && c.mgr.Process != nil {
		_ = c.mgr.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			_ = c.mgr.Process.Kill()
			<-c.exited
		}
	}
	if c.cgroup != nil {
		c.cgroup.remove()
	}
	if c.env != nil {
		_ = c.env.Stop()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// apiServerPID finds the kube-apiserver serving host (https://127.0.0.1:PORT).
func apiServerPID(host string) (int, error) {
	u, err := url.Parse(host)
	if err != nil {
		return 0, err
	}
	port := u.Port()
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], "kube-apiserver") && slices.Contains(args, "--secure-port="+port) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no kube-apiserver process serves port %s", port)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startManager runs the manager binary (built from ./cmd unless SANDBAR_BENCH_MANAGER
// names one) and waits until it is ready.
func (c *curve) startManager() error {
	bin := os.Getenv(envManager)
	if bin == "" {
		bin = filepath.Join(c.dir, "manager")
		build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd")
		build.Dir = testenv.RepoRoot()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building the manager: %v\n%s", err, out)
		}
	}
	admin, err := c.env.AddUser(envtest.User{Name: "classcurve-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return err
	}
	var addrs [4]string
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return err
		}
	}
	c.mcpURL, c.metrics, c.pprof = "http://"+addrs[0]+"/mcp", "http://"+addrs[2]+"/metrics", "http://"+addrs[3]+"/debug/pprof"
	log, err := os.Create(filepath.Join(c.dir, "manager.log"))
	if err != nil {
		return err
	}
	argv := []string{bin, "--kubeconfig=" + kubeconfig, "--mcp-bind-address=" + addrs[0], "--health-probe-bind-address=" + addrs[1],
		"--metrics-bind-address=" + addrs[2], "--metrics-secure=false", "--pprof-bind-address=" + addrs[3],
		"--mcp-rate-limit=0", "--audit-log=off", "--mcp-request-log=off"}
	if v := os.Getenv(envCgroup); v != "" {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Value() <= 0 {
			return fmt.Errorf("%s=%q: want a memory limit as 128Mi", envCgroup, v)
		}
		if c.cgroup, err = newMemCgroup(q.Value()); err != nil {
			return err
		}
		if err := evict(bin); err != nil {
			return err
		}
		argv = c.cgroup.wrap(argv)
	}
	c.mgr = exec.Command(argv[0], argv[1:]...)
	c.mgr.Stdout, c.mgr.Stderr = log, log
	c.mgr.Env = os.Environ()
	if v := os.Getenv(envMemLimit); v != "" {
		c.mgr.Env = append(c.mgr.Env, "GOMEMLIMIT="+v)
	}
	if err := c.mgr.Start(); err != nil {
		return err
	}
	c.exited = make(chan struct{})
	go func() { _ = c.mgr.Wait(); _ = log.Close(); close(c.exited) }()
	return c.wait(2*time.Minute, "the manager ready", func() (bool, error) {
		select {
		case <-c.exited:
			out, _ := os.ReadFile(log.Name())
			return false, fmt.Errorf("the manager exited:\n%s", tail(string(out), 40))
		default:
		}
		resp, err := http.Get("http://" + addrs[1] + "/readyz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// wait polls cond every 200 ms until it holds, fails or the timeout passes.
func (c *curve) wait(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not after %s%s", what, timeout, c.memoryEvents())
		}
		select {
		case <-c.exited:
			return fmt.Errorf("%s: the manager exited%s", what, c.memoryEvents())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// memoryEvents says what the memory cgroup saw, when the manager runs in one.
func (c *curve) memoryEvents() string {
	if c.cgroup == nil {
		return ""
	}
	peak, kills, err := c.cgroup.stats()
	if err != nil {
		return fmt.Sprintf(" (memory cgroup: %v)", err)
	}
	return fmt.Sprintf(" (memory cgroup: peak usage %.1f MiB, %d processes killed for memory)", peak, kills)
}

func className(i int) string { return fmt.Sprintf("bench.c%04d", i) }
func classKind(i int) string { return fmt.Sprintf("C%04d", i) }

// parallel runs f(i) for i in [from, to) on 16 workers and returns the first error.
func parallel(from, to int, f func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(next)
		for i := from; i < to; i++ {
			select {
			case next <- i:
			case err := <-errs:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// applyClasses creates classes up to n and waits until every one is Ready (its CRD
// established) and served by the manager: the time from the first create to that.
func (c *curve) applyClasses(b *testing.B, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	err := parallel(c.classes, n, func(i int) error {
		return c.k8s.Create(ctx, &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: className(i)},
			Spec: metav1alpha1.ClassSpec{Prefix: "bench", Kind: classKind(i), Description: "A generated class of the benchmark.",
				Slots: []metav1alpha1.SlotRef{{Property: "bench.name", Required: true}}}})
	})
	if err != nil {
		b.Fatal(err)
	}
	c.classes = n
	err = c.wait(15*time.Minute, fmt.Sprintf("%d classes ready", n), func() (bool, error) {
		var list metav1alpha1.ClassList
		if err := c.k8s.List(ctx, &list); err != nil {
			return false, err
		}
		ready := 0
		for _, cl := range list.Items {
			if strings.HasPrefix(cl.Name, "bench.") && apimeta.IsStatusConditionTrue(cl.Status.Conditions, metav1alpha1.ConditionReady) {
				ready++
			}
		}
		return ready == n, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// Served: the last class's template is listed.
	cs := c.session(b, nil)
	defer cs.Close()
	want := "mcp://sandbar/bench/" + classKind(n-1) + "/{namespace}/{name}{?format}"
	err = c.wait(5*time.Minute, "the classes served", func() (bool, error) {
		for t, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return false, nil
			}
			if t.URITemplate == want {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// createInstances creates n instances spread over the classes, in default.
func (c *curve) createInstances(b *testing.B, classes, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	err := parallel(0, n, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": fmt.Sprintf("Instance %d", i)}}}
		u.SetAPIVersion("bench.sandbar.dev/v1")
		u.SetKind(classKind(i % classes))
		u.SetNamespace("default")
		u.SetName(fmt.Sprintf("i%05d", i))
		return c.k8s.Create(ctx, u)
	})
	if err != nil {
		b.Fatal(err)
	}
	c.instancesN = n
	return time.Since(start)
}

func (c *curve) session(b *testing.B, opts *mcp.ClientOptions) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "classcurve", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: c.mcpURL, HTTPClient: &http.Client{Transport: testenv.Bearer{Token: c.token}}, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// listAll pages through resources/list and prints how long a client takes to list
// every instance.
func (c *curve) listAll(b *testing.B, want int) {
	b.Helper()
	cs := c.session(b, nil)
	defer cs.Close()
	start := time.Now()
	got, pages, cursor := 0, 0, ""
	for {
		res, err := cs.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			b.Fatal(err)
		}
		pages++
		for _, r := range res.Resources {
			if strings.HasPrefix(r.URI, "mcp://sandbar/bench/") {
				got++
			}
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	took := time.Since(start)
	fmt.Printf("classcurve: resources/list of %d instances (%d listed) in %d pages: %s\n", want, got, pages, took.Round(time.Millisecond))
	b.ReportMetric(float64(took.Milliseconds()), "ms-list-all")
}

// found measures the manager once a session has found the instances of as many
// classes as the find cache holds (instances.MaxClasses), each read from the cache:
// what an informer and its instances cost.
func (c *curve) found(b *testing.B, idle sample) {
	b.Helper()
	if c.instancesN == 0 {
		return
	}
	cs := c.session(b, nil)
	defer cs.Close()
	n := min(idle.classes, instances.MaxClasses)
	findAll := func() {
		for i := range n {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_entity_find",
				Arguments: map[string]any{"class": "bench/" + classKind(i), "limit": 1}})
			if err != nil || res.IsError {
				b.Fatalf("find bench/%s: %v %v", classKind(i), err, res)
			}
		}
	}
	start := time.Now()
	findAll() // the first find of a class starts its informer and lists through the API server
	var cached float64
	if err := c.wait(2*time.Minute, "every find read from the cache, or refused it", func() (bool, error) {
		before, err := c.sample()
		if err != nil {
			return false, err
		}
		findAll()
		after, err := c.sample()
		cached = after.cachedFinds - before.cachedFinds
		return cached+after.fullFinds-before.fullFinds == float64(n), err
	}); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("classcurve: %d classes found, %.0f of them from the cache (%.0f instances), in %s\n",
		n, cached, cached*float64(c.instancesN/idle.classes), time.Since(start).Round(time.Millisecond))
	found := c.measure(b, "found", idle.classes, idle.instances, 0)
	b.ReportMetric(found.rss-idle.rss, "MiB-rss-found")
	b.ReportMetric(found.heap-idle.heap, "MiB-heap-found")
	b.ReportMetric(found.goroutines-idle.goroutines, "goroutines-found")
}

// subscribed measures the manager while one session subscribes to an instance of
// one class, and again once it has closed.
func (c *curve) subscribed(b *testing.B, idle sample) {
	b.Helper()
	if c.instancesN == 0 {
		return
	}
	updated := make(chan string, 16)
	cs := c.session(b, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	uri := resources.InstanceURI("bench", classKind(0), "default", "i00000")
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		b.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("bench.sandbar.dev/v1")
	u.SetKind(classKind(0))
	u.SetNamespace("default")
	u.SetName("i00000")
	start := time.Now()
	if err := c.k8s.Patch(context.Background(), u, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"name":"Touched"}}`))); err != nil {
		b.Fatal(err)
	}
	select {
	case <-updated:
		fmt.Printf("classcurve: resources/updated %s after the change\n", time.Since(start).Round(time.Millisecond))
	case <-time.After(time.Minute):
		b.Fatal("no resources/updated in a minute")
	}
	c.measure(b, "subscribed", idle.classes, idle.instances, 0)
	_ = cs.Close()
}

// measure waits until the manager is idle (goroutines steady), collects garbage in
// it, and prints one line of the curve.
func (c *curve) measure(b *testing.B, phase string, classes, instances int, took time.Duration) sample {
	b.Helper()
	var s sample
	prev := -1.0
	err := c.wait(2*time.Minute, "the manager idle", func() (bool, error) {
		var err error
		s, err = c.sample()
		if err != nil {
			return false, err
		}
		steady := s.goroutines == prev
		prev = s.goroutines
		return steady, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// A heap profile with gc=1 collects garbage first; RSS is read after it.
	if err := c.profile("heap?gc=1", fmt.Sprintf("heap-%s-%d.pb.gz", phase, classes)); err != nil {
		b.Fatal(err)
	}
	if err := c.profile("goroutine?debug=1", fmt.Sprintf("goroutines-%s-%d.txt", phase, classes)); err != nil {
		b.Fatal(err)
	}
	if s, err = c.sample(); err != nil {
		b.Fatal(err)
	}
	s.phase, s.classes, s.instances, s.took = phase, classes, instances, took
	fmt.Printf("classcurve: %-10s classes=%5d instances=%6d manager: rss=%7.1f MiB (anon %5.1f) heap=%7.1f MiB goroutines=%6.0f watches=%3.0f  apiserver: rss=%7.1f MiB  took=%s%s\n",
		s.phase, s.classes, s.instances, s.rss, s.anon, s.heap, s.goroutines, s.watches, s.apiRSS, s.took.Round(100*time.Millisecond), s.memLimit())
	return s
}

// profile fetches a profile of the manager, kept in SANDBAR_BENCH_PROFILES if set.
func (c *curve) profile(query, name string) error {
	resp, err := http.Get(c.pprof + "/" + query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	w := io.Discard
	if c.profiles != "" {
		if err := os.MkdirAll(c.profiles, 0o755); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(c.profiles, name))
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

func (c *curve) sample() (sample, error) {
	var s sample
	var err error
	if s.rss, err = statusMiB(c.mgr.Process.Pid, "VmRSS"); err != nil {
		return s, err
	}
	if s.anon, err = statusMiB(c.mgr.Process.Pid, "RssAnon"); err != nil {
		return s, err
	}
	if s.apiRSS, err = statusMiB(c.apiPID, "VmRSS"); err != nil {
		return s, err
	}
	resp, err := http.Get(c.metrics)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch {
		case name == "go_goroutines":
			s.goroutines = v
		case name == "go_memstats_heap_inuse_bytes":
			s.heap = v / mib
		case name == "go_gc_gomemlimit_bytes":
			s.gomemlimit = v
		case strings.HasPrefix(name, "sandbar_mcp_instance_watches{"):
			s.watches += v
		case name == instances.ListsMetric+`{source="`+instances.Cached+`"}`:
			s.cachedFinds = v
		case name == instances.ListsMetric+`{source="`+instances.Full+`"}`:
			s.fullFinds = v
		}
	}
	return s, sc.Err()
}

// memLimit is the Go memory limit, when the manager has one, for a curve line.
func (s sample) memLimit() string {
	if s.gomemlimit <= 0 || s.gomemlimit >= math.MaxInt64 {
		return ""
	}
	return fmt.Sprintf("  GOMEMLIMIT=%.1f MiB", s.gomemlimit/mib)
}

// statusMiB is a figure of /proc/<pid>/status in kB (VmRSS, RssAnon), in MiB.
func statusMiB(pid int, field string) (float64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
