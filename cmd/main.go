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

// Command manager runs the Sandbar operator: the reconcilers of the metamodel, the
// catalog they publish, and the MCP server that serves it. "manager create-key"
// issues an API key for an MCP ServiceAccount.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	// The manager carries its own CA roots, so it verifies TLS peers (an OIDC issuer,
	// an OTLP collector) in an image without a system trust store as well.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
	"github.com/sandbar-dev/sandbar/internal/policy"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// version is the build's version, set with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "create-key" {
		os.Exit(createKey(os.Args[2:]))
	}
	os.Exit(run())
}

func run() int {
	s := bindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&s.zap)))
	// Libraries that log with slog (the OAuth provider) log as the manager does.
	slog.SetDefault(slog.New(logr.ToSlogHandler(ctrl.Log)))
	log := ctrl.Log.WithName("setup")
	setMemoryLimit(log)

	if err := s.complete(log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	clientCheck, err := mcpserver.NewClientCheck(s.mcpOpts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.sandbarOpts.ClientLimits = clientCheck

	restConfig := ctrl.GetConfigOrDie()
	if s.qps != 0 {
		restConfig.QPS, restConfig.Burst = float32(s.qps), s.burst
	}
	ctx := ctrl.SetupSignalHandler()
	if len(s.mcpOpts.TokenKey) == 0 {
		// No key file: the key every replica shares is kept in a Secret of the
		// manager's namespace, made by the first replica.
		if ns := managerNamespace(s.leaderElectNS); ns == "" {
			log.Info("no --mcp-token-key-file and no namespace of the manager's own: cursors and tasks are sealed with a key of this process's own, " +
				"so another replica, or this one after a restart, does not know them")
		} else if key, err := sharedTokenKey(ctx, restConfig, ns); err != nil {
			log.Error(err, "reading the token key (give --mcp-token-key-file, or let the manager make the Secret "+tokenKeySecret+")")
			return 1
		} else {
			s.mcpOpts.TokenKey, s.sandbarOpts.TokenKey = key, key
		}
	}
	if o := &s.mcpOpts.OAuth; o.Enabled() && o.TasksNamespace == "" {
		if o.TasksNamespace = managerNamespace(s.leaderElectNS); o.TasksNamespace == "" {
			log.Info("no --oauth-tasks-namespace and no namespace of the manager's own: people's tasks live in --oauth-namespace, "+
				"where whoever may read workflowprocesses reads everyone's", "namespace", o.WithDefaults().Namespace)
		}
	}
	// The call policies the controllers compile, and the MCP server decides with.
	s.sandbarOpts.Policies = &policy.Store{}
	s.mcpOpts.Policies = s.sandbarOpts.Policies
	mgr, store, err := controllers.NewManager(ctx, restConfig, ctrl.Options{
		Metrics:                 controllers.MetricsServer(s.metricsAddr, s.metricsSecure, s.metricsCerts),
		HealthProbeBindAddress:  s.probeAddr,
		PprofBindAddress:        s.pprofAddr,
		LeaderElection:          s.leaderElect,
		LeaderElectionID:        "sandbar-manager.meta.sandbar.dev",
		LeaderElectionNamespace: s.leaderElectNS,
		LeaseDuration:           &s.lease.duration,
		RenewDeadline:           &s.lease.renewDeadline,
		RetryPeriod:             &s.lease.retryPeriod,
		// A replica that stops (a rolling restart) hands the lease over at once: the
		// next leader takes up reconciliation and tasks without waiting for it to
		// expire. run returns right after the manager stops, as this needs.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(splitList(s.keyNamespaces)...),
	}, s.sandbarOpts)
	if err != nil {
		log.Error(err, "creating the manager")
		return 1
	}
	if s.mcpOpts.Telemetry, err = startTelemetry(mgr, s.otlpEndpoint, s.auditLog, s.auditArgs); err != nil {
		log.Error(err, "setting up telemetry")
		return 1
	}
	server, err := mcpserver.New(s.mcpOpts, store, mcpserver.ClusterOf(mgr))
	if err != nil {
		log.Error(err, "setting up the MCP server")
		return 1
	}
	if err := mgr.Add(server); err != nil {
		log.Error(err, "adding the MCP server")
		return 1
	}
	if status := server.AuthorizationServerStatus(); status != nil {
		if err := mgr.Add(status); err != nil {
			log.Error(err, "adding the authorization server's status")
			return 1
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding the health check")
		return 1
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding the readiness check")
		return 1
	}
	apiServer, err := mcpserver.APIServerCheck(mgr.GetConfig())
	if err == nil {
		err = mgr.AddReadyzCheck("kube-apiserver", apiServer)
	}
	if err != nil {
		log.Error(err, "adding the API server readiness check")
		return 1
	}
	log.Info("starting the manager", "version", version)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "running the manager")
		return 1
	}
	return 0
}

