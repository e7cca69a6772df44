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
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/authserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/card"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/edge"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sessions"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
	"github.com/sandbar-dev/sandbar/internal/policy"
)

// Tool surfaces.
const (
	SurfaceOperational = "operational"
	SurfacePerClass    = "per-class"
	SurfaceBoth        = "both"
)

// Client limits (see package tool): DefaultClientPrefix is Claude Code's for a server
// named "sandbar"; DefaultMaxTools is below what every known client takes (the
// strictest, Windsurf, takes 50).
const (
	DefaultClientPrefix = tool.DefaultClientPrefix
	DefaultMaxTools     = 40
	DefaultResultBytes  = tool.DefaultResultBytes
	DefaultResultItems  = tool.DefaultResultItems
)

// NameStyle spells tool names (see package tool).
type NameStyle = tool.NameStyle

// Name styles.
const (
	StyleUnderscore = tool.StyleUnderscore
	StyleDotted     = tool.StyleDotted
)

// Options configure the MCP server.
type Options struct {
	// BindAddress is where the HTTP server listens, as ":8080".
	BindAddress string
	// ToolSurface is operational, per-class or both.
	ToolSurface string
	// NameStyle spells tool names.
	NameStyle NameStyle
	// ClientPrefix is what clients put before a tool's name (Claude Code:
	// mcp__<server>__); a per-class tool whose name with it is longer than 64
	// characters is not served.
	ClientPrefix string
	// MaxResultBytes bounds the text of one tool result and MaxResultItems the items
	// of one page of a list (0: no bound); see tool.Bounds.
	MaxResultBytes int
	MaxResultItems int
	// DefaultMaxTools is the most tools an account that declares no clients (and no
	// spec.maxTools) is served with its per-class tools (0: no limit).
	DefaultMaxTools int
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to call the
	// endpoint; other cross-origin browser requests get 403.
	AllowedOrigins []string
	// RateLimit is each account's sustained requests per second (0: no limit) and
	// RateBurst the bucket's size.
	RateLimit float64
	RateBurst int
	// MaxRequestBytes limits a request body (0: the SDK's default).
	MaxRequestBytes int64
	// SessionTimeout closes sessions idle for this long.
	SessionTimeout time.Duration
	// CallTimeout bounds a tool call (0: tool.DefaultDeadline); a tool that waits
	// (for a task, for a Class to be served) gets its waiting time on top.
	CallTimeout time.Duration
	// ShutdownDelay is how long the server goes on taking requests once it is told
	// to stop, /readyz failing, before its port closes (a load balancer moves away
	// meanwhile); requests in flight then get up to 10 s to finish.
	ShutdownDelay time.Duration
	// AccountsCheckWait is the most /readyz waits, once the catalog's first build is
	// served, for the leader to check the accounts it has not checked yet (0: 30 s).
	AccountsCheckWait time.Duration
	// NoViews serves no MCP Apps views (package apps): no tool carries _meta.ui, no
	// ui:// resource is served, and the server declares no io.modelcontextprotocol/ui
	// extension.
	NoViews bool
	// Version is the build's version, shown in serverInfo.
	Version string
	// NoAuth serves every request as an account of NoAuthNamespace allowed every tool,
	// for clients that cannot send a token (the MCP conformance suite). It is refused
	// unless the server listens on loopback only.
	NoAuth          bool
	NoAuthNamespace string
	// Telemetry traces, measures and audits the requests (nil: none). Whoever makes
	// it shuts it down.
	Telemetry *telemetry.Telemetry
	// Policies are the call policies every tools/call passes (the store the
	// controllers' CallPolicy reconciler publishes into); nil: none.
	Policies *policy.Store
	// RequestLog is what the manager's log gets of MCP requests, a line each:
	// failures ("" too: errors and refusals at Info, the rest at V(1)), all (every
	// one at Info) or off.
	RequestLog string

	// What one account may make the server hold (0: no limit; the flags set them).
	// MaxProcessesPerAccount bounds the WorkflowProcesses an account holds, running
	// or finished; MaxProcessBytesPerAccount the bytes of their inputs and results.
	// FinishedProcessTTL is how long a finished process started through MCP is kept
	// (and the most a client may ask for). MaxFollowersPerAccount and MaxFollowers
	// bound the processes followed at once (progress notifications, waits for a
	// result), per account and in all. MaxStoredResultBytes is the manager's cap on
	// what one export may store (--max-stored-result-bytes, which the reconcilers
	// enforce): an export reserves no more of its account's bytes than that.
	MaxProcessesPerAccount    int
	MaxProcessBytesPerAccount int64
	FinishedProcessTTL        time.Duration
	MaxFollowersPerAccount    int
	MaxFollowers              int
	MaxStoredResultBytes      int64

	// What clients may hold open in this replica (0: no limit; the flags set them),
	// per account (an OAuth person counts on their own) and in all: sessions of the
	// session-based revisions and of legacy SSE, and streams (a session's GET stream,
	// a legacy SSE stream, the stateless revision's subscriptions/listen). Past one,
	// the request that would open one more gets 429 with Retry-After (see
	// sessions.Holds).
	MaxSessionsPerAccount int
	MaxSessions           int
	MaxStreamsPerAccount  int
	MaxStreams            int

	// PublicURL is the origin clients reach the server at (https://host[:port]), which
	// the server card and its catalogs name; empty: the loopback address a request
	// came in at (never its Host).
	PublicURL string

	// OAuth serves OAuth access tokens of a trusted issuer on a route of their own;
	// off without an issuer.
	OAuth oauth.Config
	// AuthorizationServer serves an OAuth authorization server for the OAuth route
	// (its Issuer, Resource, Scopes and Mapping come from OAuth); off unless Enabled.
	AuthorizationServer authserver.Config

	// TokenKey seals what the server hands clients to hand back (cursors, continue
	// tokens; see package seal): at least 32 bytes, the same on every replica, so
	// that any replica opens another's tokens. Empty: a key of the process's own,
	// whose tokens no other replica (nor this one once restarted) opens.
	TokenKey []byte

	// Verbs is the table of operational verbs (nil: verbs.Env.All, every one).
	Verbs func(*verbs.Env) []*tool.Def
}

