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

// Package mcptest runs the MCP server the manager serves (mcpserver.New: the
// HTTP handler with authentication, the session registry, the SDK's Streamable HTTP
// handlers of both revisions, every tool, resource and prompt) over
// controller-runtime's fake client holding config/samples, with the statuses the
// reconcilers would give them. It needs no control plane, so the tests that use it
// run in `make test-unit`: the fuzz targets, and a test per verb.
//
// The fake cluster has no RBAC (every SubjectAccessReview is allowed: what an
// account may touch is decided by the server alone), runs no workflows (a process
// fails as it is created), and records every write outside the sample account's
// namespace (CheckHome).
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/bcrypt"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// The keys this package issues are for tests: the lowest bcrypt cost (apikey.Cost).
// Only tests import it.
func init() { apikey.Cost = bcrypt.MinCost }

const (
	// Home is the namespace of the sample account "claude", the only one it may act in.
	Home = "default"
	// Elsewhere holds an instance the account must never touch.
	Elsewhere = "elsewhere"
	// SessionRevision is the newest session-based revision, StatelessRevision the newest.
	SessionRevision   = "2025-11-25"
	StatelessRevision = "2026-07-28"
)

// Server is one MCP server over a fake cluster, serving the sample account
// "claude" of namespace default.
type Server struct {
	// Handler is the server's HTTP handler, for calls without the network.
	Handler http.Handler
	// URL is where the server listens (loopback), for a real MCP client.
	URL string
	// Cluster is the fake cluster, for a test to read what a call wrote.
	Cluster client.Client
	// Token is the sample account's API key (account "claude" of namespace default).
	Token string
	// Session is an initialized session of the 2025-11-25 revision, and
	// Initialized the server's answer to its initialize.
	Session     string
	Initialized json.RawMessage
	// Tools are the names tools/list gives the account, sorted.
	Tools []string
	stop  func()
	// workflows runs processes (Config.RunWorkflows).
	workflows *controllers.WorkflowProcessReconciler
	// ids number the requests the targets make: the session refuses an id in flight.
	ids atomic.Int64

	mu sync.Mutex
	// strays are the writes the server made outside the account's namespace.
	strays []string
}

var (
	shared, running       *Server
	sharedErr, runningErr error
	once, runningOnce     sync.Once
)

// Running is a server made once per process whose fake cluster runs workflows
// (Config.RunWorkflows), for the tests that share it.
func Running(tb testing.TB) *Server {
	tb.Helper()
	runningOnce.Do(func() { running, runningErr = StartWith(Config{RunWorkflows: true}) })
	if runningErr != nil {
		tb.Fatal(runningErr)
	}
	return running
}

// Shared is a server made once per process (each fuzz worker is a process of its
// own) for the tests that share it; it fails the test with why it could not start.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	once.Do(func() { shared, sharedErr = Start(nil) })
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return shared
}

// TokenKey seals the server's cursors and continue tokens, so that a test can
// seal positions of its own choosing and reach the code that uses an opened one.
var TokenKey = []byte("the fuzz server's token key, 32 bytes or more")

// reconcile runs the process reconciler on p until a reconcile changes nothing, at
// most a hundred times (a built-in job runs in chunks), and reads p back.
func (s *Server) reconcile(ctx context.Context, p *metav1alpha1.WorkflowProcess) error {
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	for range 100 {
		before := p.ResourceVersion
		if _, err := s.workflows.Reconcile(ctx, req); err != nil {
			return fmt.Errorf("reconciling process %s: %w", req.NamespacedName, err)
		}
		if err := s.Cluster.Get(ctx, req.NamespacedName, p); err != nil || p.ResourceVersion == before {
			return client.IgnoreNotFound(err)
		}
	}
	return nil
}

// Stop ends the server's background work (the listener of URL with it).
func (s *Server) Stop() { s.stop() }

// NextID is a JSON-RPC request id not used before on this server: the session
// refuses an id in flight.
func (s *Server) NextID() int64 { return s.ids.Add(1) }

// Start builds the catalog of the samples, a fake cluster holding them, and the
// server the manager would run (with the options configure changes), then opens a
// session.
func Start(configure func(*mcpserver.Options)) (*Server, error) {
	return StartWith(Config{Server: configure})
}

