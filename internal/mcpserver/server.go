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
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/apps"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/card"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/edge"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/govern"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/instances"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/keys"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/prompts"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/ahead"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/tasks"
	mcptransport "github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sessions"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// ClusterOf is how a server in a manager reaches the cluster: the manager's client,
// API reader, informer cache and connection.
func ClusterOf(mgr manager.Manager) Cluster {
	return Cluster{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Informers: mgr.GetCache(),
		Instances: mgr.GetCache(), Connection: identity.ConnectionOf(mgr, nil)}
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
	// Instances is the cache finds read instances from (the manager's); nil: finds
	// list through the API server.
	Instances cache.Cache
	// Connection makes the clients that act as accounts.
	Connection identity.Connection
}

// Server is the MCP server of one manager replica, assembled from the rooms of
// this package's subpackages.
type Server struct {
	opts Options
	// authServer is the OAuth authorization server, when it is served.
	authServer *authserver.Server
	store      *catalog.Store
	mcp        *mcp.Server
	edge       *edge.Edge
	http       http.Handler
	ready      atomic.Bool
	// servedVersion is the newest catalog version the server serves in full, and
	// unchecked whether it has an account the leader has not checked yet (stored
	// first). firstBuild is when the catalog's first build was served (Unix ns, 0:
	// not yet), and settled whether the server was ever ready.
	servedVersion atomic.Uint64
	unchecked     atomic.Bool
	firstBuild    atomic.Int64
	settled       atomic.Bool
	processes     *process.Service
	verbs         *verbs.Env
	// plan says which tools a snapshot asks for.
	plan      *planner
	resources *resources.Service
	prompts   *prompts.Service
	// sessions close the sessions of locked-out accounts.
	sessions  *sessions.Registry
	informers cache.Informers
	// requests logs every request, to the logger Serve is given.
	requests *telemetry.RequestLog
	// tokens seal what the server hands clients to hand back (cursors, continue
	// tokens).
	tokens *seal.Sealer

	// served is what tools/list offers now, and tools its entries by served name:
	// their fingerprints tell the catalog sync which tools changed, and their
	// definitions run the calls an Approval lets run.
	served tool.Table
	tools  atomic.Pointer[map[string]entry]
	// lists are the tools/list answers rendered since the served tools last changed.
	lists *ahead.ListCache
	// instances serves finds from the cache (nil: from the API server).
	instances *instances.Cache
	// gate applies the call policies to every tools/call, and client writes what it
	// counted into their status.
	gate      *govern.Gate
	approvals *govern.Approvals
	client    client.Client
}