// Holds are the limits of what clients may hold open.
func (o Options) Holds() sessions.HoldLimits {
	return sessions.HoldLimits{SessionsPerAccount: o.MaxSessionsPerAccount, Sessions: o.MaxSessions,
		StreamsPerAccount: o.MaxStreamsPerAccount, Streams: o.MaxStreams}
}

// accountsCheckWait is AccountsCheckWait, or its default.
func (o Options) accountsCheckWait() time.Duration {
	if o.AccountsCheckWait > 0 {
		return o.AccountsCheckWait
	}
	return 30 * time.Second
}

// callTimeout is CallTimeout, or tool.DefaultDeadline when it is 0.
func (o Options) callTimeout() time.Duration {
	if o.CallTimeout == 0 {
		return tool.DefaultDeadline
	}
	return o.CallTimeout
}

// Limits are the per-account limits of the options.
func (o Options) Limits() process.Limits {
	return process.Limits{Processes: o.MaxProcessesPerAccount, Bytes: o.MaxProcessBytesPerAccount,
		StoredResultBytes: o.MaxStoredResultBytes, FinishedTTL: o.FinishedProcessTTL,
		Followers: o.MaxFollowersPerAccount, AllFollowers: o.MaxFollowers}
}

// Validate checks the options, with messages that name the flag.
func (o Options) Validate() error {
	if n := len(o.TokenKey); n > 0 && n < seal.MinKeyBytes {
		return fmt.Errorf("--mcp-token-key-file holds %d bytes; the key needs at least %d", n, seal.MinKeyBytes)
	}
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
	if o.NoAuth && !edge.Loopback(o.BindAddress) {
		return fmt.Errorf("--mcp-insecure-no-auth needs --mcp-bind-address on loopback (127.0.0.1:PORT or [::1]:PORT), not %q", o.BindAddress)
	}
	if o.MaxRequestBytes < 0 {
		return fmt.Errorf("--mcp-max-request-bytes must be >= 0 (0: the default limit), not %d", o.MaxRequestBytes)
	}
	if o.RateLimit < 0 || (o.RateLimit > 0 && o.RateBurst < 1) {
		return errors.New("--mcp-rate-limit must be >= 0, and --mcp-rate-burst >= 1 with a limit")
	}
	if o.MaxResultBytes != 0 && o.MaxResultBytes < tool.MinResultBytes {
		return fmt.Errorf("--max-result-bytes must be 0 (no bound) or at least %d", tool.MinResultBytes)
	}
	if _, err := telemetry.NewRequestLog(o.RequestLog); err != nil {
		return err
	}
	if o.MaxResultItems < 0 {
		return errors.New("--max-result-items must be >= 0 (0: no bound)")
	}
	if o.CallTimeout < 0 || (o.CallTimeout > 0 && o.CallTimeout < time.Second) {
		return fmt.Errorf("--mcp-call-timeout must be at least 1s (0: %s), not %s", tool.DefaultDeadline, o.CallTimeout)
	}
	if o.ShutdownDelay < 0 {
		return fmt.Errorf("--mcp-shutdown-delay must be >= 0, not %s", o.ShutdownDelay)
	}
	if o.DefaultMaxTools < 0 {
		return errors.New("--default-max-tools must be >= 0 (0: no limit)")
	}
	if len(o.ClientPrefix) >= tool.MaxClientName {
		return fmt.Errorf("--client-tool-prefix must be shorter than %d characters", tool.MaxClientName)
	}
	if err := o.validateLimits(); err != nil {
		return err
	}
	if o.PublicURL != "" {
		if _, err := card.ParsePublicURL(o.PublicURL); err != nil {
			return fmt.Errorf("--mcp-public-url %w", err)
		}
	}
	if o.AuthorizationServer.Enabled && o.OAuth.IssuerURL != "" {
		return errors.New("--oauth-authorization-server and --oauth-issuer-url exclude each other: the authorization server is the issuer")
	}
	o = o.withAuthorizationServer()
	if o.NoAuth && o.OAuth.Enabled() {
		return errors.New("--mcp-insecure-no-auth and --oauth-issuer-url exclude each other")
	}
	if err := o.OAuth.Validate(); err != nil {
		return err
	}
	if o.AuthorizationServer.Enabled {
		return o.AuthorizationServer.Validate()
	}
	return nil
}

