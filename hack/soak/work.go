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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

const (
	sessionRevision   = "2025-11-25"
	statelessRevision = "2026-07-28"
	// rateLimited is the one error kind the soak allows: the designed 429 of the
	// per-account rate limit, with its Retry-After.
	rateLimited = "HTTP 429 rate limited (with Retry-After)"
	// callTimeout bounds one call of a client.
	callTimeout = time.Minute
	// exportedWearers are the seeded Wearers every export must hold.
	exportedWearers = 30
)

// soak is one run: the manager under test, its clients and what they saw.
type soak struct {
	cfg     config
	k8s     client.Client
	url     string
	metrics string
	pid     int
	tokens  []string
	rec     *recorder

	mu            sync.Mutex
	creates       []*created
	subs          map[string]*subscription
	samples       []sample
	createSummary string

	abandonedDuring atomic.Int64
	idempotentHits  atomic.Int64
	rpcID           atomic.Int64
}

// created is a create that succeeded: its key's label and the instance's name.
type created struct {
	key, label, name string
	// deleted by its session later; uncertain when that delete failed.
	deleted, uncertain bool
}

// subscription is an instance a session subscribed to: the patches made to it with
// the Kubernetes API and the notifications/resources/updated its session received.
type subscription struct {
	name           string
	patches, notes atomic.Int64
	last           time.Time
}

// recorder counts calls, their latencies per tool and the errors by kind.
type recorder struct {
	calls atomic.Int64
	mu    sync.Mutex
	lat   map[string][]time.Duration
	errs  map[string]int
	first map[string]string
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]time.Duration{}, errs: map[string]int{}, first: map[string]string{}}
}

func (r *recorder) observe(op string, d time.Duration) {
	r.calls.Add(1)
	r.mu.Lock()
	r.lat[op] = append(r.lat[op], d)
	r.mu.Unlock()
}

func (r *recorder) fail(kind, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[kind]++
	if _, ok := r.first[kind]; !ok {
		if len(detail) > 300 {
			detail = detail[:300] + "…"
		}
		r.first[kind] = detail
	}
}

func (r *recorder) errors() (total int, unexpected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, n := range r.errs {
		total += n
		if k != rateLimited {
			unexpected += n
		}
	}
	return total, unexpected
}

// kindOf names the kind of a failed call.
func kindOf(op string, err error) string {
	var wire *jsonrpc.Error
	switch {
	case strings.Contains(err.Error(), http.StatusText(http.StatusTooManyRequests)):
		return rateLimited
	case errors.Is(err, mcp.ErrSessionMissing):
		return "session not found (HTTP 404)"
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within " + callTimeout.String()
	case errors.As(err, &wire):
		return fmt.Sprintf("JSON-RPC error %d from %s", wire.Code, op)
	default:
		return "transport error"
	}
}

// limitWatch adds the bearer token, and counts each 429 that carries no Retry-After
// as an error of its own; it keeps the last Retry-After for its client to honour.
type limitWatch struct {
	token string
	rec   *recorder
	after atomic.Int64 // seconds
}

func (l *limitWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+l.token)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		var secs int64
		if _, serr := fmt.Sscan(resp.Header.Get("Retry-After"), &secs); serr != nil || secs < 1 {
			l.rec.fail("HTTP 429 without Retry-After", r.Method+" "+resp.Header.Get("Retry-After"))
			secs = 1
		}
		l.after.Store(secs)
	}
	return resp, err
}

// pause waits d or until ctx ends; false when it ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// worker is one client session doing mixed work.
type worker struct {
	s         *soak
	id        int
	token     string
	stateless bool
	rng       *rand.Rand
	watch     *limitWatch
	cs        *mcp.ClientSession
	live      []*created
	seq       int
	watched   string
}

func (s *soak) newWorker(id int) *worker {
	tok := s.tokens[id/s.cfg.perAccount]
	// Every tenth session of an account, up to the stateless share, speaks 2026-07-28.
	stateless := float64(id%s.cfg.perAccount) < s.cfg.stateless*float64(s.cfg.perAccount)
	return &worker{s: s, id: id, token: tok, stateless: stateless,
		rng:   rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano()))),
		watch: &limitWatch{token: tok, rec: s.rec}}
}