// Config is how StartWith makes a server.
type Config struct {
	// Server changes the server's options.
	Server func(*mcpserver.Options)
	// RunWorkflows runs the manager's WorkflowProcessReconciler on a process each
	// time one is created, until it asks for no more: a process starts in its
	// workflow's initial state and a built-in job runs to its end, as the controller
	// would do it. Without it, a process fails as it is created, so that a call that
	// waits for one answers at once (what the fuzz targets want).
	RunWorkflows bool
	// Account changes the account config/samples declares (no toolsets, no clients:
	// tools/list shows it the core toolset, within the limit of the client that
	// asks); SampleAccount leaves it as it is. Without it the account is an admin's
	// for Claude Code that lists every verb (toolsets all, clients claude-code), so
	// that a test sees every verb in tools/list.
	Account func(*metav1alpha1.ServiceAccountSpec)
	// Copies adds this many copies of the sample class zorp/SpaceBoot (kinds Copy1,
	// Copy2, ...), each a concrete class with its own tool.
	Copies int
}

// SampleAccount leaves the account as config/samples declares it (Config.Account).
func SampleAccount(*metav1alpha1.ServiceAccountSpec) {}

// everyVerb makes the account an admin's for Claude Code that lists every verb.
func everyVerb(spec *metav1alpha1.ServiceAccountSpec) {
	spec.Toolsets, spec.Clients = []string{"all"}, []string{"claude-code"}
}

// StartWith is Start with the choices of c.
func StartWith(c Config) (*Server, error) {
	scheme := controllers.NewScheme()
	if c.Account == nil {
		c.Account = everyVerb
	}
	objs, in, err := samples(scheme, c.Account)
	if err != nil {
		return nil, err
	}
	in.Classes = append(in.Classes, copies(in.Classes, c.Copies)...)
	snap := catalog.Build(in)
	// The generated APIs of the concrete classes, as their CRDs would serve them.
	instances := meta.NewDefaultRESTMapper(nil)
	for _, c := range snap.Classes {
		if c.InstanceAPI != nil {
			instances.Add(c.GVK(), meta.RESTScopeNamespace)
		}
	}
	// One instance in a namespace the account may not act in: it must stay as it is.
	if boot := snap.Classes["zorp.spaceboot"]; boot != nil && boot.InstanceAPI != nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(boot.GVK())
		u.SetNamespace(Elsewhere)
		u.SetName("untouchable")
		u.Object["spec"] = map[string]any{"name": "untouchable", "price": int64(1)}
		objs = append(objs, u)
	}

	s := &Server{}
	s.ids.Store(100)
	cl := s.fakeCluster(scheme, snap, instances, objs)
	s.Cluster = cl

	ctx := context.Background()
	if s.Token, err = apikey.Issue(ctx, cl, Home, "claude"); err != nil {
		return nil, fmt.Errorf("issuing a key: %w", err)
	}
	store := catalog.NewStore()
	store.Publish(snap)
	conn := identity.Connection{
		Config:  &rest.Config{Host: "https://cluster.invalid"},
		Options: client.Options{Scheme: scheme},
		// The fake cluster stands for every identity: what an account may do is
		// then decided by the server alone.
		NewClient: func(*rest.Config, client.Options) (client.Client, error) { return cl, nil },
		Manager:   cl,
	}
	if c.RunWorkflows {
		s.workflows = &controllers.WorkflowProcessReconciler{Client: cl, Recorder: &events.FakeRecorder{}, Store: store,
			Identities: identity.New(conn, nil), Results: &builtin.ResultStore{Client: cl, Reader: cl}, Issuer: workflow.NewIssuer(TokenKey)}
	}
	opts := options(c.Server)
	srv, err := mcpserver.New(opts, store, mcpserver.Cluster{
		Client:    cl,
		APIReader: cl,
		// A scheme of their own: the fake client adds the list kinds of the unstructured
		// objects it is asked for to its scheme as it serves them, while the server
		// asks informers for kinds.
		Informers:  &informers{fake: &informertest.FakeInformers{Scheme: controllers.NewScheme()}},
		Connection: conn,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// Serve follows the catalog and the processes; the targets call the handler
	// directly, without the network.
	serveCtx, stop := context.WithCancel(context.Background())
	go func() { _ = srv.Serve(serveCtx, ln) }()
	s.Handler, s.URL, s.stop = srv.Handler(), "http://"+ln.Addr().String()+"/mcp", stop
	if err := s.ready(); err != nil {
		return nil, err
	}
	if err := s.initialize(); err != nil {
		return nil, err
	}
	return s, nil
}

// options are the server's options in a test (loopback, both tool surfaces, a call
// timeout of a second), then as configure changes them.
func options(configure func(*mcpserver.Options)) mcpserver.Options {
	opts := mcpserver.Options{
		BindAddress:  "127.0.0.1:0",
		ToolSurface:  mcpserver.SurfaceBoth,
		NameStyle:    mcpserver.StyleUnderscore,
		ClientPrefix: mcpserver.DefaultClientPrefix,
		Version:      "fuzz",
		// A call that waits (for a task, a process) gives up soon: the fake cluster runs
		// workflows only with Config.RunWorkflows.
		CallTimeout: time.Second,
		RequestLog:  "off",
		TokenKey:    TokenKey,
	}
	if configure != nil {
		configure(&opts)
	}
	return opts
}

// fakeCluster is the fake client holding objs, with the instance APIs of snap's
// concrete classes as instances maps them, and the server's interceptor.
func (s *Server) fakeCluster(scheme *runtime.Scheme, snap *catalog.Snapshot, instances meta.RESTMapper, objs []client.Object) client.WithWatch {
	builder := fake.NewClientBuilder().WithScheme(scheme)
	// The API server selects instances by metadata.name and by the selectable
	// fields of their CRD; the fake client does so through indexes.
	for _, c := range snap.Classes {
		if c.InstanceAPI != nil {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(c.GVK())
			builder = builder.WithIndex(u, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} })
			for _, f := range instanceapi.SelectableSlots(c) {
				builder = builder.WithIndex(u, "spec."+f, func(o client.Object) []string {
					v, ok, _ := unstructured.NestedFieldNoCopy(o.(*unstructured.Unstructured).Object, "spec", f)
					if !ok {
						return nil
					}
					return []string{fmt.Sprint(v)}
				})
			}
		}
	}
	cl := builder.
		WithRESTMapper(meta.MultiRESTMapper{testrestmapper.TestOnlyStaticRESTMapper(scheme), instances}).
		WithObjects(objs...).
		WithStatusSubresource(&metav1alpha1.Class{}, &metav1alpha1.Property{}, &metav1alpha1.WorkflowDefinition{},
			&metav1alpha1.ServiceAccount{}, &metav1alpha1.WorkflowProcess{}).
		WithInterceptorFuncs(s.interceptor()).
		Build()
	return cl
}