// New assembles the server. Start it with Start (it is a manager Runnable).
func New(opts Options, store *catalog.Store, cl Cluster) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withAuthorizationServer()
	var as *authserver.Server
	if opts.AuthorizationServer.Enabled {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		as, err = authserver.New(ctx, opts.AuthorizationServer, cl.Client, cl.APIReader)
		cancel()
		if err != nil {
			return nil, err
		}
		opts.OAuth.Issued = as.Tokens()
	}
	s := &Server{authServer: as, opts: opts, store: store, informers: cl.Informers,
		lists: ahead.NewListCache(ahead.MaxEntries, ahead.MaxBytes, tool.ClientOf)}
	s.tools.Store(&map[string]entry{})
	var err error
	var anonymous *catalog.Account
	if opts.NoAuth {
		anonymous = keys.NoAuthAccount(opts.NoAuthNamespace)
	}
	// What the server does for an account, it does as the account's Kubernetes
	// identity; only the no-auth account (loopback only) acts as the manager.
	ids := identity.New(cl.Connection, anonymous)
	// What the server hands a client to hand back is sealed with a key every replica
	// shares (one of its own when none is given: its tokens then open here only).
	tokens := seal.Random()
	if len(opts.TokenKey) > 0 {
		if tokens, err = seal.New(opts.TokenKey); err != nil {
			return nil, err
		}
	}
	s.tokens = tokens
	s.gate, s.client = govern.New(opts.Policies, cl.Client), cl.Client
	s.processes = process.New(store, cl.Client, cl.APIReader, cl.Informers, ids, opts.Limits(), tokens, workflow.NewIssuer(opts.TokenKey))
	s.approvals = govern.NewApprovals(cl.Client, cl.APIReader, s.processes, store, s.runApproved)
	s.gate.Approvals(s.approvals)
	if cl.Instances != nil {
		s.instances = instances.New(cl.Instances)
	}
	s.verbs = &verbs.Env{Identities: ids, Instances: s.instances, Processes: s.processes, Style: opts.NameStyle, Metamodel: cl.Client, Catalog: store,
		Served: s.servedVersion.Load}
	if s.plan, err = newPlanner(opts, s.verbs); err != nil {
		return nil, err
	}

	s.mcp = s.newSDKServer(opts)
	s.prompts = prompts.New(s.mcp, store, opts.NameStyle)
	guard := authorize.NewGuard(&s.served, opts.NameStyle, opts.DefaultMaxTools)
	s.sessions = sessions.NewRegistry(store, cl.Client, anonymous)
	s.resources = resources.New(s.mcp, store, ids, guard, s.sessions, cl.Informers, cl.APIReader, s.prompts.Workflow, tokens)
	s.resources.Reads = s.gate.Read
	s.resources.NameStyle, s.resources.NoViews = opts.NameStyle, opts.NoViews
	if s.requests, err = telemetry.NewRequestLog(opts.RequestLog); err != nil {
		return nil, err
	}
	tel := opts.Telemetry.WithRequestLog(s.requests)
	taskAdapter, err := tasks.New(s.mcp, &s.served, s.processes,
		tool.Bounds{Bytes: opts.MaxResultBytes, Items: opts.MaxResultItems}, tool.Encode(opts.NameStyle, "sandbar.tasks.result"),
		tool.Encode(opts.NameStyle, "sandbar.workflow.transition"))
	if err != nil {
		return nil, err
	}
	// The first is the outermost: the recovery of a panic that nothing inside
	// recovered (telemetry recovers the rest, and logs and audits it as the request it
	// was); telemetry times every request and sees the answer the client gets;
	// a result of the stateless revision that a middleware made is marked complete,
	// as the SDK marks its own; redaction sees every answer last before that (results
	// and errors, whichever middleware made them); the count of SubjectAccessReviews bounds those of each
	// request (everything inside it checks access); then the session registry and the
	// Tasks adapter see every request and the account first (the adapter's Params,
	// outermost, fills what the SDK leaves nil before anything reads it). tools/list is
	// answered from the answers rendered (adapted, filtered, redacted) since the tools
	// last changed. What the server sends on its own (progress, list changes, resource
	// updates) reaches a session only while its account may have it, and passes
	// redaction on the sending side.
	receiving := []mcp.Middleware{contain.Middleware, taskAdapter.Params, tel.Middleware(&s.served), mcptransport.CompleteResults, redact.Middleware, countReviews, bounded(opts.callTimeout()), s.sessions.Middleware,
		s.lists.Middleware, taskAdapter.Middleware, guard.Middleware, s.prompts.Middleware, s.resources.Middleware}
	s.mcp.AddReceivingMiddleware(receiving...)
	s.mcp.AddSendingMiddleware(s.sessions.Notifications, s.resources.Updates, redact.Sending)

	authn, err := newAuthenticator(opts, store, cl, anonymous)
	if err != nil {
		return nil, err
	}
	authenticate := opts.Telemetry.Authentication(authn.Middleware)
	e, err := edge.New(edge.Options{AllowedOrigins: opts.AllowedOrigins, Authenticate: authenticate, Ready: s.isReady})
	if err != nil {
		return nil, err
	}
	transport, legacy := s.transports(opts, tel, taskAdapter, receiving)
	// A browser's GET on the endpoint gets a page that says what it is, not the
	// transport's refusal (transport.Page).
	e.HandleWith(endpointPath, func(h http.Handler) http.Handler { return mcptransport.Page(card.Suffix, authenticate(h)) }, transport)
	e.Handle(legacySSEPath, legacy)
	var route *card.OAuth
	if opts.OAuth.Enabled() {
		if route, err = serveOAuth(e, opts.OAuth, authn, opts.Telemetry.Authentication, transport, legacy); err != nil {
			return nil, err
		}
	}
	if as != nil {
		e.HandlePublic(as.Path()+"/", as.Handler())
		for _, p := range as.WellKnown() {
			e.HandlePublic(p, as.MetadataHandler())
		}
	}
	if err := serveCards(e, opts, route); err != nil {
		return nil, err
	}
	s.edge, s.http = e, e.Handler()
	return s, nil
}

