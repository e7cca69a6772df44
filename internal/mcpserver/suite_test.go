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

package mcpserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/policy"
	"github.com/sandbar-dev/sandbar/internal/testenv"
	"github.com/sandbar-dev/sandbar/internal/testenv/faults"
)

// The suite runs a control plane, the manager's reconcilers and the MCP server on a
// loopback port, applies the samples and issues a key for the sample account
// "claude". Tests talk to the server through real MCP clients.
var (
	k8s client.Client
	// kube reads the API server's own endpoints (/metrics).
	kube   kubernetes.Interface
	store  *catalog.Store
	mcpURL string
	// token is the bearer token of default/claude, which may do everything.
	token string
	// startServer starts one more MCP server on a catalog and returns its URL.
	startServer func(s *catalog.Store, opts mcpserver.Options) (string, error)
	// apiServer stands between the manager and the API server (see faults.Proxy);
	// mgrConfig is the manager's way there.
	apiServer *faults.Proxy
	mgrConfig *rest.Config
	// apiConfig is the tests' own way to the API server (straight, as an administrator).
	apiConfig *rest.Config
	// startServerIn is startServer serving until ctx ends, with ctx's logger.
	startServerIn func(ctx context.Context, s *catalog.Store, opts mcpserver.Options) (string, error)
	// startServerWith is startServerIn on another way to the cluster than the
	// manager's (managerCluster).
	startServerWith func(ctx context.Context, s *catalog.Store, opts mcpserver.Options, cluster mcpserver.Cluster) (string, error)
	managerCluster  mcpserver.Cluster
	// policies are the call policies the manager compiles, which every server the
	// suite starts decides with (unless a test gives it others).
	policies = &policy.Store{}
)

// sessionRevision is the newest session-based protocol revision.
const sessionRevision = "2025-11-25"

const (
	timeout = 20 * time.Second
	poll    = 50 * time.Millisecond
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Keys of the lowest bcrypt cost: the suite issues many (apikey.Cost).
	apikey.Cost = bcrypt.MinCost
	testenv.SetLogger()
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	// As in production (--kube-api-qps -1): no client-side rate limit. The manager
	// reaches the API server through a proxy that a test can hold or cut; the tests'
	// own client goes straight to it.
	apiURL, err := url.Parse(env.Config.Host)
	if err == nil {
		apiServer, err = faults.Start(apiURL.Host)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = apiServer.Close() }()
	apiConfig = env.Config
	mgrConfig = rest.CopyConfig(env.Config)
	mgrConfig.Host = "https://" + apiServer.Addr()
	mgrConfig.QPS = -1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The reconcilers measure tools as a server with the suite's default options serves them.
	check, err := mcpserver.NewClientCheck(mcpserver.Options{ToolSurface: mcpserver.SurfaceBoth,
		NameStyle: mcpserver.StyleUnderscore, ClientPrefix: mcpserver.DefaultClientPrefix})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, st, err := controllers.NewManager(ctx, mgrConfig, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}},
		controllers.Options{ClientLimits: check, MaxStoredResultBytes: storedResultCap, Policies: policies})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	store = st
	managerCluster = mcpserver.ClusterOf(mgr)
	startServerWith = func(ctx context.Context, st *catalog.Store, opts mcpserver.Options, cluster mcpserver.Cluster) (string, error) {
		if opts.ToolSurface == "" {
			opts.ToolSurface = mcpserver.SurfaceBoth
		}
		if opts.NameStyle == "" {
			opts.NameStyle = mcpserver.StyleUnderscore
		}
		if opts.ClientPrefix == "" {
			opts.ClientPrefix = mcpserver.DefaultClientPrefix
		}
		opts.Version = "test"
		opts.BindAddress = "127.0.0.1:0"
		if opts.Policies == nil {
			opts.Policies = policies
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		if (opts.OAuth.Enabled() || opts.AuthorizationServer.Enabled) && opts.OAuth.ResourceURL == "" {
			// The OAuth resource is the server's own loopback URL unless the test names one.
			opts.OAuth.ResourceURL = "http://" + ln.Addr().String() + opts.OAuth.WithDefaults().Path
		}
		srv, err := mcpserver.New(opts, st, cluster)
		if err != nil {
			_ = ln.Close()
			return "", err
		}
		go func() { _ = srv.Serve(ctx, ln) }()
		// On a built catalog, traffic only once /readyz says the server serves it, as a
		// load balancer sends it: before, it lists no tools. (A test of a catalog not
		// built yet asks itself.)
		base := "http://" + ln.Addr().String()
		if _, built := st.Built(); built {
			if err := waitFor(func() bool { return readyAt(base) }); err != nil {
				return "", fmt.Errorf("the MCP server at %s is not ready: %w", base, err)
			}
		}
		return base + "/mcp", nil
	}
	startServerIn = func(ctx context.Context, st *catalog.Store, opts mcpserver.Options) (string, error) {
		return startServerWith(ctx, st, opts, managerCluster)
	}
	startServer = func(st *catalog.Store, opts mcpserver.Options) (string, error) { return startServerIn(ctx, st, opts) }
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// Once the manager runs, which builds the catalog the server waits for.
	if mcpURL, err = startServer(store, mcpserver.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	k8s, err = client.New(env.Config, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if kube, err = kubernetes.NewForConfig(env.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := testenv.ApplySamples(ctx, k8s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The suite's sample account lists every verb (toolsets: all), as an admin's
	// would, so that its tests see every verb in tools/list. The account as
	// config/samples declares it (the core toolset) is TestToolLimitFollowsTheClientThatAsks's.
	every := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claude"}}
	if err := k8s.Patch(ctx, every, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"toolsets":["all"]}}`))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if token, err = apikey.Issue(ctx, k8s, "default", "claude"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := waitFor(func() bool {
		s := store.Load()
		c, a := s.Classes["zorp.spaceboot"], s.Accounts["claude"]
		return c != nil && c.Ready && c.InstanceAPI != nil && c.InstanceAPI.Established && a != nil && a.Ready &&
			slices.Equal(a.Toolsets, []string{"all"})
	}); err != nil {
		fmt.Fprintln(os.Stderr, "the samples did not become ready:", err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "the manager:", err)
	}
	return code
}

// serve starts one more MCP server with other options on the suite's catalog.
func serve(t testing.TB, opts mcpserver.Options) string { return serveStore(t, store, opts) }

// serveStore starts one more MCP server on another catalog.
func serveStore(t testing.TB, st *catalog.Store, opts mcpserver.Options) string {
	t.Helper()
	url, err := startServer(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// readyAt says whether the server at base answers /readyz with 200.
func readyAt(base string) bool {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func waitFor(cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		<-time.After(poll)
	}
	return nil
}

// connect opens an MCP session as the holder of a token, at revision 2025-11-25: the
// tests that use it assert what sessions do (streams, lock-outs, logging levels).
// connectAt speaks the stateless revision (stateless_test.go).
func connect(t *testing.T, url, tok string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: testenv.Bearer{Token: tok}},
		MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool and fails the test on a protocol error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "calling %s", name)
	return res
}

func text(res *mcp.CallToolResult) string {
	out := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out += t.Text
		}
	}
	return out
}

// unique is a name no other run of a test has used, so that the suites pass when
// run again against the same API server (go test -count=2).
func unique(name string) string { return name + "-" + rand.String(5) }