// connect opens the worker's session, again after a failure, until ctx ends.
func (w *worker) connect(ctx context.Context) bool {
	for ctx.Err() == nil {
		c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-soak", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
				w.s.mu.Lock()
				sub := w.s.subs[r.Params.URI]
				w.s.mu.Unlock()
				if sub != nil {
					sub.notes.Add(1)
				}
			},
		})
		rev := sessionRevision
		if w.stateless {
			rev = statelessRevision
		}
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: w.s.url,
			HTTPClient: &http.Client{Transport: w.watch}, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: rev})
		cancel()
		if err == nil {
			w.s.rec.observe("connect ("+rev+")", time.Since(start))
			w.cs = cs
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		w.s.rec.fail(kindOf("initialize", err), err.Error())
		pause(ctx, w.backoff())
	}
	return false
}

// backoff is the wait after a failed call: the server's Retry-After after a 429.
func (w *worker) backoff() time.Duration {
	if secs := w.watch.after.Swap(0); secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return time.Second
}

// call calls a tool; its structured result, or nil after recording the failure.
func (w *worker) call(ctx context.Context, name string, args map[string]any) map[string]any {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	start := time.Now()
	res, err := w.cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	d := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return nil // the work ended during the call
		}
		w.s.rec.fail(kindOf(name, err), name+": "+err.Error())
		if errors.Is(err, mcp.ErrSessionMissing) {
			_ = w.cs.Close()
			w.connect(ctx)
		} else {
			pause(ctx, w.backoff())
		}
		return nil
	}
	w.s.rec.observe(name, d)
	text := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text += t.Text
		}
	}
	if res.IsError {
		kind := "isError from " + name
		if strings.Contains(text, "may or may not") || strings.Contains(text, "did not answer within") {
			kind = "isError from " + name + ": the API server did not answer"
		}
		w.s.rec.fail(kind, text)
		return nil
	}
	out := map[string]any{}
	if b, err := json.Marshal(res.StructuredContent); err == nil && res.StructuredContent != nil {
		_ = json.Unmarshal(b, &out)
	} else if err := json.Unmarshal([]byte(text), &out); err != nil {
		w.s.rec.fail("result that is not JSON from "+name, text)
		return nil
	}
	return out
}

// timed runs one call that is not a tool call under its method's name.
func (w *worker) timed(ctx context.Context, op string, f func(context.Context) error) bool {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	start := time.Now()
	err := f(cctx)
	if err != nil {
		if ctx.Err() == nil {
			w.s.rec.fail(kindOf(op, err), op+": "+err.Error())
			pause(ctx, w.backoff())
		}
		return false
	}
	w.s.rec.observe(op, time.Since(start))
	return true
}

func (w *worker) uri(name string) string {
	return resources.InstanceURI("zorp", "SpaceBoot", namespace, name)
}

// create makes a SpaceBoot with an idempotency key and records it.
func (w *worker) create(ctx context.Context) *created {
	w.seq++
	key := fmt.Sprintf("soak-%d-%d", w.id, w.seq)
	out := w.call(ctx, "sandbar_entity_create", w.createArgs(key))
	if out == nil {
		return nil
	}
	labels, _ := out["labels"].(map[string]any)
	label, _ := labels[metav1alpha1.LabelIdempotencyKey].(string)
	name, _ := out["name"].(string)
	if label == "" || name == "" {
		w.s.rec.fail("create answered without its name or key label", fmt.Sprint(out))
		return nil
	}
	c := &created{key: key, label: label, name: name}
	w.s.mu.Lock()
	w.s.creates = append(w.s.creates, c)
	w.s.mu.Unlock()
	return c
}

