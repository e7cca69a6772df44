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

// Package oauth authenticates the requests of the OAuth route: access tokens of a
// trusted issuer (OAuth 2.1 resource server), their configuration and Protected
// Resource Metadata (RFC 9728), and the account of the person a token names, which
// acts as their Kubernetes user and groups. It hands the account on as package caller
// says, and shares the per-account rate limit of package keys. It does not check API
// keys (package keys) or decide what the account may do (package authorize).
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/time/rate"
	ctrl "sigs.k8s.io/controller-runtime"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/keys"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// WellKnownResource is where Protected Resource Metadata (RFC 9728) is served: this
// prefix, then the resource's path.
const WellKnownResource = "/.well-known/oauth-protected-resource"

// Defaults of the OAuth configuration.
const (
	DefaultPath           = "/oauth/mcp"
	DefaultUsernameClaim  = "sub"
	DefaultUsernamePrefix = "oidc:"
	DefaultGroupsClaim    = "groups"
	DefaultGroupsPrefix   = "oidc:"
)

// NoPrefix as a username or groups prefix means none, as kube-apiserver's
// --oidc-username-prefix=- does.
const NoPrefix = "-"

// Config is the OAuth 2.1 resource server: which issuer's access tokens are
// accepted, for which resource, and how a token maps to a Kubernetes identity. It is
// off while IssuerURL is empty.
type Config struct {
	// IssuerURL is the authorization server; its discovery document names the JWKS
	// unless JWKSURL does.
	IssuerURL string
	JWKSURL   string
	// ResourceURL is the public URL of the OAuth route (as https://sandbar.example.com/oauth/mcp):
	// the resource of the metadata and, unless Audience says otherwise, the audience
	// a token must name.
	ResourceURL string
	Audience    string
	// Path is the OAuth route on every host; with Host set, requests to that host
	// get OAuth on /mcp too.
	Path string
	Host string
	// Scopes must all be granted by a token (scope or scp claim). ScopesSupported
	// are what the metadata tells clients to ask for (default: Scopes); they differ
	// where an issuer names a scope one way in requests and another in tokens
	// (Entra: api://<app>/mcp and mcp).
	Scopes, ScopesSupported []string
	// SigningAlgs are the accepted JWS algorithms (never none); empty: RS256 and ES256.
	SigningAlgs []string
	// The claims that hold the user name and the groups, and the prefixes they get.
	UsernameClaim, UsernamePrefix, GroupsClaim, GroupsPrefix string
	// Namespace is the namespace of an OAuth user's account: where tools that take
	// a namespace act by default, and where the person needs the verb own on
	// workflowprocesses to keep tasks.
	Namespace string
	// TasksNamespace is where the people's processes (their tasks) live, apart from
	// any namespace people work in, so that no grant of theirs reaches another
	// person's tasks; empty: Namespace.
	TasksNamespace string
	// Tools are the tools an OAuth user may see and call (globs, as a
	// ServiceAccount's permissions.tools); nil: every tool. RBAC decides the reach.
	Tools []string
	// Clients are the MCP clients OAuth users come with (tool.Clients), which bound
	// the tools they are served as a ServiceAccount's spec.clients do; nil:
	// claude-ai, the hosted connectors this route is for.
	Clients []string
	// HTTPClient fetches discovery and keys; nil: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Issued, when set, are the access tokens of the manager's own authorization
	// server (IssuerURL is its URL): their keys are read where it keeps them, the
	// token's sub and groups are the Kubernetes user and groups it mapped them to
	// at the login, and Issued checks what else makes one valid.
	Issued Issued
}

// Issued are the access tokens of an authorization server in the manager.
type Issued interface {
	// KeySet verifies their signatures.
	KeySet() oidc.KeySet
	// Check refuses a token whose signature verified but that is not valid: not an
	// access token, or its grant revoked. An error that Is ErrUnavailable says it
	// cannot tell now.
	Check(ctx context.Context, claims map[string]any) error
}

// ErrUnavailable is an Issued check that could not be made now.
var ErrUnavailable = errors.New("the authorization server's grants cannot be read now")

// Enabled is true when an issuer is configured.
func (c Config) Enabled() bool { return c.IssuerURL != "" }

