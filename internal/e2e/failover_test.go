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

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/testenv"
	"github.com/sandbar-dev/sandbar/internal/testenv/faults"
)

// Two manager processes (leader election on) behind a load balancer that probes their
// /readyz and keeps each session on its replica, with session-based clients
// (2025-11-25) creating, reading and finding instances, two of them subscribed to an
// instance. When a replica goes, its sessions go with it: a client whose next request
// reaches the other replica gets 404 and initializes again, as the MCP specification
// says, and takes up its subscriptions in the new session.
//
// First a replica is killed (SIGKILL) in the middle of an import started through it;
// then both replicas are restarted one after the other (SIGTERM, as Kubernetes stops a
// pod), the leader first, in the middle of another. Through both: every client goes on working, each import completes and its
// result is read through the replicas left, a patch of the subscribed instance reaches
// both subscribers, and every create (each with its idempotency key, retried until it
// answers) made exactly one instance. During the rolling restart no request fails at the
// load balancer: a stopping replica fails /readyz while it still serves, and answers
// the calls it has in flight.
func TestSessionClientsFailOverBetweenReplicas(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	began := time.Now()
	step := func(what string) { t.Logf("%s: %s", time.Since(began).Round(100*time.Millisecond), what) }
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	k8s, err := client.New(env.Config, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testenv.ApplySamples(ctx, k8s)).To(Succeed())
	token, err := apikey.Issue(ctx, k8s, "default", "claude")
	g.Expect(err).NotTo(HaveOccurred())

	work := t.TempDir()
	kubeconfig := adminKubeconfig(t, env, work)
	manager := buildManager(t, work)
	step("control plane up, manager built")
	replicas := []*managerProcess{
		newManagerProcess(t, manager, kubeconfig, filepath.Join(work, "a.log")),
		newManagerProcess(t, manager, kubeconfig, filepath.Join(work, "b.log")),
	}
	for _, r := range replicas {
		r.start(t)
	}
	for _, r := range replicas {
		waitForMCP(t, r.url, token)
	}
	step("replicas serve MCP")
	// The instance the subscribers follow, once the manager serves its Class.
	watched := spaceBoot("watched")
	g.Expect(unstructured.SetNestedField(watched.Object, "Watched", "spec", "name")).To(Succeed())
	g.Eventually(func() error { return k8s.Create(ctx, watched) }).WithTimeout(timeout).Should(Succeed())
	pool, err := faults.NewPool(replicas[0].url, replicas[1].url)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(pool.Close)
	g.Eventually(func() bool { return pool.Ready(0) && pool.Ready(1) }).WithTimeout(timeout).Should(BeTrue())

	// Two subscribers, one on each replica (new sessions go to the replicas in turn),
	// so that whichever replica goes, one of them loses its session.
	uri := resources.InstanceURI("zorp", "SpaceBoot", "default", "watched")
	var subscribers []*sessionClient
	for i := range 2 {
		s := newSessionClient(fmt.Sprintf("subscriber-%d", i), pool.URL, token)
		t.Cleanup(s.close)
		g.Expect(s.subscribe(ctx, uri)).To(Succeed())
		subscribers = append(subscribers, s)
	}
	g.Expect(pool.Holder(subscribers[0].sessionID())).NotTo(Equal(pool.Holder(subscribers[1].sessionID())),
		"the subscribers' sessions are on different replicas")
	patched := 0
	updateReachesSubscribers := func(why string) {
		t.Helper()
		for _, s := range subscribers {
			s.drain()
		}
		patched++
		live := spaceBoot("watched")
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
		before := live.DeepCopy()
		g.Expect(unstructured.SetNestedField(live.Object, fmt.Sprintf("Watched %d", patched), "spec", "name")).To(Succeed())
		g.Expect(k8s.Patch(ctx, live, client.MergeFrom(before))).To(Succeed())
		for _, s := range subscribers {
			g.Eventually(s.updated).WithTimeout(timeout).Should(Receive(Equal(uri)),
				"%s: the patch reaches %s (sessions made: %d)", why, s.name, s.sessions.Load())
		}
	}
	updateReachesSubscribers("before any replica goes")

	step("two replicas serve, two subscribers follow an instance")
	w := startWorkload(t, pool.URL, token, 3)
	w.progresses(t, "before any replica goes")

	// The replica that does not lead dies in the middle of an import started through
	// it; the import goes on under the leader, and its result is read through it.
	leader := leaderOf(t, replicas)
	victim := 1 - leader
	holders := []int{pool.Holder(subscribers[0].sessionID()), pool.Holder(subscribers[1].sessionID())}
	starter := w.clients[0]
	for _, c := range w.clients {
		if pool.Holder(c.sessionID()) == victim {
			starter = c
		}
	}
	importing := startImport(t, starter, "killed", imported)
	g.Eventually(func() int64 { return importProgress(t, k8s, importing) }).WithTimeout(timeout).
		WithPolling(20*time.Millisecond).Should(BeNumerically(">", 0), "the import has begun")
	replicas[victim].kill(t)
	step(fmt.Sprintf("replica %d killed", victim))
	g.Expect(processPhase(t, k8s, importing)).To(Equal(metav1alpha1.PhaseRunning), "the replica died in the middle of the import")
	g.Eventually(func() bool { return pool.Ready(victim) }).WithTimeout(timeout).Should(BeFalse())
	w.progresses(t, "after a replica was killed")
	lost := subscribers[0]
	if holders[1] == victim {
		lost = subscribers[1]
	}
	g.Eventually(func() int32 { return lost.subscribedSessions() }).WithTimeout(timeout).Should(BeNumerically(">=", 2),
		"%s, whose session was on the killed replica, initializes again and subscribes again", lost.name)
	updateReachesSubscribers("after a replica was killed")
	importCompletes(t, starter, k8s, importing, "killed", imported)

	step("the import completed")
	replicas[victim].start(t)
	g.Eventually(func() bool { return pool.Ready(victim) }).WithTimeout(timeout).Should(BeTrue())
	w.progresses(t, "after the killed replica came back")
	step("the killed replica is back")

	// A rolling restart, in the middle of another import: first the leader, which holds
	// every session by now and hands over its lease as it stops, then the other, which
	// by then holds every session.
	unreachable := pool.Unreachable()
	importing = startImport(t, w.clients[1], "rolled", imported)
	g.Eventually(func() int64 { return importProgress(t, k8s, importing) }).WithTimeout(timeout).
		WithPolling(20*time.Millisecond).Should(BeNumerically(">", 0), "the import has begun")
	for _, i := range []int{leader, victim} {
		var moving []*sessionClient
		var from []int32
		for _, s := range subscribers {
			if pool.Holder(s.sessionID()) == i {
				moving, from = append(moving, s), append(from, s.subscribedSessions())
			}
		}
		g.Expect(moving).NotTo(BeEmpty(), "replica %d holds a subscriber's session", i)
		replicas[i].terminate(t)
		step(fmt.Sprintf("replica %d stopped", i))
		g.Eventually(func() bool { return pool.Ready(i) }).WithTimeout(timeout).Should(BeFalse())
		w.progresses(t, fmt.Sprintf("while replica %d restarts", i))
		for j, s := range moving {
			g.Eventually(s.subscribedSessions).WithTimeout(timeout).Should(BeNumerically(">", from[j]),
				"%s, whose session was on replica %d, subscribes again on the other", s.name, i)
		}
		replicas[i].start(t)
		g.Eventually(func() bool { return pool.Ready(i) }).WithTimeout(timeout).Should(BeTrue())
		updateReachesSubscribers(fmt.Sprintf("after replica %d restarted", i))
		step(fmt.Sprintf("replica %d is back", i))
	}
	importCompletes(t, w.clients[2], k8s, importing, "rolled", imported)
	w.progresses(t, "after the rolling restart")
	g.Expect(pool.Unreachable()).To(Equal(unreachable),
		"during the rolling restart no request was sent to a replica that had closed its port")

	// No write was lost or doubled: each key the clients created with is one instance.
	keys := w.stop(t)
	var list unstructured.UnstructuredList
	list.SetAPIVersion("zorp.sandbar.dev/v1")
	list.SetKind("SpaceBootList")
	g.Expect(k8s.List(ctx, &list, client.InNamespace("default"))).To(Succeed())
	made := map[string]int{}
	for _, u := range list.Items {
		if value, _, _ := unstructured.NestedString(u.Object, "spec", "name"); strings.HasPrefix(value, "worker-") {
			made[value]++
			g.Expect(u.GetLabels()).To(HaveKey(metav1alpha1.LabelIdempotencyKey), value)
		}
	}
	want := map[string]int{}
	for _, k := range keys {
		want[k] = 1
	}
	g.Expect(made).To(Equal(want), "each create's key is exactly one instance")
	g.Expect(pool.UnknownSessions()).To(BeNumerically(">", 0), "requests reached replicas that did not know their session")
	var reinitialized int32
	for _, c := range append(w.clients, subscribers...) {
		reinitialized += c.sessions.Load() - 1
	}
	t.Logf("%d creates, %d answers of 404 to a session's request, %d sessions made again", len(keys),
		pool.UnknownSessions(), reinitialized)
}