// newSDKServer is the go-sdk server with the capabilities served; its handlers reach
// the resources service, made once it is.
func (s *Server) newSDKServer(opts Options) *mcp.Server {
	var extensions map[string]any
	if !opts.NoViews {
		// The class and workflow tools' views (package apps), for clients that render them.
		extensions = map[string]any{apps.Extension: map[string]any{"mimeTypes": []string{apps.MIMEType}}}
	}
	return mcp.NewServer(&mcp.Implementation{Name: "sandbar", Title: "Sandbar", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: opts.NameStyle.Spell(instructions),
		Capabilities: &mcp.ServerCapabilities{
			Extensions: extensions,
			//nolint:staticcheck // logging is deprecated in 2026-07-28 only; the revisions served here have it
			Logging:     &mcp.LoggingCapabilities{},
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		},
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return s.resources.Complete(ctx, req)
		},
		SetCacheable:       cacheable,
		SubscribeHandler:   func(ctx context.Context, req *mcp.SubscribeRequest) error { return s.resources.Subscribe(ctx, req) },
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error { return s.resources.Unsubscribe(ctx, req) },
	})
}

// catalogTTL is how long a client of the stateless revision may keep what follows
// the catalog (server/discover, tools/list, prompts/list, resources/templates/list)
// before it asks again. That revision has no stream that tells every client of a
// change: only a client that holds a subscriptions/listen stream hears
// list_changed, and the rest learn of a new Class or workflow when they ask again.
// A catalog change reaches the served lists within syncInterval; with what a
// client keeps no older than the rest of a second, every client sees a new Class
// within a second, and the server is still spared a client that lists before
// every step of a conversation.
const catalogTTL = time.Second - syncInterval

// cacheable says how a result of the stateless revision may be cached (its ttlMs
// and cacheScope). What the lists and reads hold is one account's (its tools, its
// workflows, its namespaces' instances): only that account's client may keep it,
// never a cache shared between accounts, so every answer is "private". Instances
// (resources/list, resources/read) change with any write to the cluster, which
// nothing announces except to a subscription: their answers are stale at once (0).
func cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	c.CacheScope = "private"
	switch req.(type) {
	case *mcp.ListResourcesRequest, *mcp.ReadResourceRequest:
		c.TTLMs = 0
	default:
		c.TTLMs = int(catalogTTL / time.Millisecond)
	}
}

// newAuthenticator checks API keys against the catalog's accounts; with a
// connection, a refusal stands only while the API server answers, and a key Secret
// the cache has not seen is read past it.
func newAuthenticator(opts Options, store *catalog.Store, cl Cluster, anonymous *catalog.Account) (*keys.Authenticator, error) {
	authn := keys.NewAuthenticator(store, cl.Client, opts.RateLimit, opts.RateBurst, anonymous)
	if cl.Connection.Config != nil {
		// The accounts and their keys are read from the cache, which is behind while
		// the API server does not answer: a refusal stands only while it does.
		probe, err := newAPIServerProbe(cl.Connection.Config)
		if err != nil {
			return nil, err
		}
		authn.ConfirmRefusalsWith(probe.answers)
		// A key Secret the cache has not seen yet (or not as it is now) is read past it.
		authn.ReadRefusedKeysFrom(cl.APIReader)
	}
	return authn, nil
}

