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

package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// replica is one manager process, started again after each kill on the same ports.
type replica struct {
	index                                      int
	mcpAddr, probeAddr, metricsAddr, pprofAddr string

	// Of the running process (guarded by fleet.mu).
	cmd     *exec.Cmd
	exited  chan struct{}
	killed  bool
	started time.Time
	lives   []*life
}

// life is one process of a replica, from its start to its end, and its samples.
type life struct {
	started, ended time.Time
	killed         bool
	samples        []sample
}

type sample struct {
	at         time.Time
	rssMiB     float64
	heapMiB    float64
	goroutines float64
	leads      bool
}

// fleet is the manager replicas.
type fleet struct {
	cfg                       config
	dir, kubeconfig, tokenKey string
	mu                        sync.Mutex
	replicas                  []*replica
	unexpected                []string
	kills                     int
	rng                       *rand.Rand
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// add makes replica i and starts it.
func (f *fleet) add(i int) error {
	r := &replica{index: i}
	for _, addr := range []*string{&r.mcpAddr, &r.probeAddr, &r.metricsAddr, &r.pprofAddr} {
		a, err := freePort()
		if err != nil {
			return err
		}
		*addr = a
	}
	f.mu.Lock()
	f.replicas = append(f.replicas, r)
	if f.rng == nil {
		f.rng = rand.New(rand.NewPCG(1, 2))
	}
	f.mu.Unlock()
	return f.start(r)
}

// start runs r's manager process; its end is noted, and an end nobody asked for is
// a failure of the run.
func (f *fleet) start(r *replica) error {
	logFile, err := os.OpenFile(filepath.Join(f.dir, fmt.Sprintf("replica-%d.log", r.index)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(f.cfg.manager,
		"--mcp-bind-address="+r.mcpAddr, "--health-probe-bind-address="+r.probeAddr,
		"--metrics-bind-address="+r.metricsAddr, "--metrics-secure=false", "--pprof-bind-address="+r.pprofAddr,
		"--leader-elect", "--leader-election-namespace="+namespace,
		"--mcp-call-timeout="+f.cfg.callTimeout.String(), "--mcp-token-key-file="+f.tokenKey,
		"--mcp-session-timeout="+sessionTimeout.String(), "--mcp-rate-limit=200", "--mcp-rate-burst=400", "--audit-log=off")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting replica %d: %w", r.index, err)
	}
	l := &life{started: time.Now()}
	f.mu.Lock()
	r.cmd, r.exited, r.killed, r.started = cmd, make(chan struct{}), false, l.started
	r.lives = append(r.lives, l)
	exited := r.exited
	f.mu.Unlock()
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		f.mu.Lock()
		l.ended, l.killed = time.Now(), r.killed
		if !r.killed {
			f.unexpected = append(f.unexpected, fmt.Sprintf("replica %d (pid %d) ended on its own after %s: %v (see %s)",
				r.index, cmd.Process.Pid, time.Since(l.started).Truncate(time.Second), err, logFile.Name()))
		}
		f.mu.Unlock()
		close(exited)
	}()
	return nil
}

// alive says whether r's process runs.
func (r *replica) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// kill ends r's process with SIGKILL, as a node failure would, and starts it again.
func (f *fleet) kill(r *replica) error {
	f.mu.Lock()
	r.killed = true
	cmd, exited := r.cmd, r.exited
	f.kills++
	f.mu.Unlock()
	_ = cmd.Process.Kill()
	<-exited
	return f.start(r)
}

// stopAll ends every replica with SIGTERM, and SIGKILL after 15 s.
func (f *fleet) stopAll() {
	f.mu.Lock()
	rs := append([]*replica(nil), f.replicas...)
	for _, r := range rs {
		r.killed = true
	}
	f.mu.Unlock()
	for _, r := range rs {
		if r.alive() {
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, r := range rs {
		select {
		case <-r.exited:
		case <-time.After(15 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	}
}

// url is the MCP endpoint of a replica chosen at random.
func (f *fleet) url() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.replicas[f.rng.IntN(len(f.replicas))]
	return "http://" + r.mcpAddr + "/mcp"
}

func (f *fleet) all() []*replica {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*replica(nil), f.replicas...)
}

func get(url string) (int, string) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return resp.StatusCode, b.String()
}

// metric is the value of a metric line with that prefix in a scrape.
func metric(scrape, prefix string) (float64, bool) {
	for line := range strings.Lines(scrape) {
		if rest, ok := strings.CutPrefix(line, prefix); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			fields := strings.Fields(line)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// leader is the replica that leads now (nil when none says so).
func (f *fleet) leader() *replica {
	for _, r := range f.all() {
		if code, body := get("http://" + r.metricsAddr + "/metrics"); code == http.StatusOK {
			if v, ok := metric(body, "leader_election_master_status"); ok && v == 1 {
				return r
			}
		}
	}
	return nil
}

// ready waits until every replica answers /readyz.
func (f *fleet) ready(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, r := range f.all() {
		for {
			if code, _ := get("http://" + r.probeAddr + "/readyz"); code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("replica %d was not ready within %s (see %s)", r.index, timeout, f.dir)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// sample reads each live replica's RSS (from /proc) and goroutines (its metrics).
func (f *fleet) sample() {
	for _, r := range f.all() {
		f.mu.Lock()
		cmd, l := r.cmd, r.lives[len(r.lives)-1]
		f.mu.Unlock()
		if !r.alive() {
			continue
		}
		s := sample{at: time.Now()}
		if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
			for line := range strings.Lines(string(status)) {
				if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
					s.rssMiB = kb / 1024
				}
			}
		}
		if code, body := get("http://" + r.metricsAddr + "/metrics"); code == http.StatusOK {
			s.goroutines, _ = metric(body, "go_goroutines")
			heap, _ := metric(body, "go_memstats_heap_inuse_bytes")
			s.heapMiB = heap / (1 << 20)
			lead, _ := metric(body, "leader_election_master_status")
			s.leads = lead == 1
		}
		if s.rssMiB == 0 || s.goroutines == 0 {
			continue // not up yet, or just ended
		}
		f.mu.Lock()
		l.samples = append(l.samples, s)
		f.mu.Unlock()
	}
}

func accountName(i int) string { return fmt.Sprintf("chaos-%d", i) }

// chaosAccount is an MCP account that may call every tool, acting as a Kubernetes
// ServiceAccount of its own that may edit the namespace's instances and processes.
func chaosAccount(i int) []client.Object {
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
				Permissions:        metav1alpha1.Permissions{Tools: []string{"*"}},
			},
		},
	}
}