func (w *worker) createArgs(key string) map[string]any {
	return map[string]any{"class": "zorp/SpaceBoot",
		"attributes": map[string]any{"name": "Soak " + key, "tentacleCount": 1 + w.rng.IntN(8)},
		"metadata":   map[string]any{"idempotencyKey": key}}
}

// run works until ctx ends; the session stays open for the checks.
func (w *worker) run(ctx context.Context) {
	if !w.connect(ctx) {
		return
	}
	if !w.stateless {
		w.subscribe(ctx)
	}
	for pause(ctx, time.Duration(float64(w.s.cfg.think)*(0.5+w.rng.Float64()))) {
		w.step(ctx)
	}
}

// subscribe creates the session's watched instance and subscribes to it, once the
// manager serves it as a resource.
func (w *worker) subscribe(ctx context.Context) {
	var c *created
	for c == nil && ctx.Err() == nil {
		if c = w.create(ctx); c == nil {
			pause(ctx, time.Second)
		}
	}
	if c == nil {
		return
	}
	uri := w.uri(c.name)
	for try := 0; ctx.Err() == nil; try++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		start := time.Now()
		err := w.cs.Subscribe(cctx, &mcp.SubscribeParams{URI: uri})
		cancel()
		if err == nil {
			w.s.rec.observe("resources/subscribe", time.Since(start))
			w.s.mu.Lock()
			w.s.subs[uri] = &subscription{name: c.name, last: time.Now()}
			w.s.mu.Unlock()
			w.watched = uri
			return
		}
		// The instance may not be in the manager's cache yet: try a few times.
		if try == 20 {
			w.s.rec.fail(kindOf("resources/subscribe", err), "resources/subscribe: "+err.Error())
			return
		}
		pause(ctx, 250*time.Millisecond)
	}
}

// step does one piece of work, chosen by weight.
func (w *worker) step(ctx context.Context) {
	type op struct {
		weight int
		do     func(context.Context)
	}
	ops := []op{
		{10, w.listTools},
		{10, w.describe},
		{20, w.find},
		{15, w.read},
		{12, w.createOne},
		{15, w.update},
		{3, w.retryCreate},
	}
	if !w.stateless {
		ops = append(ops, op{4, w.export}, op{2, w.abandon})
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := w.rng.IntN(total)
	for _, o := range ops {
		if n < o.weight {
			o.do(ctx)
			return
		}
		n -= o.weight
	}
}

func (w *worker) listTools(ctx context.Context) {
	w.timed(ctx, "tools/list", func(ctx context.Context) error {
		_, err := w.cs.ListTools(ctx, nil)
		return err
	})
}

var describeClasses = []string{"zorp/SpaceBoot", "zorp/Wearer", "order/Order", "zorp/Footwear"}

func (w *worker) describe(ctx context.Context) {
	w.call(ctx, "sandbar_class_describe", map[string]any{"class": describeClasses[w.rng.IntN(len(describeClasses))]})
}

func (w *worker) find(ctx context.Context) {
	if len(w.live) > 0 && w.rng.IntN(2) == 0 {
		c := w.live[w.rng.IntN(len(w.live))]
		out := w.call(ctx, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "where": map[string]any{"name": "Soak " + c.key}})
		if out != nil && fmt.Sprint(out["count"]) != "1" {
			w.s.rec.fail("find by name did not find the session's own instance once", fmt.Sprint(out))
		}
		return
	}
	w.call(ctx, "sandbar_entity_find", map[string]any{"class": "zorp/Wearer", "limit": 20})
}