// transports are the handlers of /mcp (the session-based revisions and the stateless
// one side by side) and of /mcp/sse (the legacy one), each behind the same capture
// (request ids, task parameters) and within the holds of sessions and streams.
func (s *Server) transports(opts Options, tel *telemetry.Telemetry, taskAdapter *tasks.Adapter, receiving []mcp.Middleware) (transport, legacy http.Handler) {
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		SessionTimeout:      opts.SessionTimeout,
		// Lets clients resume a stream after a dropped connection (Last-Event-ID) and
		// keeps list_changed notifications for clients without an open GET stream,
		// within bounds per session and in all.
		EventStore: mcptransport.NewEventStore(0, 0),
	})
	// The stateless revision (2026-07-28) has no sessions: every request is whole, so
	// any replica answers it, and it ends the work it started when its client goes.
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          opts.MaxRequestBytes,
		PropagateRequestCancellation: true,
	})
	// Sessions and streams cost memory for as long as they are open: each account (and
	// OAuth person) may hold so many, and the replica so many in all. The SDK makes a
	// session for a POST without a session id; a session's GET, a stateless request's
	// subscriptions/listen and a legacy GET each hold a stream open.
	holds := sessions.NewHolds(opts.Holds(), opts.Telemetry.Refused)
	// A stateless request whose headers do not repeat its body is refused before it
	// takes a hold.
	held := mcptransport.ByRevision(holds.Sessions(streamable, s.sessions),
		mcptransport.MirroredHeaders(holds.Listens(stateless, opts.MaxRequestBytes), opts.MaxRequestBytes))
	// Every transport sees the same capture (request ids, task parameters) behind the
	// same chain: /mcp serves the session-based revisions and the stateless one side by
	// side, and the legacy one (2024-11-05) is /mcp/sse.
	capture := func(h http.Handler) http.Handler {
		return tel.Capture(tasks.Capture(h, opts.MaxRequestBytes), opts.MaxRequestBytes)
	}
	transport = capture(mcptransport.PlainJSON(s.lists.Direct(
		mcptransport.Coalesce(held, mcptransport.PrimeHold), ahead.DirectOptions{
			Around: tel.Middleware(&s.served), Limit: opts.MaxRequestBytes, Session: s.liveSession, SessionTimeout: opts.SessionTimeout,
			Methods: map[string]ahead.Method{
				"ping":      {Request: pingRequest, Serve: pong},
				"tasks/get": {Request: tasks.GetRequest, Serve: taskAdapter.Get},
			},
			Receiving: receiving,
		})))
	legacy = capture(ahead.Strip(holds.Legacy(mcptransport.NewSSE(s.mcp, opts.MaxRequestBytes, opts.SessionTimeout))))
	return transport, legacy
}

// bounded gives every request a deadline, the call timeout, so that nothing on a
// request's path (a resource read, a listing, a completion, a subscription) waits
// without one for an API server that does not answer. tools/call sets its own (a
// tool that waits gets its wait on top), tasks/result waits for its task until the
// client goes, and subscriptions/listen is a stream that lasts.
func bounded(timeout time.Duration) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call", "tasks/result", "subscriptions/listen":
				return next(ctx, method, req)
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return next(ctx, method, req)
		}
	}
}

// pingRequest is a session's ping as the SDK hands it to the receiving middleware
// (params nil when the message has none). SDK gap (the register:
// internal/mcpserver/sdkgap/doc.go): with ahead.Direct, a go-sdk release whose
// decoder allocates no buffer per message would remove it and pong.
func pingRequest(ss *mcp.ServerSession, params json.RawMessage, extra *mcp.RequestExtra) mcp.Request {
	req := &mcp.ServerRequest[*mcp.PingParams]{Session: ss, Extra: extra}
	if len(params) > 0 {
		req.Params = &mcp.PingParams{}
		if mcptransport.Unmarshal(params, req.Params) != nil {
			return nil
		}
	}
	return req
}

// pong answers a ping, as the SDK does: {}. (The SDK's own receiving middleware,
// of its multi round-trip requests tools/call, prompts/get and resources/read, has
// no part in a ping or a tasks/get, which Direct serves without it.)
func pong(context.Context, string, mcp.Request) (mcp.Result, error) { return &emptyResult{}, nil }

type emptyResult struct{ mcp.ResultBase }