// WithDefaults fills what is left empty.
func (c Config) WithDefaults() Config {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Path, DefaultPath)
	def(&c.Audience, c.ResourceURL)
	def(&c.UsernameClaim, DefaultUsernameClaim)
	def(&c.UsernamePrefix, DefaultUsernamePrefix)
	def(&c.GroupsClaim, DefaultGroupsClaim)
	def(&c.GroupsPrefix, DefaultGroupsPrefix)
	def(&c.Namespace, "default")
	if c.ScopesSupported == nil {
		c.ScopesSupported = c.Scopes
	}
	if len(c.SigningAlgs) == 0 {
		c.SigningAlgs = []string{oidc.RS256, oidc.ES256}
	}
	if len(c.Clients) == 0 {
		c.Clients = []string{DefaultClient}
	}
	return c
}

// DefaultClient is the client OAuth users are taken to come with.
const DefaultClient = "claude-ai"

// Validate checks the configuration (with its defaults), with messages that name the flags.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	c = c.WithDefaults()
	for _, name := range c.Clients {
		if _, ok := tool.Clients[name]; !ok {
			return fmt.Errorf("--oauth-clients: unknown client %q (known: %s)", name, strings.Join(tool.ClientNames(), ", "))
		}
	}
	if u, err := url.Parse(c.IssuerURL); err != nil || (u.Scheme != "https" && !LoopbackURL(u)) || u.Host == "" {
		return fmt.Errorf("--oauth-issuer-url must be an https URL, not %q", c.IssuerURL)
	}
	if c.JWKSURL != "" {
		if u, err := url.Parse(c.JWKSURL); err != nil || (u.Scheme != "https" && !LoopbackURL(u)) || u.Host == "" {
			return fmt.Errorf("--oauth-jwks-url must be an https URL, not %q", c.JWKSURL)
		}
	}
	if !strings.HasPrefix(c.Path, "/") || c.Path == "/mcp" || c.Path == "/mcp/sse" || strings.ContainsAny(c.Path, "{}? ") {
		return fmt.Errorf("--oauth-path must be a path of its own (not /mcp or /mcp/sse, which serve bearer tokens), as %s; not %q", DefaultPath, c.Path)
	}
	u, err := url.Parse(c.ResourceURL)
	if err != nil || c.ResourceURL == "" || (u.Scheme != "https" && !LoopbackURL(u)) || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--oauth-resource-url must be the public https URL of the OAuth route (as https://sandbar.example.com%s), not %q", c.Path, c.ResourceURL)
	}
	pathMode := u.Path == c.Path
	hostMode := c.Host != "" && strings.EqualFold(u.Hostname(), c.Host) && u.Path == "/mcp"
	if !pathMode && !hostMode {
		return fmt.Errorf("--oauth-resource-url %q must end in the OAuth route: --oauth-path (%s), or /mcp on --oauth-host (%q)", c.ResourceURL, c.Path, c.Host)
	}
	if c.Host != "" && (strings.ContainsAny(c.Host, "/:{} ") || strings.ToLower(c.Host) != c.Host) {
		return fmt.Errorf("--oauth-host must be a lower-case host name without port, not %q", c.Host)
	}
	for _, alg := range c.SigningAlgs {
		if !slices.Contains(supportedAlgs, alg) {
			return fmt.Errorf("--oauth-signing-algs: %q is not one of %s", alg, strings.Join(supportedAlgs, ", "))
		}
	}
	if c.UsernameClaim == "" || c.GroupsClaim == "" {
		return errors.New("--oauth-username-claim and --oauth-groups-claim must not be empty")
	}
	if c.UsernamePrefix != NoPrefix && strings.HasPrefix(c.UsernamePrefix, "system:") ||
		c.GroupsPrefix != NoPrefix && strings.HasPrefix(c.GroupsPrefix, "system:") {
		return errors.New("--oauth-username-prefix and --oauth-groups-prefix must not start with system:, which Kubernetes reserves")
	}
	return nil
}