// samples reads config/samples into typed objects, with the status the reconcilers
// would give them (every class resolved and served, the account ready), adds the
// built-in workflows' definitions, and answers the catalog inputs they make. account
// changes the account (Config.Account).
func samples(scheme *runtime.Scheme, account func(*metav1alpha1.ServiceAccountSpec)) ([]client.Object, catalog.Inputs, error) {
	var objs []client.Object
	var in catalog.Inputs
	ready := []metav1.Condition{{Type: metav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Fuzz"},
		{Type: metav1alpha1.ConditionInstanceAPIEstablished, Status: metav1.ConditionTrue, Reason: "Fuzz"}}
	for _, f := range testenv.SampleFiles {
		us, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "samples", f))
		if err != nil {
			return nil, in, err
		}
		for _, u := range us {
			o, err := scheme.New(u.GroupVersionKind())
			if err != nil {
				return nil, in, err
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
				return nil, in, err
			}
			switch t := o.(type) {
			case *metav1alpha1.Class:
				t.Status.Conditions = ready
				if !t.Spec.Abstract {
					t.Status.InstanceAPI = &metav1alpha1.InstanceAPIStatus{}
				}
				in.Classes = append(in.Classes, *t)
			case *metav1alpha1.Property:
				in.Properties = append(in.Properties, *t)
			case *metav1alpha1.WorkflowDefinition:
				in.Workflows = append(in.Workflows, *t)
			case *metav1alpha1.ServiceAccount:
				t.Status.Conditions = ready[:1]
				account(&t.Spec)
				in.ServiceAccounts = append(in.ServiceAccounts, *t)
			}
			objs = append(objs, o.(client.Object))
		}
	}
	// The built-in workflows' definitions, which the manager keeps in the cluster.
	for _, wd := range builtin.Definitions() {
		objs = append(objs, wd)
		in.Workflows = append(in.Workflows, *wd)
	}
	return objs, in, nil
}