// isReady says whether the server serves the catalog's first build, its accounts
// checked: /readyz fails until then. Before the build, a replica holds the store's
// empty first snapshot: it would list no tools and refuse every token (no
// accounts), so a replica that starts next to others takes no traffic until it has
// what they have. An account the leader has not checked yet (as a chart's bootstrap
// account right after the install) answers its key with 503, so readiness waits
// for the leader to check it too, for at most AccountsCheckWait after the build
// (the leader may be gone), and `helm install --wait` means the key the NOTES name
// works. Once ready, it stays so.
func (s *Server) isReady() bool {
	if s.settled.Load() {
		return true
	}
	built, ok := s.store.Built()
	if !ok || !s.ready.Load() || s.servedVersion.Load() < built {
		return false
	}
	if s.unchecked.Load() && time.Since(time.Unix(0, s.firstBuild.Load())) < s.opts.accountsCheckWait() {
		return false
	}
	s.settled.Store(true)
	return true
}

// liveSession is the live session of the session-based revisions with an id, and
// the account it acts for now (nil when locked out or not known yet).
func (s *Server) liveSession(id string) (*mcp.ServerSession, *catalog.Account) {
	ss := s.sessions.Live(id)
	if ss == nil {
		return nil, nil
	}
	return ss, s.sessions.Account(ss)
}

// endpointPath serves Streamable HTTP; legacySSEPath the HTTP+SSE transport of
// 2024-11-05 (GET the stream, POST to the endpoint it names) beside it.
const (
	endpointPath  = "/mcp"
	legacySSEPath = "/mcp/sse"
)

// serveOAuth serves the transports to OAuth access tokens on the OAuth route (its
// path and its legacy SSE path under it, and /mcp and /mcp/sse on its host if it
// has one), and the route's Protected Resource
// Metadata. /mcp on other hosts advertises nothing of OAuth: clients with a
// configured bearer token (which some drop once a server advertises OAuth) keep it.
// audited wraps the token check, so that its refusals are audit events as /mcp's are.
// It answers the route as the server card names it.
func serveOAuth(e *edge.Edge, cfg oauth.Config, authn *keys.Authenticator,
	audited func(func(http.Handler) http.Handler) func(http.Handler) http.Handler, transport, legacy http.Handler) (*card.OAuth, error) {
	o, err := oauth.NewAuthenticator(cfg, authn)
	if err != nil {
		return nil, err
	}
	cfg = o.Config()
	metadata := auth.ProtectedResourceMetadataHandler(o.Metadata())
	check := audited(o.Middleware)
	page := func(h http.Handler) http.Handler { return mcptransport.Page(card.Suffix, check(h)) }
	e.HandleWith(cfg.Path, page, transport)
	e.HandleWith(cfg.Path+"/sse", check, legacy)
	e.HandlePublic(oauth.WellKnownResource+cfg.Path, metadata)
	if cfg.Host != "" {
		e.HandleWith(cfg.Host+"/mcp", page, transport)
		e.HandleWith(cfg.Host+legacySSEPath, check, legacy)
		e.HandlePublic(cfg.Host+oauth.WellKnownResource+"/mcp", metadata)
		e.HandlePublic(cfg.Host+oauth.WellKnownResource, metadata)
	}
	return &card.OAuth{URL: cfg.ResourceURL, MetadataURL: o.MetadataURL()}, nil
}

// AuthorizationServerStatus is the runnable that writes the authorization
// server's status while its replica leads; nil when the server is off.
func (s *Server) AuthorizationServerStatus() *authserver.StatusReporter {
	if s.authServer == nil {
		return nil
	}
	return s.authServer.StatusReporter()
}

// Handler is the server's HTTP handler: /mcp, /mcp/sse, /healthz and /readyz.
func (s *Server) Handler() http.Handler { return s.http }