// supportedAlgs are the asymmetric JWS algorithms; none and the HMAC ones (which
// would need a shared secret) are not among them.
var supportedAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// LoopbackURL is true of an http URL on a loopback host, which the https
// requirements of the OAuth configuration let through (tests, a local provider).
func LoopbackURL(u *url.URL) bool {
	if u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Authenticator checks access tokens of a trusted issuer (signature from its JWKS,
// which is fetched again when a token names a key it has not seen, issuer, audience,
// expiry, algorithm, scopes) and makes the account of the token's user: one per
// Kubernetes user, not stored anywhere, that acts as that user and its groups.
type Authenticator struct {
	cfg     Config
	mapping Mapping
	authn   *keys.Authenticator

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	// lastTry and lastErr space out discovery while the issuer cannot be reached.
	lastTry time.Time
	lastErr error
}

// NewAuthenticator checks tokens as cfg says; authn's per-account rate limit applies
// to their users too. Discovery waits for the first token (and is tried again at most
// every 5 s while it fails), so the manager starts while the issuer is down.
func NewAuthenticator(cfg Config, authn *keys.Authenticator) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	mapping := cfg.Mapping()
	if cfg.Issued != nil {
		// The login mapped the person already; the token holds the result.
		mapping = Mapping{UsernameClaim: "sub", UsernamePrefix: NoPrefix, GroupsClaim: "groups", GroupsPrefix: NoPrefix}
	}
	return &Authenticator{cfg: cfg, mapping: mapping, authn: authn}, nil
}

// Config is the configuration with its defaults.
func (o *Authenticator) Config() Config { return o.cfg }

// Metadata is the Protected Resource Metadata document (RFC 9728).
func (o *Authenticator) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               o.cfg.ResourceURL,
		AuthorizationServers:   []string{o.cfg.IssuerURL},
		ScopesSupported:        o.cfg.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Sandbar",
	}
}

// MetadataURL is the public URL of the metadata: the well-known prefix between the
// resource URL's host and its path.
func (o *Authenticator) MetadataURL() string {
	u, _ := url.Parse(o.cfg.ResourceURL)
	u.Path = WellKnownResource + strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String()
}

// verifierFor discovers the issuer's keys once.
func (o *Authenticator) verifierFor() (*oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.verifier != nil {
		return o.verifier, nil
	}
	if time.Since(o.lastTry) < 5*time.Second {
		return nil, o.lastErr
	}
	o.lastTry = time.Now()
	if o.cfg.Issued != nil {
		o.verifier = oidc.NewVerifier(o.cfg.IssuerURL, o.cfg.Issued.KeySet(), &oidc.Config{
			ClientID: o.cfg.Audience, SupportedSigningAlgs: []string{oidc.ES256}})
		return o.verifier, nil
	}
	v, err := NewVerifier(o.cfg.IssuerURL, o.cfg.JWKSURL, o.cfg.Audience, o.cfg.SigningAlgs, o.cfg.HTTPClient)
	if err != nil {
		o.lastErr = err
		return nil, err
	}
	o.verifier = v
	return v, nil
}

// NewVerifier verifies the JWTs an issuer signs for an audience: with the keys at
// jwksURL, or at the JWKS its discovery document names (asked now), fetched again
// at a bounded rate (below).
func NewVerifier(issuer, jwksURL, audience string, algs []string, hc *http.Client) (*oidc.IDTokenVerifier, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	if jwksURL == "" {
		var err error
		if jwksURL, err = DiscoverJWKS(context.Background(), issuer, hc); err != nil {
			return nil, err
		}
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	fetches := &http.Client{Timeout: hc.Timeout, Transport: limitedFetches{base: base, limiter: rate.NewLimiter(jwksFetchRate, jwksFetchBurst)}}
	keySet := oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), fetches), jwksURL)
	return oidc.NewVerifier(issuer, keySet, &oidc.Config{ClientID: audience, SupportedSigningAlgs: algs}), nil
}

// DiscoverJWKS is the JWKS URL an issuer's discovery document names.
func DiscoverJWKS(ctx context.Context, issuer string, hc *http.Client) (string, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), issuer)
	if err != nil {
		return "", fmt.Errorf("discovering the issuer %s: %w", issuer, err)
	}
	var doc struct {
		JWKSURL string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKSURL == "" {
		return "", fmt.Errorf("the discovery document of %s names no jwks_uri", issuer)
	}
	return doc.JWKSURL, nil
}

// The key set fetches the JWKS again whenever a signature does not verify with
// the keys it holds (the issuer may have rotated them). Those fetches are limited,
// whoever causes them: forged tokens do not make the server flood the issuer, and
// tokens signed by a key already held never wait for a fetch.
const (
	jwksFetchRate  = rate.Limit(1.0 / 10)
	jwksFetchBurst = 3
)

// limitedFetches refuses requests beyond its limiter without sending them.
type limitedFetches struct {
	base    http.RoundTripper
	limiter *rate.Limiter
}

func (l limitedFetches) RoundTrip(r *http.Request) (*http.Response, error) {
	if !l.limiter.Allow() {
		return nil, errors.New("the JWKS was fetched again recently; not fetching it for a token whose key is not held")
	}
	return l.base.RoundTrip(r)
}