// copies are n copies of the sample class zorp/SpaceBoot under kinds of their own.
func copies(classes []metav1alpha1.Class, n int) []metav1alpha1.Class {
	var out []metav1alpha1.Class
	for _, c := range classes {
		if c.Name != "zorp.spaceboot" {
			continue
		}
		for i := 1; i <= n; i++ {
			cp := *c.DeepCopy()
			cp.Spec.Kind = fmt.Sprintf("Copy%d", i)
			cp.Name = "zorp.copy" + strconv.Itoa(i)
			out = append(out, cp)
		}
	}
	return out
}

// interceptor answers SubjectAccessReviews (the fake cluster has no RBAC: the
// server's own checks are what is fuzzed) and records every write outside the
// account's namespace.
func (s *Server) interceptor() interceptor.Funcs {
	record := func(verb string, obj client.Object) {
		if ns := obj.GetNamespace(); ns != "" && ns != Home {
			s.mu.Lock()
			s.strays = append(s.strays, fmt.Sprintf("%s %T %s/%s", verb, obj, ns, obj.GetName()))
			s.mu.Unlock()
		}
	}
	return interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if meta, ok := list.(*metav1.PartialObjectMetadataList); ok {
				return listMetadata(ctx, c, meta, opts...)
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				sar.Status.Allowed = true
				return nil
			}
			record("create", obj)
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			if p, ok := obj.(*metav1alpha1.WorkflowProcess); ok && s.workflows != nil {
				return s.reconcile(ctx, p)
			}
			// No controller runs workflows here: a process ends as it starts, so that a
			// tool that waits for one answers at once.
			if p, ok := obj.(*metav1alpha1.WorkflowProcess); ok {
				p.Status.Phase = metav1alpha1.PhaseFailed
				p.Status.StatusMessage = "the fuzz cluster runs no workflows"
				return c.Status().Update(ctx, p)
			}
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			record("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			record("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			s.mu.Lock()
			s.strays = append(s.strays, fmt.Sprintf("apply %T", obj))
			s.mu.Unlock()
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			record("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			o := &client.DeleteAllOfOptions{}
			o.ApplyOptions(opts)
			if o.Namespace != Home {
				record("delete all of", obj)
			}
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			record("create "+sub+" of", obj)
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			record("update "+sub+" of", obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			record("patch "+sub+" of", obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// listMetadata lists the metadata of instances of a class, which the fake client
// keeps as unstructured objects and cannot convert to PartialObjectMetadata itself
// (the API server serves any kind so); kinds of the scheme it lists as they are.
func listMetadata(ctx context.Context, c client.WithWatch, meta *metav1.PartialObjectMetadataList, opts ...client.ListOption) error {
	gvk := meta.GroupVersionKind()
	if typed, err := c.Scheme().New(gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))); err == nil {
		if _, ok := typed.(runtime.Unstructured); !ok {
			return c.List(ctx, meta, opts...)
		}
	}
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(gvk)
	if err := c.List(ctx, u, opts...); err != nil {
		return err
	}
	meta.Items = make([]metav1.PartialObjectMetadata, 0, len(u.Items))
	for _, it := range u.Items {
		var om metav1.ObjectMeta
		if m, ok := it.Object["metadata"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &om); err != nil {
				return err
			}
		}
		meta.Items = append(meta.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: it.GetAPIVersion(), Kind: it.GetKind()}, ObjectMeta: om})
	}
	meta.SetResourceVersion(u.GetResourceVersion())
	meta.SetContinue(u.GetContinue())
	return nil
}

// CheckHome fails the test when the server wrote outside the account's namespace,
// or the instance there changed.
func (s *Server) CheckHome(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	strays := slices.Clone(s.strays)
	s.mu.Unlock()
	if len(strays) > 0 {
		t.Fatalf("the server wrote outside namespace %s: %v", Home, strays)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot"})
	if err := s.Cluster.Get(context.Background(), client.ObjectKey{Namespace: Elsewhere, Name: "untouchable"}, u); err != nil {
		t.Fatalf("the instance in namespace %s: %v", Elsewhere, err)
	}
	if u.GetResourceVersion() != "999" {
		t.Fatalf("the instance in namespace %s changed: resourceVersion %s", Elsewhere, u.GetResourceVersion())
	}
}

// informers are the fake informers, safe for the concurrent use the server makes of
// them.
type informers struct {
	mu   sync.Mutex
	fake *informertest.FakeInformers
}

func (i *informers) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.fake.GetInformer(ctx, obj, opts...)
}

