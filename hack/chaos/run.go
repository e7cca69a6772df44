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
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

const (
	// sessionTimeout is the replicas' --mcp-session-timeout.
	sessionTimeout = 2 * time.Minute
	// goroutineSlack and heapSlackMiB are what a replica may hold, once idle, above
	// the level of its role (leader or follower) before the load.
	goroutineSlack    = 50
	heapSlackMiB      = 16
	sessionRevision   = "2025-11-25"
	statelessRevision = "2026-07-28"
	// slack is what an answer may take past the call timeout.
	slack = 2 * time.Second
)

// chaos is one run: the fleet, the clients' outcomes, the creates that succeeded.
type chaos struct {
	cfg       config
	fleet     *fleet
	k8s       client.Client
	tokens    []string
	apiserver int

	calls    atomic.Int64
	mu       sync.Mutex
	outcomes map[string]int
	late     []string
	// created are the idempotency labels of the creates that answered success.
	created map[string]string
	pauses  int
	paused  time.Duration
	// before is what a leader and a follower held before the load (by leads).
	before map[bool]sample
}

func newRun(c config, f *fleet, k8s client.Client, tokens []string, apiserver int) *chaos {
	return &chaos{cfg: c, fleet: f, k8s: k8s, tokens: tokens, apiserver: apiserver,
		outcomes: map[string]int{}, created: map[string]string{}, before: map[bool]sample{}}
}

// note counts an outcome, and an answer that came past its deadline.
func (r *chaos) note(op, outcome string, took time.Duration) {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes[op+" "+outcome]++
	if took > r.cfg.callTimeout+slack {
		r.late = append(r.late, fmt.Sprintf("%s (%s) took %s", op, outcome, took.Truncate(time.Millisecond)))
	}
}

func (r *chaos) do(ctx context.Context) int {
	start := time.Now()
	work, cancel := context.WithTimeout(ctx, r.cfg.duration)
	defer cancel()
	var wg sync.WaitGroup
	fmt.Printf(">> %d clients of both revisions, %.0f%% hostile calls, for %s; the API server paused %s every %s; the leader killed every %s\n",
		r.cfg.workers, r.cfg.hostile*100, r.cfg.duration, r.cfg.pauseFor, r.cfg.pauseEvery, r.cfg.killEvery)
	if err := r.baseline(ctx); err != nil {
		fmt.Println("FAIL:", err)
		return 1
	}
	fmt.Printf("%8s %9s %8s %8s\n", "time", "calls", "late", "kills")
	wg.Go(func() { r.sampler(work, start) })
	wg.Go(func() { r.pauser(work) })
	wg.Go(func() { r.killer(work) })
	for i := range r.cfg.workers {
		wg.Go(func() { r.worker(work, i) })
	}
	wg.Wait()
	// The API server runs again; every replica comes back before the checks.
	_ = syscall.Kill(r.apiserver, syscall.SIGCONT)
	took := time.Since(start)
	if err := r.fleet.ready(ctx, 2*time.Minute); err != nil {
		fmt.Println("FAIL:", err)
		return 1
	}
	// The clients are gone: once their sessions have timed out, each replica holds
	// what it held before the load, give or take, or something leaked.
	fmt.Printf(">> idle for the sessions' timeout (%s) and 30 s more\n", sessionTimeout)
	select {
	case <-ctx.Done():
	case <-time.After(sessionTimeout + 30*time.Second):
	}
	r.fleet.sample()
	return r.report(ctx, took)
}