// imported is the size of each import: long enough to be cut in the middle.
const imported = 200

// sessionClient is an MCP client of a session-based revision as a real one behaves
// behind replicas: when its session is gone (404: the request reached a replica that
// does not hold it, or the replica went away), it initializes a new session, takes up
// its subscriptions in it, and sends the request again (a create with the same
// idempotency key). The go-sdk client (v1.8.0) reports a missing session
// (mcp.ErrSessionMissing) and leaves starting a new one to its caller.
type sessionClient struct {
	name, url, token string
	// updated gets the URI of each notifications/resources/updated.
	updated chan string

	mu   sync.Mutex
	cs   *mcp.ClientSession
	subs []string

	// sessions counts the sessions made; subscribed those whose subscriptions were
	// made.
	sessions, subscribed atomic.Int32
	// done ends when the client is closed.
	done context.Context
	quit context.CancelFunc
}

func newSessionClient(name, url, token string) *sessionClient {
	done, quit := context.WithCancel(context.Background())
	return &sessionClient{name: name, url: url, token: token, updated: make(chan string, 64), done: done, quit: quit}
}

// session is the client's session, a new one if it has none.
func (c *sessionClient) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: c.name, Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case c.updated <- r.Params.URI:
			default:
			}
		},
	})
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url,
		HTTPClient: &http.Client{Transport: testenv.Bearer{Token: c.token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	c.sessions.Add(1)
	for _, uri := range c.subs {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			_ = cs.Close()
			return nil, err
		}
	}
	if len(c.subs) > 0 {
		c.subscribed.Add(1)
		// A subscriber notices the end of its session by itself (its GET stream
		// ends) and makes a new one, not to miss updates.
		go func() {
			_ = cs.Wait()
			c.drop(cs)
			for c.done.Err() == nil {
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.session(rctx)
				cancel()
				if err == nil {
					return
				}
				select { // a client's backoff between attempts, cut short by its close
				case <-c.done.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	c.cs = cs
	return cs, nil
}

// drop forgets a session that is gone.
func (c *sessionClient) drop(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.cs == cs {
		c.cs = nil
	}
	c.mu.Unlock()
	_ = cs.Close()
}

// do runs a request in the client's session, in a new session if the session is gone
// or the request did not get an answer, until it gets one or ctx ends. An error the
// server answered with is returned as it is.
func (c *sessionClient) do(ctx context.Context, request func(*mcp.ClientSession) error) error {
	var last error
	for {
		cs, err := c.session(ctx)
		if err == nil {
			err = request(cs)
			var answered *jsonrpc.Error
			if err == nil || errors.As(err, &answered) && answered.Code != codeNotSent && !errors.Is(err, mcp.ErrSessionMissing) {
				return err
			}
			c.drop(cs)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no answer before the deadline; last: %w", c.name, last)
		case <-time.After(50 * time.Millisecond): // a client's backoff between attempts
		}
	}
}

// codeNotSent is the code of the go-sdk's "rejected by transport": the request did not
// get through (an HTTP error such as the 502 of a load balancer that lost the replica).
const codeNotSent = -32005

func (c *sessionClient) call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := c.do(ctx, func(cs *mcp.ClientSession) (err error) {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		return err
	})
	return res, err
}

func (c *sessionClient) read(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := c.do(ctx, func(cs *mcp.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	return res, err
}

// subscribe subscribes to a resource, now and in every session the client makes.
func (c *sessionClient) subscribe(ctx context.Context, uri string) error {
	c.mu.Lock()
	c.subs = append(c.subs, uri)
	old := c.cs
	c.mu.Unlock()
	if old != nil {
		c.drop(old)
	}
	_, err := c.session(ctx)
	return err
}

func (c *sessionClient) sessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == nil {
		return ""
	}
	return c.cs.ID()
}

// subscribedSessions counts the sessions in which the client's subscriptions were made.
func (c *sessionClient) subscribedSessions() int32 { return c.subscribed.Load() }

// drain empties the updates received so far.
func (c *sessionClient) drain() {
	for {
		select {
		case <-c.updated:
		default:
			return
		}
	}
}

func (c *sessionClient) close() {
	c.quit()
	c.mu.Lock()
	cs := c.cs
	c.mu.Unlock()
	if cs != nil {
		c.drop(cs)
	}
}

// workload is clients that create (each create with its own idempotency key), read
// what they created and find, over and over, until stopped.
type workload struct {
	clients []*sessionClient
	done    []atomic.Int64
	// halt ends when the clients are to stop.
	halt    context.Context
	stopAll context.CancelFunc
	wg      sync.WaitGroup

	mu   sync.Mutex
	keys []string
	errs []error
}

func startWorkload(t *testing.T, url, token string, n int) *workload {
	halt, stopAll := context.WithCancel(context.Background())
	w := &workload{done: make([]atomic.Int64, n), halt: halt, stopAll: stopAll}
	for i := range n {
		c := newSessionClient(fmt.Sprintf("worker-%d", i), url, token)
		t.Cleanup(c.close)
		w.clients = append(w.clients, c)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for j := 0; w.halt.Err() == nil; j++ {
				if err := w.round(c, fmt.Sprintf("%s-%03d", c.name, j)); err != nil {
					w.mu.Lock()
					w.errs = append(w.errs, err)
					w.mu.Unlock()
					return
				}
				w.done[i].Add(1)
				select { // the pace of a client, cut short when the workload stops
				case <-w.halt.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	t.Cleanup(func() { w.stopAll(); w.wg.Wait() })
	return w
}

// round creates an instance with key as its idempotency key (and its spec.name),
// reads it and finds.
func (w *workload) round(c *sessionClient, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w.mu.Lock()
	w.keys = append(w.keys, key)
	w.mu.Unlock()
	res, err := c.call(ctx, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": key,
		"metadata": map[string]any{"idempotencyKey": key}})
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	if res.IsError {
		return fmt.Errorf("create %s: %s", key, resultText(res))
	}
	out, _ := res.StructuredContent.(map[string]any)
	name, _ := out["name"].(string)
	if name == "" {
		return fmt.Errorf("create %s: no name in %v", key, out)
	}
	read, err := c.read(ctx, resources.InstanceURI("zorp", "SpaceBoot", "default", name))
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if len(read.Contents) == 0 || !strings.Contains(read.Contents[0].Text, key) {
		return fmt.Errorf("read %s: %v does not hold %s", name, read.Contents, key)
	}
	res, err = c.call(ctx, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": "default"})
	if err != nil {
		return fmt.Errorf("find: %w", err)
	}
	if res.IsError {
		return fmt.Errorf("find: %s", resultText(res))
	}
	return nil
}

// progresses waits until every client has made two more rounds, and fails the test
// if one gave up.
func (w *workload) progresses(t *testing.T, when string) {
	t.Helper()
	g := NewWithT(t)
	for i := range w.clients {
		from := w.done[i].Load()
		g.Eventually(func() error {
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.errs) > 0 {
				return StopTrying(fmt.Sprintf("a client gave up: %v", errors.Join(w.errs...)))
			}
			if w.done[i].Load() < from+2 {
				return fmt.Errorf("%s has made %d rounds", w.clients[i].name, w.done[i].Load()-from)
			}
			return nil
		}).WithTimeout(timeout).Should(Succeed(), "%s: %s keeps working", when, w.clients[i].name)
	}
}

// stop stops the clients and returns every key a create was sent with.
func (w *workload) stop(t *testing.T) []string {
	w.stopAll()
	w.wg.Wait()
	NewWithT(t).Expect(w.errs).To(BeEmpty())
	return w.keys
}

// startImport starts an import of n SpaceBoots through a client and returns its task.
func startImport(t *testing.T, c *sessionClient, name string, n int) string {
	t.Helper()
	g := NewWithT(t)
	var items []any
	for i := range n {
		items = append(items, map[string]any{"class": "zorp/SpaceBoot", "name": fmt.Sprintf("%s-%03d", name, i),
			"attributes": map[string]any{"name": "Imported"}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := c.call(ctx, "sandbar_project_import", map[string]any{"bundle": map[string]any{"items": items}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsError).To(BeFalse(), resultText(res))
	out, _ := res.StructuredContent.(map[string]any)
	id, _ := out["taskId"].(string)
	g.Expect(id).NotTo(BeEmpty(), "%v", out)
	return id
}

// importCompletes waits, through a client, for an import's task to complete, and
// reads its result through it: all n items are there, each once.
func importCompletes(t *testing.T, c *sessionClient, k8s client.Client, id, name string, n int) {
	t.Helper()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*timeout)
	defer cancel()
	tool := func(tool string) map[string]any {
		res, err := c.call(ctx, tool, map[string]any{"taskId": id})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.IsError).To(BeFalse(), resultText(res))
		out, _ := res.StructuredContent.(map[string]any)
		return out
	}
	g.Eventually(func() any {
		task, _ := tool("sandbar_tasks_get")["task"].(map[string]any)
		return task["status"]
	}).WithTimeout(3*timeout).WithPolling(200*time.Millisecond).Should(Equal("completed"),
		func() string {
			var p metav1alpha1.WorkflowProcess
			_ = k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p)
			return fmt.Sprintf("import %s: progress %d, %s: %s", id, importProgress(t, k8s, id), p.Status.Phase, p.Status.StatusMessage)
		})
	result := fmt.Sprint(tool("sandbar_tasks_result"))
	g.Expect(result).To(ContainSubstring("failed:0"), "the import's result, read through the replicas left: %s", result)
	for i := range n {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("%s-%03d", name, i)},
			spaceBoot(fmt.Sprintf("%s-%03d", name, i)))).To(Succeed())
	}
}

func importProgress(t *testing.T, k8s client.Client, id string) int64 {
	var p metav1alpha1.WorkflowProcess
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p)).To(Succeed())
	if p.Status.Progress == nil {
		return 0
	}
	return p.Status.Progress.Done
}

func processPhase(t *testing.T, k8s client.Client, id string) metav1alpha1.ProcessPhase {
	var p metav1alpha1.WorkflowProcess
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p)).To(Succeed())
	return p.Status.Phase
}