// NeedLeaderElection is false: every replica serves MCP.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends; then /readyz fails while requests are still taken
// for ShutdownDelay, and requests in flight get up to 10 s to finish.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("MCP server: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Start on a listener of the caller's.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.opts.NoAuth && !edge.Loopback(ln.Addr().String()) {
		return fmt.Errorf("MCP server: no-auth mode on %s, which is not loopback", ln.Addr())
	}
	log := ctrl.LoggerFrom(ctx).WithName("mcp")
	s.requests.SetLogger(log)
	if err := s.processes.Watch(ctx); err != nil {
		return fmt.Errorf("MCP server: watching processes: %w", err)
	}
	if err := s.sessions.Follow(ctx, s.mcp, s.informers); err != nil {
		return fmt.Errorf("MCP server: following sessions: %w", err)
	}
	contain.Loop(ctx, "catalog-follow", s.follow)
	if s.instances != nil {
		contain.Loop(ctx, "instances-evict", s.instances.Run)
	}
	contain.Loop(ctx, "policy-counts", func(ctx context.Context) { s.gate.Tally().Run(ctx, s.client) })
	if err := s.approvals.Run(ctx, s.informers, s.auditApproval); err != nil {
		return fmt.Errorf("MCP server: following approvals: %w", err)
	}
	if s.authServer != nil {
		contain.Loop(ctx, "oauth-authorization-server", s.authServer.Run)
	}
	log.Info("serving MCP", "address", ln.Addr().String(), "path", "/mcp", "legacySSE", legacySSEPath)
	if o := s.opts.OAuth; o.Enabled() {
		o = o.WithDefaults()
		log.Info("serving MCP to OAuth access tokens", "path", o.Path, "host", o.Host, "issuer", o.IssuerURL, "resource", o.ResourceURL)
	}
	if s.opts.NoAuth {
		log.Info("WARNING: serving MCP without authentication (loopback only)", "namespace", s.opts.NoAuthNamespace)
	}
	timeouts := edge.DefaultTimeouts
	timeouts.ShutdownDelay = s.opts.ShutdownDelay
	return s.edge.Serve(ctx, ln, timeouts)
}

// syncInterval is the least time between two syncs of the served tools, resources
// and prompts with the catalog. The first snapshot after a quiet moment is served at
// once; the snapshots of a metamodel applied at once (about one a Class) are served
// together a few times a second, each sync with one tools/list_changed to every
// session (and one tools/list from each client), not one a snapshot.
const syncInterval = 200 * time.Millisecond

