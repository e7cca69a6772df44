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

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Tool surfaces.
const (
	SurfaceOperational = "operational"
	SurfacePerClass    = "per-class"
	SurfaceBoth        = "both"
)

// Options configure the MCP server.
type Options struct {
	// BindAddress is where the HTTP server listens, as ":8080".
	BindAddress string
	// ToolSurface is operational, per-class or both.
	ToolSurface string
	// NameStyle spells tool names.
	NameStyle NameStyle
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to call the
	// endpoint; other cross-origin browser requests get 403.
	AllowedOrigins []string
	// RateLimit is each account's sustained requests per second (0: no limit) and
	// RateBurst the bucket's size.
	RateLimit float64
	RateBurst int
	// MaxRequestBytes limits a request body.
	MaxRequestBytes int64
	// SessionTimeout closes sessions idle for this long.
	SessionTimeout time.Duration
	// Version is the build's version, shown in serverInfo.
	Version string
	// NoAuth serves every request as an account of NoAuthNamespace allowed every tool,
	// for clients that cannot send a token (the MCP conformance suite). It is refused
	// unless the server listens on loopback only.
	NoAuth          bool
	NoAuthNamespace string
}

// Validate checks the options, with messages that name the flag.
func (o Options) Validate() error {
	switch o.ToolSurface {
	case SurfaceOperational, SurfacePerClass, SurfaceBoth:
	default:
		return fmt.Errorf("--tool-surface must be operational, per-class or both, not %q", o.ToolSurface)
	}
	switch o.NameStyle {
	case StyleUnderscore, StyleDotted:
	default:
		return fmt.Errorf("--tool-name-style must be underscore or dotted, not %q", o.NameStyle)
	}
	if o.NoAuth && !loopback(o.BindAddress) {
		return fmt.Errorf("--mcp-insecure-no-auth needs --mcp-bind-address on loopback (127.0.0.1:PORT or [::1]:PORT), not %q", o.BindAddress)
	}
	if o.RateLimit < 0 || (o.RateLimit > 0 && o.RateBurst < 1) {
		return errors.New("--mcp-rate-limit must be >= 0, and --mcp-rate-burst >= 1 with a limit")
	}
	return nil
}

// loopback reports whether an address listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

const instructions = `Sandbar serves a metamodel of classes and their instances, which are stored as Kubernetes objects.
Start by discovering: sandbar_schema_classes lists the classes, sandbar_class_describe shows one class's slots (fields, types, which are required).
Then act: sandbar_entity_create creates an instance ({class, attributes}); sandbar_entity_find finds instances (filters, limit, continue);
sandbar_entity_update changes one (a merge patch); sandbar_entity_validate checks attributes without saving.
Each concrete class also has its own create tool whose arguments are the class's slots.
Long-running work (sandbar_validation_start, sandbar_project_export, sandbar_project_import, sandbar_workflow_start-process) runs as a task:
follow it with tasks/get, or with sandbar_tasks_get and sandbar_tasks_result if the client has no tasks support.
Failed calls say what to fix: missing slots by name, the expected type, the allowed values.`

// Server is the MCP server of one manager replica.
type Server struct {
	opts  Options
	store *catalog.Store
	// client reads the metamodel from the informer cache and instances from the API server.
	client client.Client
	auth   *authenticator
	mcp    *mcp.Server
	http   http.Handler
	ready  atomic.Bool

	mu     sync.Mutex
	served map[string]servedTool

	// informers watch instances for resources/list and resources/subscribe.
	informers      cache.Informers
	apiReader      client.Reader
	events         *processEvents
	rmu            sync.Mutex
	metaResources  map[string]*mcp.Resource
	watches        map[string]*instanceWatch
	prompts        map[string]string // served prompt name -> fingerprint
	promptWorkflow map[string]string // served prompt name -> WorkflowDefinition
}

// servedTool is a tool the server currently serves.
type servedTool struct {
	canonical   string
	readOnly    bool
	longRunning bool
	fingerprint string
}

// ClusterOf is how a server in a manager reaches the cluster: the manager's client,
// API reader and informer cache.
func ClusterOf(mgr manager.Manager) Cluster {
	return Cluster{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Informers: mgr.GetCache()}
}

// Cluster is how the server reaches the cluster.
type Cluster struct {
	// Client reads the metamodel and Secrets from the informer cache and instances
	// from the API server, and writes.
	Client client.Client
	// APIReader reads past the cache, for objects just created.
	APIReader client.Reader
	// Informers follow instances (resources) and processes (tasks).
	Informers cache.Informers
}