func tick(ctx context.Context, every time.Duration, f func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// baseline waits until a replica leads, and samples every replica before the
// load: what a leader and a follower hold when idle. A leader runs the controllers
// (their workers, queues and watches: about 100 goroutines more than a follower),
// so a replica's level once idle is compared with that of the role it has then.
func (r *chaos) baseline(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for r.fleet.leader() == nil {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("no replica leads a minute after all were ready")
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.fleet.sample()
	r.fleet.mu.Lock()
	defer r.fleet.mu.Unlock()
	for _, rep := range r.fleet.replicas {
		if l := rep.lives[len(rep.lives)-1]; len(l.samples) > 0 {
			s := l.samples[0]
			if _, ok := r.before[s.leads]; !ok {
				r.before[s.leads] = s
			}
		}
	}
	if len(r.before) < 2 {
		return errors.New("the replicas were not one leader and one follower before the load")
	}
	return nil
}

func (r *chaos) sampler(ctx context.Context, start time.Time) {
	tick(ctx, r.cfg.sample, func() {
		r.fleet.sample()
		r.mu.Lock()
		late := len(r.late)
		r.mu.Unlock()
		r.fleet.mu.Lock()
		kills := r.fleet.kills
		r.fleet.mu.Unlock()
		fmt.Printf("%8s %9d %8d %8d\n", time.Since(start).Truncate(time.Second), r.calls.Load(), late, kills)
	})
}

// pauser stops the API server (SIGSTOP) for pauseFor, every pauseEvery.
func (r *chaos) pauser(ctx context.Context) {
	tick(ctx, r.cfg.pauseEvery, func() {
		_ = syscall.Kill(r.apiserver, syscall.SIGSTOP)
		t0 := time.Now()
		select {
		case <-ctx.Done():
		case <-time.After(r.cfg.pauseFor):
		}
		_ = syscall.Kill(r.apiserver, syscall.SIGCONT)
		r.mu.Lock()
		r.pauses++
		r.paused += time.Since(t0)
		r.mu.Unlock()
	})
}

// killer kills the leader (or, with none, a replica) every killEvery and starts it
// again.
func (r *chaos) killer(ctx context.Context) {
	tick(ctx, r.cfg.killEvery, func() {
		victim := r.fleet.leader()
		if victim == nil {
			victim = r.fleet.all()[0]
		}
		if err := r.fleet.kill(victim); err != nil {
			r.note("kill", "restart failed: "+err.Error(), 0)
		}
	})
}

// worker makes calls until ctx ends: valid ones through the go-sdk client of its
// revision, hostile ones raw or through the same client.
func (r *chaos) worker(ctx context.Context, i int) {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	revision := sessionRevision
	if i%2 == 1 {
		revision = statelessRevision
	}
	token := r.tokens[i%len(r.tokens)]
	w := &worker{r: r, id: i, rng: rng, revision: revision, token: token}
	defer w.close()
	for seq := 0; ctx.Err() == nil; seq++ {
		if rng.Float64() < r.cfg.hostile {
			w.hostile(ctx)
		} else {
			w.valid(ctx, seq)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(50+rng.IntN(200)) * time.Millisecond):
		}
	}
}

type worker struct {
	r        *chaos
	id       int
	rng      *rand.Rand
	revision string
	token    string
	cs       *mcp.ClientSession
}

func (w *worker) close() {
	if w.cs != nil {
		_ = w.cs.Close()
	}
}

// session is the worker's client, on a replica chosen at random; a new one after
// a failure (the replica may have been killed).
func (w *worker) session(ctx context.Context) (*mcp.ClientSession, error) {
	if w.cs != nil {
		return w.cs, nil
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-chaos", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, w.r.cfg.callTimeout+slack+3*time.Second)
	defer cancel()
	t0 := time.Now()
	cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: w.r.fleet.url(),
		HTTPClient: &http.Client{Transport: testenv.Bearer{Token: w.token}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: w.revision})
	if err != nil {
		w.r.note("connect", classify(err), time.Since(t0))
		return nil, err
	}
	w.r.note("connect", "ok", time.Since(t0))
	w.cs = cs
	return cs, nil
}

// call calls a tool and notes how it ended; out is the structured answer of a
// result that is not an error.
func (w *worker) call(ctx context.Context, op, name string, args any) (map[string]any, bool) {
	cs, err := w.session(ctx)
	if err != nil {
		return nil, false
	}
	cctx, cancel := context.WithTimeout(ctx, w.r.cfg.callTimeout+slack+3*time.Second)
	defer cancel()
	t0 := time.Now()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	took := time.Since(t0)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, false // the run ended
	case err != nil:
		w.r.note(op, classify(err), took)
		_ = w.cs.Close()
		w.cs = nil
		return nil, false
	case res.IsError:
		w.r.note(op, "isError", took)
		return nil, false
	}
	w.r.note(op, "ok", took)
	out, _ := res.StructuredContent.(map[string]any)
	return out, true
}