// tokenFailure is why a token was refused: the reason goes to the log only.
type tokenFailure struct {
	reason string
	// status is 401 (invalid or missing token), 403 (scope) or 503 (issuer unreachable).
	status int
	// presented is true when a token came.
	presented bool
}

// verify checks a token and makes its account.
func (o *Authenticator) verify(ctx context.Context, raw string) (*catalog.Account, time.Time, *tokenFailure) {
	v, err := o.verifierFor()
	if err != nil {
		return nil, time.Time{}, &tokenFailure{reason: err.Error(), status: http.StatusServiceUnavailable, presented: true}
	}
	tok, err := v.Verify(ctx, raw)
	if err != nil {
		return nil, time.Time{}, &tokenFailure{reason: err.Error(), status: http.StatusUnauthorized, presented: true}
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, time.Time{}, &tokenFailure{reason: err.Error(), status: http.StatusUnauthorized, presented: true}
	}
	if o.cfg.Issued != nil {
		if err := o.cfg.Issued.Check(ctx, claims); err != nil {
			status := http.StatusUnauthorized
			if errors.Is(err, ErrUnavailable) {
				status = http.StatusServiceUnavailable
			}
			return nil, time.Time{}, &tokenFailure{reason: err.Error(), status: status, presented: true}
		}
	}
	granted := append(words(claims["scope"]), words(claims["scp"])...)
	for _, sc := range o.cfg.Scopes {
		if !slices.Contains(granted, sc) {
			return nil, time.Time{}, &tokenFailure{reason: "the token lacks the scope " + strconv.Quote(sc), status: http.StatusForbidden, presented: true}
		}
	}
	user, groups, err := o.mapping.Map(claims)
	if err != nil {
		return nil, time.Time{}, &tokenFailure{reason: "the token " + err.Error(), status: http.StatusUnauthorized, presented: true}
	}
	return o.account(user, groups), tok.Expiry, nil
}

// Mapping is how the claims of a person's identity become a Kubernetes user and
// groups: the claims that hold them and the prefixes put before them. The OAuth
// route maps the claims of an issuer's access tokens with it, and an
// authorization server the identities its upstream provider vouches for, so RBAC
// decides a person's reach the same way on both.
type Mapping struct {
	UsernameClaim, UsernamePrefix, GroupsClaim, GroupsPrefix string
}

// Mapping is the configuration's mapping (with its defaults).
func (c Config) Mapping() Mapping {
	c = c.WithDefaults()
	return Mapping{UsernameClaim: c.UsernameClaim, UsernamePrefix: c.UsernamePrefix, GroupsClaim: c.GroupsClaim, GroupsPrefix: c.GroupsPrefix}
}

// Map is the Kubernetes user and groups of an identity's claims. The error says
// what about the claims was refused, as the end of a sentence whose subject is
// where they came from ("the token has no string claim ...").
func (m Mapping) Map(claims map[string]any) (user string, groups []string, err error) {
	name, _ := claims[m.UsernameClaim].(string)
	if name == "" {
		return "", nil, errors.New("has no string claim " + strconv.Quote(m.UsernameClaim))
	}
	// An address is a user name only once the issuer has verified it: anyone may
	// put another person's address on an account at many issuers. kube-apiserver
	// refuses an email_verified that is not true; an identity without the claim
	// is refused here too, since nothing then says the address is its holder's.
	if m.UsernameClaim == "email" {
		if verified, _ := claims["email_verified"].(bool); !verified {
			return "", nil, errors.New("has an email that is not verified (email_verified is not true)")
		}
	}
	user = prefixed(m.UsernamePrefix, name)
	for _, g := range strings1(claims[m.GroupsClaim]) {
		if g != "" {
			groups = append(groups, prefixed(m.GroupsPrefix, g))
		}
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	// Kubernetes gives system: names to its own identities; none is taken from a person.
	if strings.HasPrefix(user, "system:") || slices.ContainsFunc(groups, func(g string) bool { return strings.HasPrefix(g, "system:") }) {
		return "", nil, errors.New("maps to a system: user or group")
	}
	if len(groups) > maxGroups {
		return "", nil, fmt.Errorf("has %d groups, more than %d", len(groups), maxGroups)
	}
	return user, groups, nil
}

// maxGroups bounds the groups of one token (each is sent with every request to the
// API server).
const maxGroups = 200

// account is the account of a Kubernetes user from a token: never stored, the
// same name for the same user every time.
func (o *Authenticator) account(user string, groups []string) *catalog.Account {
	tools := o.cfg.Tools
	if tools == nil {
		tools = []string{"*"}
	}
	return &catalog.Account{
		Namespace: o.cfg.Namespace, Name: AccountName(user), Active: true, Ready: true,
		// Every namespace: RBAC decides where the user reaches, as kubectl would.
		Permissions: metav1alpha1.Permissions{Tools: tools, Namespaces: []string{"*"}},
		User:        user, Groups: groups,
		Clients:        o.cfg.Clients,
		TasksNamespace: o.cfg.TasksNamespace,
	}
}

// AccountName is the account name of an OAuth user: "oauth_", a readable part
// of the user name, "_" and 64 bits of its SHA-256. It is a valid label value (63
// characters at most) and never the name of a ServiceAccount object (whose names
// have no "_"), so a user's processes are never another account's.
func AccountName(user string) string {
	sum := sha256.Sum256([]byte(user))
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(user) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "user"
	}
	return "oauth_" + slug + "_" + hex.EncodeToString(sum[:8])
}