// follow keeps the served tools, resources and prompts equal to what the newest
// catalog snapshot asks for. The SDK sends the list_changed notifications.
func (s *Server) follow(ctx context.Context) {
	for {
		snap, changed := s.store.Watch()
		s.syncTools(snap)
		s.resources.Sync(ctx, snap)
		s.prompts.Sync(snap)
		// In this order: isReady, once it sees the build served, sees the rest. Once
		// ready, the accounts need not be looked through again.
		if !s.settled.Load() {
			s.unchecked.Store(snap.UncheckedAccounts())
		}
		if built, ok := s.store.Built(); ok && snap.Version >= built {
			s.firstBuild.CompareAndSwap(0, time.Now().UnixNano())
		}
		s.servedVersion.Store(snap.Version)
		s.ready.Store(true)
		synced := time.Now()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		// The store's empty first snapshot (version 0) is all a server has before its
		// catalog is first built: that build is served at once, not after the interval.
		if wait := syncInterval - time.Since(synced); wait > 0 && snap.Version > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// syncTools serves the tools of a snapshot, adding only those that changed.
func (s *Server) syncTools(snap *catalog.Snapshot) {
	// No tools/list answer outlives the snapshot it was rendered from, and none is
	// kept while the table and the SDK's tools disagree.
	defer s.lists.Changing()()
	entries, withheld := s.plan.tools(snap)
	last, next := *s.tools.Load(), make(map[string]entry, len(entries))
	infos := make(map[string]tool.Info, len(entries))
	var changed []entry
	for _, e := range entries {
		if e.fingerprint == "" {
			b, _ := json.Marshal(e.tool)
			e.fingerprint = string(b)
		}
		next[e.tool.Name], infos[e.tool.Name] = e, e.info
		if last[e.tool.Name].fingerprint != e.fingerprint {
			changed = append(changed, e)
		}
	}
	// The table first: clients list again when the SDK tells them of a new tool.
	s.served.Replace(infos, withheld)
	s.tools.Store(&next)
	for _, c := range changed {
		s.mcp.AddTool(encodedSchema(c.tool), tool.Handler(c.def, c.tool.Name, s.call(c.tool.Name)))
	}
	var gone []string
	for name := range last {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
}

// encodedSchema is t with its input schema encoded once, as the SDK is given it: on
// every tools/call of the stateless revision the SDK encodes the called tool's schema
// to look for x-mcp-header annotations, which a *jsonschema.Schema costs a walk by
// reflection each time and JSON only a copy. The bytes sent are the same.
func encodedSchema(t *mcp.Tool) *mcp.Tool {
	if _, ok := t.InputSchema.(json.RawMessage); ok {
		return t
	}
	b, err := json.Marshal(t.InputSchema)
	if err != nil {
		return t // the SDK says what is wrong with it
	}
	out := *t
	out.InputSchema = json.RawMessage(b)
	return &out
}

// runApproved runs a call an Approval let run (govern.Executor): as its account,
// as the server serves the tool now, through the gate again (the rule that held it
// lets this call through, and every other policy decides as on any call), with no
// session to ask a question of: the people who approved it confirmed it.
func (s *Server) runApproved(ctx context.Context, acct *catalog.Account, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	e, served := (*s.tools.Load())[name]
	if !served {
		return tool.ErrorResult(fmt.Sprintf("the tool %s is no longer served: nothing ran", name)), nil
	}
	if !authorize.MayCall(acct, name, e.info) {
		return tool.ErrorResult(fmt.Sprintf("forbidden: the account's permissions no longer let it call %s: nothing ran", name)), nil
	}
	if e.def.Confirms {
		var m map[string]any
		if json.Unmarshal(args, &m) == nil {
			if m == nil {
				m = map[string]any{}
			}
			m[tool.ConfirmArg] = true
			args, _ = json.Marshal(m)
		}
	}
	h := tool.Handler(e.def, name, func(*mcp.CallToolRequest) (*tool.Call, error) { return s.newCall(name, acct), nil })
	return h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
}

// auditApproval audits what came of a held call.
func (s *Server) auditApproval(o govern.Outcome) {
	outcome := telemetry.Allowed
	switch {
	case o.Phase != metav1alpha1.ApprovalDone:
		outcome = telemetry.Denied
	case o.IsError:
		outcome = telemetry.Error
	}
	ns, name, _ := strings.Cut(o.Account, "/")
	s.opts.Telemetry.Approval(telemetry.Ref{Namespace: ns, Name: name}, o.User, o.Tool,
		telemetry.Ref{Namespace: o.Approval.Namespace, Name: o.Approval.Name}, outcome, o.Message, o.By)
}

// clientName is the name a client gave itself, if any.
func clientName(info *mcp.Implementation) string {
	if info == nil {
		return ""
	}
	return info.Name
}

// call starts a tool call: the newest catalog, the caller's account, its session.
func (s *Server) call(name string) func(*mcp.CallToolRequest) (*tool.Call, error) {
	return func(req *mcp.CallToolRequest) (*tool.Call, error) {
		acct := caller.Of(req.GetExtra())
		if acct == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no authenticated account"}
		}
		c := s.newCall(name, acct)
		c.Session, c.ProgressToken = req.Session, req.Params.GetProgressToken()
		c.Asking = tool.Asking{CanAsk: tool.TakesForms(req.ClientCapabilities()), Answers: req.Params.InputResponses, State: req.Params.RequestState}
		c.Client, c.Revision = clientName(req.ClientInfo()), req.ProtocolVersion()
		return c, nil
	}
}

// newCall is a call of a tool for an account, as every call is made: the newest
// catalog, the server's bounds, deadline, name style and sealer, and the call
// policies.
func (s *Server) newCall(name string, acct *catalog.Account) *tool.Call {
	return &tool.Call{Tool: name, Snap: s.store.Load(), Account: acct, Deadline: s.opts.callTimeout(), Style: s.opts.NameStyle,
		Bounds: tool.Bounds{Bytes: s.opts.MaxResultBytes, Items: s.opts.MaxResultItems, Scrub: redact.String, Vouch: redact.Vouch}, Sealer: s.tokens,
		Gate: s.gate.Check}
}