func (w *worker) read(ctx context.Context) {
	uri := w.watched
	if len(w.live) > 0 && (uri == "" || w.rng.IntN(2) == 0) {
		uri = w.uri(w.live[w.rng.IntN(len(w.live))].name)
	}
	if uri == "" {
		w.find(ctx)
		return
	}
	w.timed(ctx, "resources/read", func(ctx context.Context) error {
		_, err := w.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
}

// createOne creates an instance; past the session's share it deletes its oldest
// first, so the instances level off.
func (w *worker) createOne(ctx context.Context) {
	if len(w.live) >= w.s.cfg.live {
		old := w.live[0]
		w.live = w.live[1:]
		out := w.call(ctx, "sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": old.name, "confirm": true})
		w.s.mu.Lock()
		if out != nil {
			old.deleted = true
		} else {
			old.uncertain = true // the failure is counted; the check leaves it out
		}
		w.s.mu.Unlock()
	}
	if c := w.create(ctx); c != nil {
		w.live = append(w.live, c)
	}
}

// retryCreate sends a create of the session's again with its key, as a client does
// after a timeout: the answer must be the first call's instance.
func (w *worker) retryCreate(ctx context.Context) {
	if len(w.live) == 0 {
		w.createOne(ctx)
		return
	}
	c := w.live[w.rng.IntN(len(w.live))]
	out := w.call(ctx, "sandbar_entity_create", w.createArgs(c.key))
	if out == nil {
		return
	}
	if out["name"] != c.name {
		w.s.rec.fail("a create retried with its key made another instance", fmt.Sprintf("%s, then %v", c.name, out["name"]))
		return
	}
	w.s.idempotentHits.Add(1)
}

func (w *worker) update(ctx context.Context) {
	if len(w.live) == 0 {
		w.createOne(ctx)
		return
	}
	c := w.live[w.rng.IntN(len(w.live))]
	w.call(ctx, "sandbar_entity_update", map[string]any{"class": "zorp/SpaceBoot", "name": c.name,
		"attributes": map[string]any{"tentacleCount": 1 + w.rng.IntN(8)}})
}

// export runs sandbar_project_export as a task on the worker's session (the Go SDK
// does not send tasks/*: the requests are made by hand with its session id) and
// follows it to its result.
func (w *worker) export(ctx context.Context) {
	start := time.Now()
	var task struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if !w.rawCall(ctx, "tools/call (task)", "tools/call", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/Wearer"}, "task": map[string]any{"ttl": 60000}}, &task) {
		return
	}
	var status struct {
		Status string `json:"status"`
	}
	for status.Status == "" || status.Status == "working" || status.Status == "input_required" {
		if !pause(ctx, 300*time.Millisecond) || !w.rawCall(ctx, "tasks/get", "tasks/get", map[string]any{"taskId": task.Task.TaskID}, &status) {
			return
		}
		if time.Since(start) > callTimeout {
			w.s.rec.fail("export not done within "+callTimeout.String(), task.Task.TaskID)
			return
		}
	}
	var result struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Items []any `json:"items"`
		} `json:"structuredContent"`
	}
	if !w.rawCall(ctx, "tasks/result", "tasks/result", map[string]any{"taskId": task.Task.TaskID}, &result) {
		return
	}
	if status.Status != "completed" || result.IsError || len(result.StructuredContent.Items) != exportedWearers {
		w.s.rec.fail("export task that did not complete whole", fmt.Sprintf("status %s, isError %v, %d items of %d",
			status.Status, result.IsError, len(result.StructuredContent.Items), exportedWearers))
		return
	}
	w.s.rec.observe("export task, to its result", time.Since(start))
}

// rawCall sends one request on the worker's session by hand and decodes its result.
func (w *worker) rawCall(ctx context.Context, op, method string, params map[string]any, out any) bool {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	start := time.Now()
	rep, err := w.s.raw(cctx, w.token, w.cs.ID(), method, params, true)
	if err == nil && rep.err != nil {
		err = rep.err
	}
	if err == nil {
		err = json.Unmarshal(rep.result, out)
	}
	if err != nil {
		if ctx.Err() == nil {
			if rep.status == http.StatusTooManyRequests {
				w.s.rec.fail(rateLimited, op)
				pause(ctx, rep.retryAfter)
			} else {
				w.s.rec.fail(kindOf(op, err), op+": "+err.Error())
			}
		}
		return false
	}
	w.s.rec.observe(op, time.Since(start))
	return true
}