func prefixed(prefix, s string) string {
	if prefix == NoPrefix {
		return s
	}
	return prefix + s
}

// words are the scopes of a claim: a space-separated string (scope, and Entra's
// scp) or a list of strings.
func words(v any) []string {
	if s, ok := v.(string); ok {
		return strings.Fields(s)
	}
	return strings1(v)
}

// strings1 is a claim as a list of strings: a list, or one string.
func strings1(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Middleware authenticates the requests of the OAuth route: a 401 that points to
// the metadata (with error="invalid_token" when a token came), a 403
// insufficient_scope, or the request with its user's account as token info. Each
// user's requests are limited by the per-account rate limit. A token costs a
// signature check (no bcrypt), and the JWKS is fetched again at most at the
// refetch limit, so failed tokens need no bucket per client address (behind an
// Ingress, one address would be everyone's).
func (o *Authenticator) Middleware(next http.Handler) http.Handler {
	sdk := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		acct := caller.FromContext(ctx)
		if acct == nil {
			return nil, auth.ErrInvalidToken
		}
		exp, _ := ctx.Value(expiryKey{}).(time.Time)
		// UserID binds a session to its user: another user's token cannot use it.
		info := caller.TokenInfo("oauth "+acct.User, acct, caller.Key{})
		info.Expiration = exp
		return info, nil
	}, nil)(next)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		acct, exp, failure := o.check(r)
		if failure != nil {
			o.refuse(w, r, failure)
			return
		}
		if ok, wait := o.authn.Allow(acct); !ok {
			keys.RateLimited(w, wait)
			return
		}
		ctx := context.WithValue(caller.WithAccount(r.Context(), acct), expiryKey{}, exp)
		sdk.ServeHTTP(w, r.WithContext(ctx))
	})
}

type expiryKey struct{}

// check reads and verifies the request's bearer token.
func (o *Authenticator) check(r *http.Request) (*catalog.Account, time.Time, *tokenFailure) {
	header := r.Header.Get("Authorization")
	scheme, raw, ok := strings.Cut(header, " ")
	if header == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(raw) == "" {
		return nil, time.Time{}, &tokenFailure{reason: "no bearer token", status: http.StatusUnauthorized, presented: header != ""}
	}
	return o.verify(r.Context(), strings.TrimSpace(raw))
}

// refuse answers a refused request with the challenge RFC 6750 and RFC 9728 ask for.
func (o *Authenticator) refuse(w http.ResponseWriter, r *http.Request, f *tokenFailure) {
	ctrl.LoggerFrom(r.Context()).WithName("mcp").Info("OAuth authentication failed", "reason", f.reason, "remote", r.RemoteAddr)
	params := []string{fmt.Sprintf("resource_metadata=%q", o.MetadataURL())}
	msg := "Bearer token required"
	label := "oauth_missing"
	switch {
	case f.status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "5")
		keys.WriteJSONError(w, f.status, "the OAuth issuer cannot be reached; try again")
		return
	case f.status == http.StatusForbidden:
		params = append([]string{`error="insufficient_scope"`, fmt.Sprintf("scope=%q", strings.Join(o.cfg.Scopes, " "))}, params...)
		msg, label = "insufficient scope", "oauth_scope"
	case f.presented:
		params = append([]string{`error="invalid_token"`}, params...)
		msg, label = "invalid token", "oauth_invalid"
	}
	keys.CountFailure(label)
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	keys.WriteJSONError(w, f.status, msg)
}
