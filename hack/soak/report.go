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
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// sample is the manager's state at one moment.
type sample struct {
	at              time.Duration // since the work started
	phase           string
	calls, errors   int
	rssMiB, heapMiB float64
	// goalMiB is the heap goal (go_memstats_next_gc_bytes): what the heap may grow
	// to before the next collection, twice what was live at the last one (GOGC=100).
	goalMiB    float64
	goroutines float64
	lastGC     time.Time
}

const mib = 1 << 20

// measure reads the manager's RSS from /proc and its goroutines and heap in use from
// its metrics endpoint.
func (s *soak) measure(start time.Time, phase string) (sample, error) {
	errs, _ := s.rec.errors()
	sm := sample{at: time.Since(start), phase: phase, calls: int(s.rec.calls.Load()), errors: errs}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return sm, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			sm.rssMiB = kb / 1024
		}
	}
	resp, err := http.Get(s.metrics)
	if err != nil {
		return sm, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "go_goroutines":
			sm.goroutines = v
		case "go_memstats_heap_inuse_bytes":
			sm.heapMiB = v / mib
		case "go_memstats_next_gc_bytes":
			sm.goalMiB = v / mib
		case "go_memstats_last_gc_time_seconds":
			sm.lastGC = time.Unix(0, int64(v*float64(time.Second)))
		}
	}
	return sm, sc.Err()
}

// record takes a sample, prints it as a table line and keeps it.
func (s *soak) record(start time.Time, phase string) sample {
	sm, err := s.measure(start, phase)
	if err != nil {
		s.rec.fail("sampling the manager failed", err.Error())
	}
	fmt.Printf("%8s  %-7s %9d %7d %9.1f %9.1f %9.1f %11.0f\n", sm.at.Truncate(time.Second), sm.phase, sm.calls, sm.errors, sm.rssMiB, sm.heapMiB, sm.goalMiB, sm.goroutines)
	s.mu.Lock()
	s.samples = append(s.samples, sm)
	s.mu.Unlock()
	return sm
}