func (i *informers) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.fake.GetInformerForKind(ctx, gvk, opts...)
}

func (i *informers) RemoveInformer(ctx context.Context, obj client.Object) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.fake.RemoveInformer(ctx, obj)
}

func (i *informers) Start(ctx context.Context) error { return i.fake.Start(ctx) }

func (i *informers) WaitForCacheSync(ctx context.Context) bool { return i.fake.WaitForCacheSync(ctx) }

func (i *informers) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return i.fake.IndexField(ctx, obj, field, extract)
}

// ready waits until the server serves the catalog.
func (s *Server) ready() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec := httptest.NewRecorder()
		s.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if rec.Code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not become ready: %d %s", rec.Code, rec.Body)
		}
		<-time.After(10 * time.Millisecond)
	}
}

// initialize opens the session of the 2025-11-25 revision and lists the tools.
func (s *Server) initialize() error {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + SessionRevision +
		`","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`
	rec := s.Post(VariantSession, []byte(init))
	if rec.Code != http.StatusOK {
		return fmt.Errorf("initialize: %d %s", rec.Code, rec.Body)
	}
	s.Session = rec.Header().Get("Mcp-Session-Id")
	if msgs, err := Messages(rec); err == nil && len(msgs) > 0 {
		s.Initialized = msgs[len(msgs)-1].Result
	}
	if s.Session == "" {
		return errors.New("initialize: no session id")
	}
	if rec := s.Post(VariantSession, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); rec.Code != http.StatusAccepted {
		return fmt.Errorf("notifications/initialized: %d %s", rec.Code, rec.Body)
	}
	msgs, err := Messages(s.Post(VariantSession, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)))
	if err != nil || len(msgs) == 0 {
		return fmt.Errorf("tools/list: %v", err)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(msgs[len(msgs)-1].Result, &list); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range list.Tools {
		s.Tools = append(s.Tools, t.Name)
	}
	sort.Strings(s.Tools)
	if len(s.Tools) == 0 {
		return errors.New("tools/list: no tools")
	}
	return nil
}

// How a body is sent.
const (
	// VariantSession: in the session opened by initialize, 2025-11-25.
	VariantSession = iota
	// VariantStateless: 2026-07-28, with the Mcp-Method and Mcp-Name headers the
	// body's method and name ask for.
	VariantStateless
	// VariantRaw: 2026-07-28 headers, but no Mcp-Method: the body alone.
	VariantRaw
	// VariantAnonymous: no token.
	VariantAnonymous
	Variants
)

// Post sends a body to /mcp through the whole chain, as a client of the variant.
func (s *Server) Post(variant int, body []byte) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if variant != VariantAnonymous {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	switch variant {
	case VariantSession:
		req.Header.Set("Mcp-Protocol-Version", SessionRevision)
		if s.Session != "" {
			req.Header.Set("Mcp-Session-Id", s.Session)
		}
	case VariantStateless:
		req.Header.Set("Mcp-Protocol-Version", StatelessRevision)
		var head struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &head) == nil {
			req.Header.Set("Mcp-Method", head.Method)
			if n := head.Params.Name + head.Params.URI; n != "" {
				req.Header.Set("Mcp-Name", n)
			}
		}
	case VariantRaw, VariantAnonymous:
		req.Header.Set("Mcp-Protocol-Version", StatelessRevision)
	}
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	return rec
}