// withAuthorizationServer makes the authorization server, when it is enabled,
// the OAuth route's issuer: at /oauth2 on the route's origin, granting tokens
// for the route, mapping people as the route's flags say.
func (o Options) withAuthorizationServer() Options {
	as := &o.AuthorizationServer
	if !as.Enabled {
		return o
	}
	if u, err := url.Parse(o.OAuth.ResourceURL); err == nil && o.OAuth.ResourceURL != "" && as.Issuer == "" {
		as.Issuer = u.Scheme + "://" + u.Host + authserver.DefaultPath
	}
	as.Resource = o.OAuth.ResourceURL
	as.Mapping = o.OAuth.Mapping()
	if len(as.Scopes) == 0 {
		as.Scopes = o.OAuth.ScopesSupported
	}
	if len(as.Scopes) == 0 {
		as.Scopes = o.OAuth.Scopes
	}
	if len(as.Scopes) == 0 {
		as.Scopes = []string{authserver.DefaultScope}
	}
	o.OAuth.IssuerURL = as.Issuer
	o.OAuth.ScopesSupported = as.Scopes
	return o
}

const instructions = `Sandbar serves a metamodel of classes and their instances, which are stored as Kubernetes objects.
Start by discovering: sandbar_schema_classes lists the classes, sandbar_class_describe shows one class's slots (fields, types, which are required).
Then act: sandbar_entity_create creates an instance ({class, attributes}); sandbar_entity_find finds instances (filters, limit, continue);
sandbar_entity_update changes one (a merge patch); sandbar_entity_validate checks attributes without saving.
Each concrete class also has its own create tool whose arguments are the class's slots.
Long-running work (sandbar_validation_start, sandbar_project_export, sandbar_project_import, sandbar_workflow_start-process) runs as a task:
follow it with tasks/get, or with sandbar_tasks_get and sandbar_tasks_result if the client has no tasks support.
Failed calls say what to fix: missing slots by name, the expected type, the allowed values.`

func (o Options) validateLimits() error {
	switch {
	case o.MaxProcessesPerAccount < 0:
		return errors.New("--max-processes-per-account must be >= 0 (0: no limit)")
	case o.MaxProcessBytesPerAccount < 0 || (o.MaxProcessBytesPerAccount > 0 && o.MaxProcessBytesPerAccount < process.MinBytes):
		return fmt.Errorf("--max-process-bytes-per-account must be 0 (no limit) or at least %d (room for the largest result a built-in job keeps, and its input)", process.MinBytes)
	case o.FinishedProcessTTL < 0:
		return errors.New("--finished-process-ttl must be >= 0 (0: keep finished processes)")
	case o.MaxFollowersPerAccount < 0 || o.MaxFollowers < 0:
		return errors.New("--max-followers-per-account and --max-followers must be >= 0 (0: no limit)")
	case o.MaxSessionsPerAccount < 0 || o.MaxSessions < 0:
		return errors.New("--max-sessions-per-account and --max-sessions must be >= 0 (0: no limit)")
	case o.MaxStreamsPerAccount < 0 || o.MaxStreams < 0:
		return errors.New("--max-streams-per-account and --max-streams must be >= 0 (0: no limit)")
	}
	return nil
}