// abandon opens a session of its own and never speaks on it again.
func (w *worker) abandon(ctx context.Context) {
	start := time.Now()
	if _, err := w.s.open(ctx, w.token); err != nil {
		if ctx.Err() == nil {
			w.s.rec.fail(kindOf("initialize", err), "initialize (abandoned): "+err.Error())
			pause(ctx, time.Second)
		}
		return
	}
	w.s.rec.observe("initialize, abandoned", time.Since(start))
	w.s.abandonedDuring.Add(1)
}

// reply is the answer to a request sent by hand.
type reply struct {
	status     int
	retryAfter time.Duration
	sessionID  string
	result     json.RawMessage
	err        *jsonrpc.Error
}

// raw sends one JSON-RPC message at 2025-11-25 (a notification when call is false)
// and reads its answer, a JSON body or the event of an SSE stream that answers it.
func (s *soak) raw(ctx context.Context, token, sessionID, method string, params map[string]any, call bool) (reply, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	id := s.rpcID.Add(1)
	if call {
		msg["id"] = id
	}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", sessionRevision)
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	rep := reply{status: resp.StatusCode, sessionID: resp.Header.Get("Mcp-Session-Id")}
	if resp.StatusCode == http.StatusTooManyRequests {
		var secs int
		if _, err := fmt.Sscan(resp.Header.Get("Retry-After"), &secs); err != nil || secs < 1 {
			s.rec.fail("HTTP 429 without Retry-After", method)
			secs = 1
		}
		rep.retryAfter = time.Duration(secs) * time.Second
		return rep, errors.New(http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode >= 300 {
		return rep, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if !call {
		return rep, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok && strings.HasPrefix(line, "{") {
			data, ok = line, true
		}
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if json.Unmarshal([]byte(data), &m) == nil && string(m.ID) == fmt.Sprint(id) {
			rep.result, rep.err = m.Result, m.Error
			return rep, nil
		}
	}
	return rep, fmt.Errorf("no answer to %s (HTTP %d): %v", method, resp.StatusCode, sc.Err())
}

// open initializes a session by hand (initialize, notifications/initialized) and
// returns its id.
func (s *soak) open(ctx context.Context, token string) (reply, error) {
	rep, err := s.raw(ctx, token, "", "initialize", map[string]any{"protocolVersion": sessionRevision,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "sandbar-soak-abandoned", "version": "1"}}, true)
	if err == nil && rep.err != nil {
		err = rep.err
	}
	if err == nil && rep.sessionID == "" {
		err = errors.New("initialize answered without a session id")
	}
	if err != nil {
		return rep, err
	}
	if n, err := s.raw(ctx, token, rep.sessionID, "notifications/initialized", map[string]any{}, false); err != nil {
		n.sessionID = rep.sessionID
		return n, err
	}
	return rep, nil
}

// accepts says whether the manager serves a token's account (a session opens),
// closing the session it opened.
func (s *soak) accepts(token string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := s.open(ctx, token)
	if err != nil {
		return false
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", rep.sessionID)
	req.Header.Set("MCP-Protocol-Version", sessionRevision)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
	}
	return true
}

// patcher patches each subscribed instance every cfg.patchEvery with the Kubernetes
// API, as kubectl patch does, until ctx ends.
func (s *soak) patcher(ctx context.Context) {
	var n int64
	for pause(ctx, time.Second) {
		s.mu.Lock()
		var due []*subscription
		for _, sub := range s.subs {
			if time.Since(sub.last) >= s.cfg.patchEvery {
				due = append(due, sub)
			}
		}
		s.mu.Unlock()
		for _, sub := range due {
			n++
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("zorp.sandbar.dev/v1")
			u.SetKind("SpaceBoot")
			u.SetNamespace(namespace)
			u.SetName(sub.name)
			patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"price":%d}}`, n))
			if err := s.k8s.Patch(ctx, u, patch); err != nil {
				if ctx.Err() == nil {
					s.rec.fail("patch with the Kubernetes API failed", err.Error())
				}
				continue
			}
			sub.patches.Add(1)
			s.mu.Lock()
			sub.last = time.Now()
			s.mu.Unlock()
		}
	}
}