func spaceBoot(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

// leaderOf is the replica that holds the lease (its log says it acquired it).
func leaderOf(t *testing.T, replicas []*managerProcess) int {
	t.Helper()
	leader := -1
	NewWithT(t).Eventually(func() int {
		for i, r := range replicas {
			log, _ := os.ReadFile(r.log)
			if strings.Contains(string(log), "Successfully acquired lease") {
				leader = i
			}
		}
		return leader
	}).WithTimeout(timeout).Should(BeNumerically(">=", 0), "a replica leads")
	return leader
}

// adminKubeconfig writes a kubeconfig of an administrator of env.
func adminKubeconfig(t *testing.T, env *envtest.Environment, dir string) string {
	t.Helper()
	admin, err := env.AddUser(envtest.User{Name: "failover-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildManager builds the manager binary as the image has it.
func buildManager(t *testing.T, dir string) string {
	t.Helper()
	manager := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-trimpath", "-o", manager, "./cmd")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	return manager
}

// managerProcess is one replica: the manager binary on fixed addresses, started again
// on the same ones after it stops.
type managerProcess struct {
	args []string
	bin  string
	log  string
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

func newManagerProcess(t *testing.T, bin, kubeconfig, log string) *managerProcess {
	mcpAddr, probeAddr := freeAddr(t), freeAddr(t)
	r := &managerProcess{bin: bin, log: log, url: "http://" + mcpAddr + "/mcp", args: []string{
		"--kubeconfig=" + kubeconfig, "--leader-elect", "--leader-election-namespace=default",
		"--mcp-bind-address=" + mcpAddr, "--health-probe-bind-address=" + probeAddr, "--metrics-bind-address=0",
		// One account's several clients: no rate limit in the way. The log keeps to
		// the manager's own lines.
		"--mcp-rate-limit=0", "--audit-log=off",
	}}
	t.Cleanup(func() {
		if r.cmd != nil {
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
			<-r.done
		}
		if t.Failed() {
			data, _ := os.ReadFile(r.log)
			t.Logf("%s:\n%s", filepath.Base(r.log), tail(string(data), 60))
		}
	})
	return r
}

func (r *managerProcess) start(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile(r.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(r.bin, r.args...)
	r.cmd.Stdout, r.cmd.Stderr = log, log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.done = make(chan struct{})
	go func() { _ = r.cmd.Wait(); _ = log.Close(); close(r.done) }()
}

// kill ends the replica at once, as a crash or a lost node does.
func (r *managerProcess) kill(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// terminate stops the replica as Kubernetes stops a pod (SIGTERM); it must exit by
// itself, cleanly, within the chart's grace period (15 s).
func (r *managerProcess) terminate(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(r.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	g.Eventually(r.done).WithTimeout(15*time.Second).Should(BeClosed(), "the replica exits within the grace period")
	g.Expect(r.cmd.ProcessState.ExitCode()).To(Equal(0), "the replica exits cleanly")
	r.cmd = nil
}