// run is the soak after setup: the work, the checks, the burst; the exit code. It is
// over 80 lines because it is the report's script: each phase prints its figures and
// checks as it ends, in the order the report reads.
func (s *soak) run(ctx context.Context) int {
	cfg := s.cfg
	s.subs = map[string]*subscription{}
	workers := make([]*worker, cfg.sessions)
	stateless := 0
	for i := range workers {
		workers[i] = s.newWorker(i)
		if workers[i].stateless {
			stateless++
		}
	}
	fmt.Printf(">> %d sessions (%d at %s, %d at %s) for %s; samples every %s\n",
		cfg.sessions, cfg.sessions-stateless, sessionRevision, stateless, statelessRevision, cfg.duration, cfg.sample)
	fmt.Printf("%8s  %-7s %9s %7s %9s %9s %9s %11s\n", "time", "phase", "calls", "errors", "RSS MiB", "heap MiB", "goal MiB", "goroutines")
	start := time.Now()
	phase := "work"
	var phaseMu sync.Mutex
	setPhase := func(p string) { phaseMu.Lock(); phase = p; phaseMu.Unlock() }
	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go func() {
		for pause(sampling, cfg.sample) {
			phaseMu.Lock()
			p := phase
			phaseMu.Unlock()
			s.record(start, p)
		}
	}()
	s.record(start, phase)

	work, stopWork := context.WithTimeout(ctx, cfg.duration)
	defer stopWork()
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			// Sessions start over the first ten seconds, not all at once.
			if pause(work, time.Duration(i)*10*time.Second/time.Duration(len(workers))) {
				w.run(work)
			}
		})
	}
	var bg sync.WaitGroup
	bg.Go(func() { s.patcher(work) })
	bg.Go(func() {
		for pause(work, 30*time.Second) {
			collectChunks(work, s.k8s)
		}
	})
	wg.Wait()
	bg.Wait()
	if ctx.Err() != nil {
		fmt.Println("interrupted")
		return 1
	}
	workEnd := time.Since(start)

	// Each patch must have reached its subscriber.
	setPhase("drain")
	var patches, notes int64
	settled := func() bool {
		patches, notes = 0, 0
		ok := true
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, sub := range s.subs {
			p, n := sub.patches.Load(), sub.notes.Load()
			patches, notes = patches+p, notes+n
			ok = ok && n >= p
		}
		return ok
	}
	_ = wait(ctx, 30*time.Second, "notifications", settled)
	for _, w := range workers {
		if w.cs != nil {
			_ = w.cs.Close()
		}
	}

	var failures []string
	failures = append(failures, s.checkCreates(ctx)...)
	if notes < patches {
		failures = append(failures, fmt.Sprintf("subscriptions: %d patches made with the Kubernetes API, %d notifications received", patches, notes))
	}
	stopSampling() // the burst samples on its own
	burst := s.burst(ctx, start)
	failures = append(failures, burst.failures...)

	// The report.
	total, unexpected := s.rec.errors()
	calls := s.rec.calls.Load()
	fmt.Printf("\n== Sandbar soak: %d sessions (%d at %s, %d at %s) for %s, manager --mcp-session-timeout=%s\n",
		cfg.sessions, cfg.sessions-stateless, sessionRevision, stateless, statelessRevision, cfg.duration, cfg.sessionTimeout)
	fmt.Printf("calls: %d (%.1f per second during the work); errors: %d, of which unexpected: %d\n",
		calls, float64(calls)/workEnd.Seconds(), total, unexpected)
	s.rec.mu.Lock()
	if len(s.rec.errs) > 0 {
		fmt.Println("\nerrors by kind:")
		kinds := slices.Sorted(func(yield func(string) bool) {
			for k := range s.rec.errs {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range kinds {
			verdict := "UNEXPECTED"
			if k == rateLimited {
				verdict = "allowed"
			}
			fmt.Printf("  %6d  %-10s %s\n          first: %s\n", s.rec.errs[k], verdict, k, s.rec.first[k])
		}
	}
	fmt.Printf("\n%-45s %8s %9s %9s\n", "latency", "calls", "p50 ms", "p99 ms")
	ops := slices.Sorted(func(yield func(string) bool) {
		for k := range s.rec.lat {
			if !yield(k) {
				return
			}
		}
	})
	for _, op := range ops {
		ds := s.rec.lat[op]
		fmt.Printf("%-45s %8d %9.1f %9.1f\n", op, len(ds), ms(percentile(ds, 0.5)), ms(percentile(ds, 0.99)))
	}
	s.rec.mu.Unlock()
	if unexpected > 0 {
		failures = append(failures, fmt.Sprintf("errors: %d of a kind other than the designed 429", unexpected))
	}

	// Slopes after warm-up: least squares over the second half of the work.
	var xs, rss, gor, goal []float64
	s.mu.Lock()
	for _, sm := range s.samples {
		if sm.phase == "work" && sm.at >= workEnd/2 {
			xs = append(xs, sm.at.Minutes())
			rss = append(rss, sm.rssMiB)
			gor = append(gor, sm.goroutines)
			goal = append(goal, sm.goalMiB)
		}
	}
	s.mu.Unlock()
	rssSlope, gorSlope := slope(xs, rss), slope(xs, gor)
	fmt.Printf("\nafter warm-up (from %s, %d samples): RSS %+.2f MiB/min (flat: at most %.1f), goroutines %+.1f/min (flat: at most %.0f); heap goal %+.2f MiB/min\n",
		(workEnd / 2).Truncate(time.Second), len(xs), rssSlope, cfg.maxRSSSlope, gorSlope, cfg.maxGorSlope, slope(xs, goal))
	flat := "flat after warm-up"
	switch window := workEnd - workEnd/2; {
	case window < cfg.minFlatWindow || len(xs) < 3:
		flat = "slopes not judged (a short run)"
		// A short window's slope is mostly the noise of a garbage-collected heap.
		fmt.Printf("slopes not judged: the work after warm-up lasted %s (%d samples), less than --min-flat-window=%s\n",
			window.Truncate(time.Second), len(xs), cfg.minFlatWindow)
	case rssSlope > cfg.maxRSSSlope:
		failures = append(failures, fmt.Sprintf("slope: RSS grows %.2f MiB/min after warm-up, more than %.1f", rssSlope, cfg.maxRSSSlope))
	case gorSlope > cfg.maxGorSlope:
		failures = append(failures, fmt.Sprintf("slope: goroutines grow %.1f/min after warm-up, more than %.0f", gorSlope, cfg.maxGorSlope))
	}
	fmt.Printf("subscriptions: %d instances, %d patches with the Kubernetes API, %d notifications/resources/updated received\n",
		len(s.subs), patches, notes)
	fmt.Println(s.createSummary)
	fmt.Println(burst.summary)
	fmt.Println()
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Println("FAIL:", f)
		}
		return 1
	}
	fmt.Println("PASS: no unexpected errors, every create exactly once, every patch notified, " + flat + ", abandoned sessions released")
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// checkCreates checks that each successful create's instance exists exactly once
// (by its idempotency-key label), and each one its session deleted is gone.
func (s *soak) checkCreates(ctx context.Context) []string {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("zorp.sandbar.dev/v1")
	list.SetKind("SpaceBootList")
	if err := s.k8s.List(ctx, list, client.InNamespace(namespace), client.HasLabels{metav1alpha1.LabelIdempotencyKey}); err != nil {
		return []string{"listing the instances: " + err.Error()}
	}
	byLabel := map[string][]string{}
	for _, u := range list.Items {
		l := u.GetLabels()[metav1alpha1.LabelIdempotencyKey]
		byLabel[l] = append(byLabel[l], u.GetName())
	}
	var failures []string
	kept, deleted, skipped := 0, 0, 0
	s.mu.Lock()
	defer s.mu.Unlock()
	known := map[string]bool{}
	for _, c := range s.creates {
		known[c.label] = true
		got := byLabel[c.label]
		switch {
		case c.uncertain:
			skipped++
		case c.deleted:
			deleted++
			if len(got) != 0 {
				failures = append(failures, fmt.Sprintf("create %s: deleted, yet %d instance(s) with its key remain: %v", c.key, len(got), got))
			}
		default:
			kept++
			if len(got) != 1 || got[0] != c.name {
				failures = append(failures, fmt.Sprintf("create %s: want exactly the instance %s, found %v", c.key, c.name, got))
			}
		}
	}
	unrecorded := 0
	for l := range byLabel {
		if !known[l] {
			unrecorded++
		}
	}
	s.createSummary = fmt.Sprintf("creates: %d successful (%d kept, each found exactly once; %d deleted by their session, each gone; %d left out after a failed delete); "+
		"%d creates sent again with their key answered with the first instance; %d instances with a key of no recorded create (its answer cut off by the end of the work, or a failed call)",
		len(s.creates), kept, deleted, skipped, s.idempotentHits.Load(), unrecorded)
	if len(failures) > 10 {
		failures = append(failures[:10], fmt.Sprintf("… and %d more creates not exactly once", len(failures)-10))
	}
	return failures
}

// burstResult is what the abandoned-sessions burst found.
type burstResult struct {
	summary  string
	failures []string
}

// burst opens cfg.abandoned sessions with the last account and abandons them, then
// waits for the manager's goroutines and heap in use to fall back to their level
// before it, within the slack, once the session timeout has passed. It is over 80
// lines because the phases (baseline, open, abandon, wait) share their samples.
func (s *soak) burst(ctx context.Context, start time.Time) burstResult {
	cfg := s.cfg
	before := s.record(start, "before")
	token := s.tokens[len(s.tokens)-1]
	ids := make(chan string, cfg.abandoned)
	jobs := make(chan struct{}, cfg.abandoned)
	for range cfg.abandoned {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	opened := time.Now()
	var openErrs []string
	var mu sync.Mutex
	for range 16 {
		wg.Go(func() {
			for range jobs {
				for ctx.Err() == nil {
					rep, err := s.open(ctx, token)
					if err == nil {
						ids <- rep.sessionID
						break
					}
					if rep.status == http.StatusTooManyRequests {
						s.rec.fail(rateLimited, "initialize (burst)")
						pause(ctx, rep.retryAfter)
						continue
					}
					mu.Lock()
					openErrs = append(openErrs, err.Error())
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	close(ids)
	last := time.Now()
	var all []string
	for id := range ids {
		all = append(all, id)
	}
	peak := s.record(start, "burst")
	fmt.Printf(">> %d sessions opened and abandoned in %s; waiting for the session timeout (%s)\n",
		len(all), last.Sub(opened).Truncate(100*time.Millisecond), cfg.sessionTimeout)
	var res burstResult
	if len(openErrs) > 0 {
		res.failures = append(res.failures, fmt.Sprintf("burst: %d sessions could not be opened: %s", len(openErrs), openErrs[0]))
	}
	// Past the timeout, the manager must have let the sessions go: wait for a
	// garbage collection after it (the runtime forces one every 2 minutes at the
	// latest) and for the level to come back, up to 3 minutes.
	timedOut := last.Add(cfg.sessionTimeout)
	for time.Now().Before(timedOut) && pause(ctx, min(cfg.sample, time.Until(timedOut))) {
		s.record(start, "burst")
	}
	var after sample
	back := func(sm sample) bool {
		return sm.lastGC.After(timedOut) && sm.goroutines <= before.goroutines+cfg.goroutineSlack && sm.goalMiB <= before.goalMiB+cfg.heapSlackMB
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		after = s.record(start, "after")
		if back(after) || time.Now().After(deadline) || !pause(ctx, cfg.sample) {
			break
		}
	}
	gone := 0
	probe := all[:min(len(all), 10)]
	for _, id := range probe {
		rep, err := s.raw(ctx, token, id, "tools/list", map[string]any{}, true)
		if err != nil && rep.status == http.StatusNotFound {
			gone++
		}
	}
	res.summary = fmt.Sprintf("abandoned sessions: %d during the work, %d in a burst (in %s); "+
		"goroutines %.0f before, %.0f after the burst, %.0f %s after the last was opened; heap goal %.1f, %.1f, %.1f MiB; heap in use %.1f, %.1f, %.1f MiB; RSS %.1f, %.1f, %.1f MiB; "+
		"%d of %d sampled sessions answer 404",
		s.abandonedDuring.Load(), len(all), last.Sub(opened).Truncate(100*time.Millisecond),
		before.goroutines, peak.goroutines, after.goroutines, time.Since(last).Truncate(time.Second),
		before.goalMiB, peak.goalMiB, after.goalMiB, before.heapMiB, peak.heapMiB, after.heapMiB, before.rssMiB, peak.rssMiB, after.rssMiB, gone, len(probe))
	if !back(after) {
		res.failures = append(res.failures, fmt.Sprintf("abandoned sessions hold memory past the session timeout: goroutines %.0f (before %.0f, slack %.0f), heap goal %.1f MiB (before %.1f, slack %.0f), a collection since the timeout: %v",
			after.goroutines, before.goroutines, cfg.goroutineSlack, after.goalMiB, before.goalMiB, cfg.heapSlackMB, after.lastGC.After(timedOut)))
	}
	if gone < len(probe) {
		res.failures = append(res.failures, fmt.Sprintf("abandoned sessions: %d of %d sampled sessions still answer after the session timeout", len(probe)-gone, len(probe)))
	}
	return res
}