// Message is one JSON-RPC Message of an answer.
type Message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      json.RawMessage  `json:"id"`
	Method  string           `json:"method"`
	Result  json.RawMessage  `json:"result"`
	Error   *json.RawMessage `json:"error"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    *int64  `json:"code"`
	Message *string `json:"message"`
}

// Messages reads the JSON-RPC Messages of an answer: one JSON object (or a batch),
// or the data of each event of a stream. It fails on anything that is not valid
// JSON-RPC: a Message with neither method, result nor error, an error without code
// or Message.
func Messages(rec *httptest.ResponseRecorder) ([]Message, error) {
	ct := rec.Header().Get("Content-Type")
	body := rec.Body.Bytes()
	var raws [][]byte
	switch {
	case strings.HasPrefix(ct, "application/json"):
		raws = append(raws, body)
	case strings.HasPrefix(ct, "text/event-stream"):
		for line := range strings.Lines(string(body)) {
			// The priming event (for resumption) has empty data.
			if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok && strings.TrimSpace(data) != "" {
				raws = append(raws, []byte(strings.TrimSpace(data)))
			}
		}
	default:
		return nil, nil
	}
	var out []Message
	for _, raw := range raws {
		if !json.Valid(raw) {
			return nil, fmt.Errorf("not JSON: %q in %q", raw, body)
		}
		var batch []json.RawMessage
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			if err := json.Unmarshal(raw, &batch); err != nil {
				return nil, fmt.Errorf("not a batch: %q", raw)
			}
		} else {
			batch = []json.RawMessage{raw}
		}
		for _, r := range batch {
			var m Message
			if err := json.Unmarshal(r, &m); err != nil {
				return nil, fmt.Errorf("not a JSON-RPC Message: %q: %w", r, err)
			}
			if m.JSONRPC != "2.0" {
				return nil, fmt.Errorf("not JSON-RPC 2.0: %q", r)
			}
			if m.Method == "" && m.Result == nil && m.Error == nil {
				return nil, fmt.Errorf("neither a request, a result nor an error: %q", r)
			}
			if m.Error != nil {
				var e rpcError
				if err := json.Unmarshal(*m.Error, &e); err != nil || e.Code == nil || e.Message == nil || *e.Message == "" {
					return nil, fmt.Errorf("an error without code or Message: %q", r)
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// ErrorOf is the code and Message of a Message's error.
func ErrorOf(m Message) (int64, string) {
	if m.Error == nil {
		return 0, ""
	}
	var e rpcError
	_ = json.Unmarshal(*m.Error, &e)
	if e.Code == nil || e.Message == nil {
		return 0, ""
	}
	return *e.Code, *e.Message
}

// meta2026 is what a request of the StatelessRevision revision carries in Params._meta.
var meta2026 = map[string]any{"io.modelcontextprotocol/protocolVersion": StatelessRevision,
	"io.modelcontextprotocol/clientCapabilities": map[string]any{}}

// Params are a request's Params as a client of variant v sends them.
func Params(v int, p map[string]any) map[string]any {
	if v == VariantStateless {
		p["_meta"] = meta2026
	}
	return p
}

// CallOK calls a tool as a client of variant v and fails the test unless it answers
// a result that is not an error.
func (s *Server) CallOK(t testing.TB, v int, name string) {
	t.Helper()
	answer, _ := s.Request(t, v, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
	var res struct {
		IsError bool `json:"isError"`
	}
	if code, msg := ErrorOf(answer); code != 0 || json.Unmarshal(answer.Result, &res) != nil || res.IsError {
		t.Fatalf("variant %d: %s answers %d %q %s", v, name, code, msg, answer.Result)
	}
}

// Request sends a JSON-RPC request as a client of variant v (with a fresh id, and
// the params a client of the variant sends) and answers its response and the HTTP
// status; it fails the test on an answer that is not JSON-RPC or has no response.
func (s *Server) Request(t testing.TB, v int, method string, params map[string]any) (Message, int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.NextID(), "method": method, "params": Params(v, params)})
	rec := s.Post(v, body)
	msgs, err := Messages(rec)
	if err != nil {
		t.Fatalf("%s: HTTP %d: %v", method, rec.Code, err)
	}
	return AnswerOf(t, method, rec, msgs), rec.Code
}

// Client is a go-sdk client of the server at a revision, with the account's token.
func (s *Server) Client(t testing.TB, revision string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: s.URL, HTTPClient: &http.Client{Transport: testenv.Bearer{Token: s.Token}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connecting at %s: %v", revision, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// AnswerOf is the response among an answer's Messages (notifications may precede it).
func AnswerOf(t testing.TB, what string, rec *httptest.ResponseRecorder, msgs []Message) Message {
	t.Helper()
	for _, m := range msgs {
		if m.Method == "" {
			return m
		}
	}
	t.Fatalf("%s: no JSON-RPC response: HTTP %d %s", what, rec.Code, rec.Header().Get("Content-Type"))
	return Message{}
}