// New assembles the server. Start it with Start (it is a manager Runnable).
func New(opts Options, store *catalog.Store, cl Cluster) (*Server, error) {
	c, informers := cl.Client, cl.Informers
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		opts:   opts,
		store:  store,
		client: c,
		auth:   newAuthenticator(store, c, opts.RateLimit, opts.RateBurst, noAuthAccount(opts)),
		served: map[string]servedTool{},

		informers:      informers,
		apiReader:      cl.APIReader,
		events:         &processEvents{waiters: map[string][]chan struct{}{}},
		metaResources:  map[string]*mcp.Resource{},
		watches:        map[string]*instanceWatch{},
		prompts:        map[string]string{},
		promptWorkflow: map[string]string{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{
		Name:    "sandbar",
		Title:   "Sandbar",
		Version: opts.Version,
	}, &mcp.ServerOptions{
		Instructions: instructionsFor(opts.NameStyle),
		Capabilities: &mcp.ServerCapabilities{
			Logging:     &mcp.LoggingCapabilities{},
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		},
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.mcp.AddReceivingMiddleware(s.tasksMiddleware, s.permissions, redact)
	if err := s.registerTaskMethods(); err != nil {
		return nil, err
	}

	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		SessionTimeout:      opts.SessionTimeout,
		// Lets clients resume a stream after a dropped connection (Last-Event-ID) and
		// keeps list_changed notifications for clients without an open GET stream.
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	origins := http.NewCrossOriginProtection()
	for _, o := range opts.AllowedOrigins {
		if err := origins.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("--mcp-allowed-origins: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", instrument(origins.Handler(s.auth.middleware(captureTask(streamable, opts.MaxRequestBytes)))))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	s.http = mux
	return s, nil
}

func instructionsFor(style NameStyle) string {
	if style == StyleDotted {
		return dotted(instructions)
	}
	return instructions
}

// Handler is the server's HTTP handler: /mcp, /healthz and /readyz.
func (s *Server) Handler() http.Handler { return s.http }

// NeedLeaderElection is false: every replica serves MCP.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then lets in-flight requests finish for up to 10 s.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("MCP server: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Start on a listener of the caller's.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.opts.NoAuth && !loopback(ln.Addr().String()) {
		return fmt.Errorf("MCP server: no-auth mode on %s, which is not loopback", ln.Addr())
	}
	log := ctrl.LoggerFrom(ctx).WithName("mcp")
	if err := s.watchProcesses(ctx); err != nil {
		return fmt.Errorf("MCP server: watching processes: %w", err)
	}
	go s.syncTools(ctx)
	srv := &http.Server{
		Handler:           s.http,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	log.Info("serving MCP", "address", ln.Addr().String(), "path", "/mcp")
	if s.opts.NoAuth {
		log.Info("WARNING: serving MCP without authentication (loopback only)", "namespace", s.opts.NoAuthNamespace)
	}
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	return nil
}

// syncTools keeps the served tools equal to what the newest catalog snapshot asks
// for. The SDK sends notifications/tools/list_changed for every change.
func (s *Server) syncTools(ctx context.Context) {
	for {
		snap, changed := s.store.Watch()
		s.apply(snap)
		s.syncResources(ctx, snap)
		s.syncPrompts(snap)
		s.ready.Store(true)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

func (s *Server) apply(snap *catalog.Snapshot) {
	defs := s.tools(snap)
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]servedTool, len(defs))
	for _, d := range defs {
		fp, _ := json.Marshal(d.tool)
		st := servedTool{canonical: d.canonical, readOnly: d.tool.Annotations.ReadOnlyHint, longRunning: d.longRunning, fingerprint: string(fp)}
		next[d.tool.Name] = st
		if old, ok := s.served[d.tool.Name]; ok && old.fingerprint == st.fingerprint {
			continue
		}
		s.mcp.AddTool(d.tool, d.handler)
	}
	var gone []string
	for name := range s.served {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	s.served = next
}

// permitted says whether an account may see and call a served tool: a read-only
// account only read-only tools, and only tools matching one of its globs (matched
// against the served and the canonical name).
func (s *Server) permitted(acct *catalog.Account, name string) bool {
	s.mu.Lock()
	st, ok := s.served[name]
	s.mu.Unlock()
	if !ok || acct == nil {
		return false
	}
	if acct.Permissions.ReadOnly && !st.readOnly {
		return false
	}
	globs := acct.Permissions.Tools
	if len(globs) == 0 {
		globs = []string{"*"}
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, st.canonical); ok {
			return true
		}
	}
	return false
}

// permissions filters tools/list and guards tools/call by the caller's permissions.
func (s *Server) permissions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			list := res.(*mcp.ListToolsResult)
			acct := accountOf(req.GetExtra())
			kept := list.Tools[:0:0]
			for _, t := range list.Tools {
				if s.permitted(acct, t.Name) {
					kept = append(kept, t)
				}
			}
			out := *list
			out.Tools = kept
			return &out, nil
		case "resources/read":
			// The SDK answers unknown URIs with not found; a malformed one is a bad parameter.
			if _, err := ParseURI(req.(*mcp.ReadResourceRequest).Params.URI); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
			}
		case "resources/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return filterResources(accountOf(req.GetExtra()), res.(*mcp.ListResourcesResult)), nil
		case "tools/call":
			call := req.(*mcp.CallToolRequest)
			name := call.Params.Name
			s.mu.Lock()
			_, known := s.served[name]
			s.mu.Unlock()
			if known && !s.permitted(accountOf(req.GetExtra()), name) {
				toolCalls.WithLabelValues(name, "forbidden").Inc()
				return errorResult(fmt.Sprintf(
					"forbidden: this account's permissions do not allow the tool %q (see tools/list for the tools it may call)", name)), nil
			}
		}
		return next(ctx, method, req)
	}
}