// settings are the manager's flags, as bindFlags binds them.
type settings struct {
	metricsAddr   string
	metricsSecure bool
	metricsCerts  string
	probeAddr     string
	pprofAddr     string
	leaderElect   bool
	leaderElectNS string
	lease         leaseTimings
	origins       string
	tokenKeyFile  string
	mcpOpts       mcpserver.Options
	nameStyle     string
	qps           float64
	burst         int
	keyNamespaces string
	authServer    authServerFlags
	sandbarOpts   controllers.Options
	otlpEndpoint  string
	auditLog      string
	auditArgs     bool
	views         bool
	zap           zap.Options
}

// bindFlags binds every flag of the manager to a settings.
func bindFlags(fs *flag.FlagSet) *settings {
	s := &settings{mcpOpts: mcpserver.Options{Version: version}}
	fs.StringVar(&s.metricsAddr, "metrics-bind-address", ":8082", "Address of the metrics endpoint; \"0\" turns it off.")
	fs.BoolVar(&s.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to clients whose Kubernetes token may get /metrics (the ClusterRole sandbar-metrics-reader); false: plain HTTP to anyone, for local development only.")
	fs.StringVar(&s.metricsCerts, "metrics-cert-dir", "", "Directory holding tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate).")
	fs.StringVar(&s.probeAddr, "health-probe-bind-address", ":8081", "Address of the manager's /healthz and /readyz.")
	fs.StringVar(&s.pprofAddr, "pprof-bind-address", "0", "Address of Go's profiling endpoints (/debug/pprof/); \"0\" turns them off. They show the process's memory and stacks: bind them to loopback (127.0.0.1:6060) and reach them with kubectl port-forward.")
	fs.BoolVar(&s.leaderElect, "leader-elect", false, "Elect one leader among the replicas to run the reconcilers (every replica serves MCP).")
	fs.StringVar(&s.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader-election lease (default: the pod's namespace).")
	fs.DurationVar(&s.lease.duration, "leader-elect-lease-duration", 15*time.Second, "How long a lease its leader stopped renewing holds before another replica takes it: a leader that dies is replaced after about this long.")
	fs.DurationVar(&s.lease.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew its lease before it gives up leading (and exits, to be restarted); less than the lease duration.")
	fs.DurationVar(&s.lease.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often replicas try to take or renew the lease.")
	fs.StringVar(&s.mcpOpts.BindAddress, "mcp-bind-address", ":8080", "Address of the MCP server (/mcp, /healthz, /readyz).")
	fs.StringVar(&s.mcpOpts.ToolSurface, "tool-surface", mcpserver.SurfaceBoth, "Tools to serve: operational (verbs with the class as argument), per-class (one create tool per class) or both.")
	fs.BoolVar(&s.views, "mcp-views", true, "Serve MCP Apps views (extension io.modelcontextprotocol/ui): each class's form and table and the workflows' board, which clients that render MCP Apps show with the class and workflow tools; false: no tool names a view.")
	fs.StringVar(&s.nameStyle, "tool-name-style", string(mcpserver.StyleUnderscore), "Tool names: underscore (sandbar_entity_create; accepted by every client) or dotted (sandbar.entity.create).")
	fs.StringVar(&s.mcpOpts.ClientPrefix, "client-tool-prefix", mcpserver.DefaultClientPrefix, "What MCP clients put before a tool's name (Claude Code: mcp__<server>__); a per-class tool whose name with it exceeds 64 characters is not served, and its Class says so.")
	fs.IntVar(&s.mcpOpts.DefaultMaxTools, "default-max-tools", mcpserver.DefaultMaxTools, "Most tools an MCP ServiceAccount that declares no spec.clients is served before it gets the operational verbs instead of per-class tools (0: no limit; 40 is below what every known client takes).")
	fs.IntVar(&s.mcpOpts.MaxResultBytes, "max-result-bytes", mcpserver.DefaultResultBytes, "Longest text of one tool result; a longer one is cut, with a note and, for read-only tools, a token for the next part (0: no bound; the default, 64 KiB of JSON, is about 22,000 tokens, within Claude Code's 25,000).")
	fs.IntVar(&s.mcpOpts.MaxResultItems, "max-result-items", mcpserver.DefaultResultItems, "Most items in one page of a list (classes, properties, slots, workflows, processes); more are given with a continue token (0: no bound).")
	fs.StringVar(&s.origins, "mcp-allowed-origins", "", "Comma-separated browser origins allowed to call /mcp (as https://app.example.com); other cross-origin browser requests get 403.")
	fs.Float64Var(&s.mcpOpts.RateLimit, "mcp-rate-limit", 20, "Requests per second each ServiceAccount may make (0: unlimited).")
	fs.IntVar(&s.mcpOpts.RateBurst, "mcp-rate-burst", 60, "Requests a ServiceAccount may make in a burst.")
	fs.Int64Var(&s.mcpOpts.MaxRequestBytes, "mcp-max-request-bytes", 1<<20, "Largest request body accepted (413 beyond).")
	fs.DurationVar(&s.mcpOpts.SessionTimeout, "mcp-session-timeout", 30*time.Minute, "Close MCP sessions idle for this long.")
	fs.DurationVar(&s.mcpOpts.CallTimeout, "mcp-call-timeout", 10*time.Second, "Answer a tool call within this long: past it, or when the Kubernetes API server refuses, the answer says what happened and what to do next (tools that wait get their waiting time on top).")
	fs.DurationVar(&s.mcpOpts.ShutdownDelay, "mcp-shutdown-delay", 3*time.Second, "On SIGTERM, go on taking MCP requests this long with /readyz failing (so a load balancer moves away), then close the port and let requests in flight finish (up to 10 s).")
	fs.StringVar(&s.mcpOpts.PublicURL, "mcp-public-url", "", "Origin clients reach the MCP server at, as https://sandbar.example.com: the endpoints its server card (/mcp/server-card) and catalogs (/.well-known/ai-catalog.json, /.well-known/mcp/catalog.json) name. Empty: they are served only at a loopback address (make dev, a port-forward), naming it; never the Host a request sends.")
	fs.BoolVar(&s.mcpOpts.NoAuth, "mcp-insecure-no-auth", false, "Serve MCP without tokens, as an account of --mcp-no-auth-namespace allowed every tool; only with a loopback --mcp-bind-address (for tools that cannot send a token, such as the MCP conformance suite).")
	fs.StringVar(&s.mcpOpts.NoAuthNamespace, "mcp-no-auth-namespace", "default", "The namespace of the no-auth account.")
	fs.Float64Var(&s.qps, "kube-api-qps", 50, "Requests per second the manager may send to the API server (reconcilers and MCP together).")
	fs.IntVar(&s.burst, "kube-api-burst", 100, "Burst of requests the manager may send to the API server.")
	fs.StringVar(&s.sandbarOpts.DefaultServiceAccount, "default-service-account", "", "Kubernetes ServiceAccount, in an account's own namespace, that a ServiceAccount (meta.sandbar.dev) naming none in spec.serviceAccountName acts as. Empty: such accounts may not touch instances or processes.")
	fs.StringVar(&s.keyNamespaces, "api-key-namespaces", "", "Comma-separated namespaces whose Secrets may hold API key hashes (default: all); ServiceAccounts elsewhere cannot authenticate. Lets RBAC grant Secrets only there.")
	// Per-account limits, so that one account cannot fill etcd or the manager's memory.
	fs.IntVar(&s.mcpOpts.MaxProcessesPerAccount, "max-processes-per-account", 100, "WorkflowProcesses an MCP ServiceAccount may hold at once, running or finished; beyond it, starting one more is refused until some are deleted (0: no limit).")
	fs.Int64Var(&s.mcpOpts.MaxProcessBytesPerAccount, "max-process-bytes-per-account", 16<<20, "Bytes of inputs and results an MCP ServiceAccount's processes may hold together; a running built-in job counts as its largest result, 512 KiB, and a running export as the room the account had left when it started, up to --max-stored-result-bytes (0: no limit).")
	fs.Int64Var(&s.sandbarOpts.MaxStoredResultBytes, "max-stored-result-bytes", builtin.DefaultMaxStoredBytes, "Bytes (JSON, uncompressed) one export may store: its items are kept gzip-compressed in Secrets owned by its WorkflowProcess, not in its status; an export that would store more fails (0: no limit).")
	fs.DurationVar(&s.sandbarOpts.FinishedProcessTTL, "finished-process-ttl", 24*time.Hour, "Delete a finished WorkflowProcess this long after it ends, unless its spec.ttlSecondsAfterFinished says otherwise; MCP clients may ask for less, not more (0: keep them).")
	fs.IntVar(&s.mcpOpts.MaxFollowersPerAccount, "max-followers-per-account", 20, "Tasks an MCP ServiceAccount may follow at once (progress notifications, waits for a result); beyond it, calls answer at once and clients poll (0: no limit).")
	fs.IntVar(&s.mcpOpts.MaxFollowers, "max-followers", 2000, "Tasks all MCP clients together may follow at once (0: no limit).")
	fs.IntVar(&s.mcpOpts.MaxSessionsPerAccount, "max-sessions-per-account", 100, "MCP sessions (Streamable HTTP and legacy SSE) an MCP ServiceAccount, or one OAuth person, may hold open in one replica; past it an initialize gets 429 with Retry-After until one is closed or expires idle (0: no limit).")
	fs.IntVar(&s.mcpOpts.MaxSessions, "max-sessions", 5000, "MCP sessions one replica holds open in all (an idle one costs about 13.5 KiB); past it an initialize gets 429 with Retry-After (0: no limit).")
	fs.IntVar(&s.mcpOpts.MaxStreamsPerAccount, "max-streams-per-account", 20, "Long-lived MCP streams (a session's GET stream, a legacy SSE stream, a subscriptions/listen) an MCP ServiceAccount, or one OAuth person, may hold open in one replica; past it, opening one more gets 429 with Retry-After (0: no limit).")
	fs.IntVar(&s.mcpOpts.MaxStreams, "max-streams", 2000, "Long-lived MCP streams one replica holds open in all (one costs 40 to 70 KiB); past it, opening one more gets 429 with Retry-After (0: no limit).")
	bindOAuthFlags(fs, &s.mcpOpts.OAuth)
	bindAuthServerFlags(fs, &s.mcpOpts.AuthorizationServer, &s.authServer)
	fs.StringVar(&s.tokenKeyFile, "mcp-token-key-file", "", "File holding the key (at least 32 bytes) that seals the cursors and continue tokens the MCP server hands clients, so that a forged or foreign one is refused, and the processes it starts, so that only they are tasks; mount the same Secret on every replica so any replica opens another's. Empty: the key in the Secret sandbar-token-key of the manager's namespace, made by the first replica that finds none (outside a pod with no --leader-election-namespace: a key of the process's own, which it alone knows, until it restarts).")
	fs.StringVar(&s.otlpEndpoint, "otlp-endpoint", "", "Base URL of an OTLP/HTTP collector (as http://otel-collector:4318) that receives the MCP server's traces and metrics; empty: the standard OTEL_EXPORTER_OTLP_ENDPOINT if set, else none are exported.")
	fs.StringVar(&s.auditLog, "audit-log", "stdout", "Where audit events go, as JSON lines (one per call that changes something, one per refusal): stdout (the manager logs to stderr), stderr, a file path, or off.")
	fs.BoolVar(&s.auditArgs, "audit-include-arguments", false, "Put each audited tool call's arguments, redacted, in its audit event.")
	fs.StringVar(&s.mcpOpts.RequestLog, "mcp-request-log", "failures", "A line per MCP request in the manager's log (request id, account, method, tool, duration, outcome; never arguments or results): failures (errors and refusals at info, the rest at debug: --zap-log-level=debug shows them), all (every request at info) or off.")
	s.zap.BindFlags(fs)
	return s
}

// complete checks the flags and derives from them what the MCP server's options
// take from other flags; an error is a usage error.
func (s *settings) complete(log logr.Logger) error {
	s.mcpOpts.NoViews = !s.views
	if err := s.lease.validate(); err != nil {
		return err
	}
	s.mcpOpts.FinishedProcessTTL = s.sandbarOpts.FinishedProcessTTL
	s.mcpOpts.MaxStoredResultBytes = s.sandbarOpts.MaxStoredResultBytes
	s.mcpOpts.NameStyle = mcpserver.NameStyle(s.nameStyle)
	s.mcpOpts.AllowedOrigins = splitList(s.origins)
	if s.tokenKeyFile != "" {
		key, err := os.ReadFile(s.tokenKeyFile)
		if err != nil {
			return fmt.Errorf("--mcp-token-key-file: %w", err)
		}
		s.mcpOpts.TokenKey = bytes.TrimSpace(key)
		s.sandbarOpts.TokenKey = s.mcpOpts.TokenKey
	}
	if err := s.authServer.complete(&s.mcpOpts.AuthorizationServer); err != nil {
		return err
	}
	return s.mcpOpts.Validate()
}

// leaseTimings are the leader election's timings.
type leaseTimings struct{ duration, renewDeadline, retryPeriod time.Duration }

// validate refuses what the leader election would refuse only once the manager runs.
func (l leaseTimings) validate() error {
	switch {
	case l.retryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period must be positive, not %s", l.retryPeriod)
	case l.renewDeadline <= l.retryPeriod*6/5:
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be more than 1.2 times --leader-elect-retry-period (%s)", l.renewDeadline, l.retryPeriod)
	case l.duration <= l.renewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be more than --leader-elect-renew-deadline (%s)", l.duration, l.renewDeadline)
	}
	return nil
}

// splitList reads a comma-separated flag value.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// startTelemetry sets up the MCP server's traces, metrics and audit stream, and has
// the manager flush and close them when it stops.
func startTelemetry(mgr manager.Manager, endpoint, auditLog string, auditArgs bool) (*telemetry.Telemetry, error) {
	sink, err := telemetry.OpenSink(auditLog)
	if err != nil {
		return nil, err
	}
	cfg := telemetry.Config{OTLPEndpoint: endpoint, Version: version, AuditArguments: auditArgs}
	if sink != nil {
		cfg.Audit = sink
	}
	tel, err := telemetry.New(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return tel, mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := tel.Shutdown(flush)
		if sink != nil {
			err = errors.Join(err, sink.Close())
		}
		return err
	}))
}

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of the container's
// (its cgroup's) memory limit, so that the garbage collector works harder as the
// heap nears it instead of the kernel killing the manager: a burst of changes (a
// thousand Classes applied at once) leaves garbage the size of the catalog. A
// GOMEMLIMIT in the environment wins; AUTOMEMLIMIT sets another ratio, or "off".
// Without a limit (a process on a laptop) nothing changes.
func setMemoryLimit(log logr.Logger) {
	limit, err := memlimit.Set(memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case err != nil:
		log.V(1).Info("the Go memory limit is left as it was", "reason", err.Error())
	case limit > 0 && limit < math.MaxInt64:
		log.Info("Go memory limit", "bytes", limit)
	}
}