func (w *worker) valid(ctx context.Context, seq int) {
	switch w.rng.IntN(4) {
	case 0, 1:
		// A create with an idempotency key, retried with the same key until it
		// answers (at most three times), as a careful client does.
		key := fmt.Sprintf("chaos-%d-%d", w.id, seq)
		args := map[string]any{"class": "zorp/SpaceBoot",
			"attributes": map[string]any{"name": "Chaos " + key, "tentacleCount": 1 + w.rng.IntN(8)},
			"metadata":   map[string]any{"idempotencyKey": key}}
		for range 3 {
			if out, ok := w.call(ctx, "entity.create", "sandbar_entity_create", args); ok {
				labels, _ := out["labels"].(map[string]any)
				label, _ := labels[metav1alpha1.LabelIdempotencyKey].(string)
				w.r.mu.Lock()
				w.r.created[key] = label
				w.r.mu.Unlock()
				return
			}
			if ctx.Err() != nil {
				return
			}
		}
	case 2:
		w.call(ctx, "entity.find", "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "limit": 5})
	default:
		w.call(ctx, "schema.classes", "sandbar_schema_classes", map[string]any{})
	}
}

// hostile makes one hostile call: what an attacker or a broken client sends.
func (w *worker) hostile(ctx context.Context) {
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	switch w.rng.IntN(7) {
	case 0: // a forged continue token
		w.call(ctx, "forged continue", "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "continue": b64(`{"c":-1}`)})
	case 1: // a forged resultContinue
		w.call(ctx, "forged resultContinue", "sandbar_class_describe", map[string]any{"class": "zorp/SpaceBoot",
			"resultContinue": b64(`{"o":-7,"h":"x"}`)})
	case 2: // fuzzed arguments to a tool
		tools := []string{"sandbar_entity_create", "sandbar_entity_find", "sandbar_entity_update", "sandbar_workflow_start-process",
			"sandbar_class_instances", "sandbar_tasks_list", "sandbar_project_import"}
		w.call(ctx, "fuzzed arguments", tools[w.rng.IntN(len(tools))], fuzzed(w.rng))
	case 3: // a wrong token
		w.raw(ctx, "wrong token", "Bearer "+strings.Split(w.token, ":")[0]+":not-the-key", pingBody(), http.StatusUnauthorized)
	case 4: // an oversized body
		w.raw(ctx, "oversized body", "Bearer "+w.token, bytes.Repeat([]byte("x"), 2<<20), http.StatusRequestEntityTooLarge)
	case 5: // malformed JSON
		w.raw(ctx, "malformed body", "Bearer "+w.token, []byte(`{"jsonrpc":"2.0","id":1,"method":`), http.StatusBadRequest)
	default: // a flood of pings
		for range 40 {
			if ctx.Err() != nil {
				return
			}
			w.raw(ctx, "flood", "Bearer "+w.token, pingBody(), http.StatusOK)
		}
	}
}

func pingBody() []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
}

// raw POSTs a body as a client of the stateless revision and notes the status;
// want, when not 0, is the status it must get.
func (w *worker) raw(ctx context.Context, op, auth string, body []byte, want int) {
	cctx, cancel := context.WithTimeout(ctx, w.r.cfg.callTimeout+slack+3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodPost, w.r.fleet.url(), bytes.NewReader(body))
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", statelessRevision)
	req.Header.Set("Mcp-Method", "tools/list")
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(t0)
	if err != nil {
		if ctx.Err() == nil {
			w.r.note(op, classify(err), took)
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	outcome := fmt.Sprintf("HTTP %d", resp.StatusCode)
	// 429 (a limit) and 503 (tokens cannot be checked while the API server does not
	// answer) are designed answers to any request.
	if want != 0 && resp.StatusCode != want && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		outcome += fmt.Sprintf(" (wanted %d)", want)
	}
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
		outcome += " (a server error)"
	}
	w.r.note(op, outcome, took)
}

// fuzzed is a random JSON object of the shapes tool arguments take.
func fuzzed(rng *rand.Rand) map[string]any {
	values := []any{nil, -1, 1e300, "", strings.Repeat("x", 5000), "../../etc", "elsewhere/untouchable", []any{1, "a"},
		map[string]any{"$ne": 1}, true, "zorp/SpaceBoot", "zorp.spaceboot", "task-00000000", map[string]any{"name": map[string]any{}}}
	keys := []string{"class", "name", "namespace", "attributes", "metadata", "where", "limit", "continue", "taskId", "workflow",
		"subject", "input", "source", "format", "labelSelector", "resourceVersion"}
	out := map[string]any{}
	for range 1 + rng.IntN(5) {
		out[keys[rng.IntN(len(keys))]] = values[rng.IntN(len(values))]
	}
	return out
}

// classify is a short kind for a client error.
func classify(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "deadline exceeded"):
		return "no answer within the client's deadline"
	case strings.Contains(msg, "connection refused"):
		return "connection refused (replica down)"
	case strings.Contains(msg, "-32603") || strings.Contains(msg, "internal error"):
		return "internal error -32603"
	case strings.Contains(msg, "429") || strings.Contains(msg, "Too Many"):
		return "429"
	case strings.Contains(msg, "503"):
		return "503"
	case strings.Contains(msg, "404") || strings.Contains(msg, "session not found"):
		return "session gone (404)"
	case strings.Contains(msg, "EOF") || strings.Contains(msg, "reset by peer") || strings.Contains(msg, "failed to reconnect") ||
		strings.Contains(msg, "client is closing") || strings.Contains(msg, "connection closed"):
		return "session lost (its replica was killed)"
	}
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return "error: " + msg
}

// report prints the figures and the checks; 1 when a check fails. It is over 80 lines
// because it is the report's script, each check beside the figures it reads.
func (r *chaos) report(ctx context.Context, took time.Duration) int {
	code := 0
	fail := func(format string, args ...any) {
		fmt.Printf("FAIL: "+format+"\n", args...)
		code = 1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Printf("\n== %s: %d calls, %d API server pauses (%s in all), %d leader kills\n",
		took.Truncate(time.Second), r.calls.Load(), r.pauses, r.paused.Truncate(time.Second), r.fleet.kills)
	var keys []string
	for k := range r.outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("\noutcomes (operation, outcome: count)")
	for _, k := range keys {
		fmt.Printf("  %-70s %7d\n", k, r.outcomes[k])
		if strings.Contains(k, "internal error") || strings.Contains(k, "a server error") || strings.Contains(k, "wanted") {
			fail("%s: %d", k, r.outcomes[k])
		}
	}

	// 1. No replica ended on its own.
	r.fleet.mu.Lock()
	unexpected := append([]string(nil), r.fleet.unexpected...)
	r.fleet.mu.Unlock()
	if len(unexpected) == 0 {
		fmt.Println("\nPASS: no replica ended on its own (every end was a kill of the run's)")
	}
	for _, u := range unexpected {
		fail("%s", u)
	}

	// 2. Every answer within its deadline.
	if len(r.late) == 0 {
		fmt.Printf("PASS: every answer came within the call timeout and %s (%s)\n", slack, r.cfg.callTimeout+slack)
	} else {
		fail("%d answers came past %s; the first: %s", len(r.late), r.cfg.callTimeout+slack, strings.Join(r.late[:min(5, len(r.late))], "; "))
	}

	// 3. What each replica holds returns to its level before the load once the
	// clients are gone and their sessions timed out; the slopes under load are shown.
	fmt.Println("\nreplica lives (RSS MiB and goroutines: first, last, most; slope a minute over the second half of the load)")
	for _, rep := range r.fleet.all() {
		for n, l := range rep.lives {
			if len(l.samples) < 2 {
				continue
			}
			first, last := l.samples[0], l.samples[len(l.samples)-1]
			maxRSS, maxGor := 0.0, 0.0
			for _, s := range l.samples {
				maxRSS, maxGor = max(maxRSS, s.rssMiB), max(maxGor, s.goroutines)
			}
			half := l.samples[len(l.samples)/2:]
			rssSlope := slope(half, func(s sample) float64 { return s.rssMiB })
			gorSlope := slope(half, func(s sample) float64 { return s.goroutines })
			span := last.at.Sub(first.at)
			fmt.Printf("  replica %d life %d (%s, %s; %s): RSS %.1f %.1f %.1f (%+.2f/min); goroutines %.0f %.0f %.0f (%+.1f/min)\n",
				rep.index, n+1, span.Truncate(time.Second), endOf(l), roles(l.samples), first.rssMiB, last.rssMiB, maxRSS, rssSlope,
				first.goroutines, last.goroutines, maxGor, gorSlope)
			if l.ended.IsZero() {
				// Alive at the end: the last sample is the idle one, and its stacks are kept.
				if code, body := get("http://" + rep.pprofAddr + "/debug/pprof/goroutine?debug=1"); code == http.StatusOK {
					path := filepath.Join(r.cfg.dir, fmt.Sprintf("goroutines-replica-%d.txt", rep.index))
					if err := os.WriteFile(path, []byte(body), 0o600); err == nil {
						fmt.Printf("    its goroutines once idle: %s\n", path)
					}
				}
				// It is compared with what its role held before the load.
				base, role := r.before[last.leads], roleOf(last)
				if last.goroutines > base.goroutines+goroutineSlack || last.heapMiB > base.heapMiB+heapSlackMiB {
					fail("replica %d life %d holds more once idle than a %s before the load: goroutines %.0f (from %.0f), heap in use %.1f MiB (from %.1f)",
						rep.index, n+1, role, last.goroutines, base.goroutines, last.heapMiB, base.heapMiB)
				} else {
					fmt.Printf("    idle again: goroutines %.0f (a %s before the load: %.0f), heap in use %.1f MiB (%.1f)\n",
						last.goroutines, role, base.goroutines, last.heapMiB, base.heapMiB)
				}
			}
		}
	}

	// 4. Every create that answered success is stored exactly once.
	var boots unstructured.UnstructuredList
	boots.SetAPIVersion("zorp.sandbar.dev/v1")
	boots.SetKind("SpaceBootList")
	if err := r.k8s.List(ctx, &boots, client.InNamespace(namespace), client.HasLabels{metav1alpha1.LabelIdempotencyKey}); err != nil {
		fail("listing the instances: %v", err)
		return code
	}
	stored := map[string]int{}
	for _, b := range boots.Items {
		stored[b.GetLabels()[metav1alpha1.LabelIdempotencyKey]]++
	}
	lost, twice := 0, 0
	for key, label := range r.created {
		switch n := stored[label]; {
		case label == "" || n == 0:
			lost++
			if lost <= 3 {
				fmt.Printf("  the create of %s answered success but nothing is stored\n", key)
			}
		case n > 1:
			twice++
		}
	}
	for _, n := range stored {
		if n > 1 {
			twice++
		}
	}
	if lost == 0 && twice == 0 {
		fmt.Printf("\nPASS: every create that answered success (%d) is stored exactly once (%d instances with a key in all)\n",
			len(r.created), len(boots.Items))
	} else {
		fail("creates that answered success: %d; not stored: %d; stored more than once: %d", len(r.created), lost, twice)
	}
	return code
}

func endOf(l *life) string {
	switch {
	case l.ended.IsZero():
		return "to the end"
	case l.killed:
		return "killed"
	}
	return "ended on its own"
}

// slope is the least-squares slope of f over the samples, per minute.
func slope(samples []sample, f func(sample) float64) float64 {
	if len(samples) < 2 {
		return 0
	}
	t0 := samples[0].at
	var sx, sy, sxx, sxy float64
	for _, s := range samples {
		x, y := s.at.Sub(t0).Minutes(), f(s)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(samples))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// accepting waits until every replica takes every token.
func (f *fleet) accepting(ctx context.Context, tokens []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, r := range f.all() {
		for _, tok := range tokens {
			for {
				c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-chaos", Version: "1"}, nil)
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + r.mcpAddr + "/mcp",
					HTTPClient: &http.Client{Transport: testenv.Bearer{Token: tok}}, MaxRetries: -1},
					&mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
				cancel()
				if err == nil {
					_ = cs.Close()
					break
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return fmt.Errorf("replica %d did not take an account's token within %s: %v", r.index, timeout, err)
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
	}
	return nil
}

// roles says whether a life led at its first and its last sample: a replica that
// becomes leader starts the controllers, and their workers and watches.
func roles(samples []sample) string {
	first, last := roleOf(samples[0]), roleOf(samples[len(samples)-1])
	if first == last {
		return first
	}
	return first + ", then " + last
}

func roleOf(s sample) string {
	if s.leads {
		return "leader"
	}
	return "follower"
}
