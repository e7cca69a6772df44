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

package authserver

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// Config is the authorization server: where it is, what it grants tokens for,
// and the identity provider its people log in at.
type Config struct {
	// Enabled serves it; the OAuth route then takes its tokens.
	Enabled bool
	// Issuer is its public URL (as https://sandbar.example.com/oauth2); its path
	// is where it is served.
	Issuer string
	// Resource is the MCP server its tokens are for (the OAuth route's URL): the
	// audience of every token, and the only resource a client may ask for.
	Resource string
	// Scopes are the scopes a client may ask for; a request that names none gets them.
	Scopes []string
	// Upstream is the identity provider people log in at.
	Upstream Upstream
	// Mapping maps the upstream identity to a Kubernetes user and groups.
	Mapping oauth.Mapping
	// Namespace holds the signing keys, the state key and the grants, in Secrets
	// named KeysSecret, StateSecret and sandbar-grant-*.
	Namespace, KeysSecret, StateSecret string
	// Documents bounds the fetching of client ID metadata documents.
	Documents DocumentsConfig
	// Registration serves dynamic client registration (RFC 7591) for clients
	// without a metadata document: at most MaxClients, each kept ClientTTL once it
	// has completed a sign-in and PendingClientTTL until then.
	Registration     bool
	MaxClients       int
	ClientTTL        time.Duration
	PendingClientTTL time.Duration
	// AccessTokenTTL is how long an access token is valid (default 1 h).
	AccessTokenTTL time.Duration
	// TrustedIssuers are the identity providers whose ID-JAGs a client may exchange
	// for a token (Enterprise-Managed Authorization); none: the grant is not served.
	TrustedIssuers []TrustedIssuer
	// TrustedClients are client ids (metadata documents' URLs) whose own names the
	// consent page may lead with; others lead with what the server verified.
	TrustedClients []string
	// SessionTTL is how long a sign-in lasts when the upstream provider gave no
	// refresh token to ask it again with (default 24 h): the grant's refresh
	// tokens and access tokens end then, and the person signs in again, their
	// groups read anew. A grant the provider can be asked about lives as long as
	// the provider says.
	SessionTTL time.Duration
}

// Upstream is the OpenID provider the authorization server sends people to, as a
// confidential client an admin registered there once, with the callback
// Issuer + "/callback".
type Upstream struct {
	IssuerURL, ClientID, ClientSecret string
	// AuthorizationURL, TokenURL and UserinfoURL make it a provider of OAuth 2
	// only (GitHub): no discovery, no ID token; the person's claims are what its
	// userinfo endpoint answers to the access token. Without them it is an
	// OpenID provider found by IssuerURL's discovery.
	AuthorizationURL, TokenURL, UserinfoURL string
	// Scopes asked for (default: openid, email, profile).
	Scopes []string
	// HTTPClient talks to it (default: a client with a 10 s timeout).
	HTTPClient *http.Client
}

// Defaults of the authorization server.
const (
	DefaultPath           = "/oauth2"
	DefaultKeysSecret     = "sandbar-oauth-keys"
	DefaultStateSecret    = "sandbar-oauth-state"
	DefaultAccessTokenTTL = time.Hour
	DefaultSessionTTL     = 24 * time.Hour
	// requestTTL is how long a person has for the login and the consent.
	requestTTL    = 10 * time.Minute
	consentCookie = "sandbar_consent"
)

// DefaultScope is the scope clients get when they ask for none.
const DefaultScope = "mcp"

// Validate checks the configuration, with messages that name the flags.
func (c Config) Validate() error {
	iu, err := url.Parse(c.Issuer)
	if err != nil || iu.Host == "" || (iu.Scheme != "https" && !oauth.LoopbackURL(iu)) || iu.RawQuery != "" || iu.Fragment != "" {
		return fmt.Errorf("the authorization server's URL must be https, not %q", c.Issuer)
	}
	if c.Upstream.OAuth2Only() {
		for flag, v := range map[string]string{"--oauth-upstream-authorization-url": c.Upstream.AuthorizationURL,
			"--oauth-upstream-token-url": c.Upstream.TokenURL, "--oauth-upstream-userinfo-url": c.Upstream.UserinfoURL} {
			if u, err := url.Parse(v); err != nil || u.Host == "" || (u.Scheme != "https" && !oauth.LoopbackURL(u)) {
				return fmt.Errorf("%s must be an https URL of the provider people log in at, not %q (an OAuth 2 provider needs all three of the authorization, token and userinfo URLs)", flag, v)
			}
		}
	} else if u, err := url.Parse(c.Upstream.IssuerURL); err != nil || u.Host == "" || (u.Scheme != "https" && !oauth.LoopbackURL(u)) {
		return fmt.Errorf("--oauth-upstream-issuer-url must be the https URL of the identity provider people log in at, not %q", c.Upstream.IssuerURL)
	}
	if c.Upstream.ClientID == "" || c.Upstream.ClientSecret == "" {
		return errors.New("--oauth-upstream-client-id and the client secret (--oauth-upstream-client-secret-file) name the client registered at the identity provider; both are needed")
	}
	if c.Namespace == "" {
		return errors.New("the authorization server needs a namespace for its keys and grants (--oauth-authorization-server-namespace; in a pod, its own)")
	}
	return validTrusted(c)
}

// OAuth2Only is true of a provider of OAuth 2 only, with a userinfo endpoint.
func (u Upstream) OAuth2Only() bool { return u.UserinfoURL != "" }

// Name is how messages name the provider.
func (u Upstream) Name() string {
	if u.OAuth2Only() {
		return u.AuthorizationURL
	}
	return u.IssuerURL
}

// Server is the authorization server: zitadel/oidc's OpenID provider (its
// authorize, token, revocation and keys endpoints), with a storage of this
// package's parts, the login at the upstream provider and the consent page.
type Server struct {
	cfg      Config
	path     string
	docs     *ClientDocuments
	regs     *Registrations
	keys     *KeyStore
	grants   *Grants
	seal     *sealer
	cookies  *httphelper.CookieHandler
	provider *op.Provider
	// trusted are the issuers of ID-JAGs, by issuer URL.
	trusted map[string]*trusted
	handler http.Handler
	c       client.Client
	r       client.Reader

	mu       sync.Mutex
	upstream rp.RelyingParty
	lastTry  time.Time
	lastErr  error
}

// New makes the authorization server: it reads (or makes) the state key and the
// signing keys in the namespace, with c and r (r reads past any cache).
func New(ctx context.Context, cfg Config, c client.Client, r client.Reader) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	orDefault(&cfg.KeysSecret, DefaultKeysSecret)
	orDefault(&cfg.StateSecret, DefaultStateSecret)
	orDefault(&cfg.AccessTokenTTL, DefaultAccessTokenTTL)
	orDefault(&cfg.SessionTTL, DefaultSessionTTL)
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{DefaultScope}
	}
	if len(cfg.Upstream.Scopes) == 0 {
		cfg.Upstream.Scopes = []string{oidc.ScopeOpenID, oidc.ScopeEmail, oidc.ScopeProfile}
	}
	if cfg.Upstream.HTTPClient == nil {
		cfg.Upstream.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	iu, _ := url.Parse(cfg.Issuer)
	s := &Server{cfg: cfg, path: strings.TrimSuffix(iu.Path, "/"), c: c, r: r, trusted: newTrusted(cfg, cfg.Upstream.HTTPClient)}
	var err error
	if s.docs, err = NewClientDocuments(cfg.Documents); err != nil {
		return nil, err
	}
	key, err := StateKey(ctx, c, r, types.NamespacedName{Namespace: cfg.Namespace, Name: cfg.StateSecret})
	if err != nil {
		return nil, err
	}
	if s.seal, err = newSealer(derive(key, "seal")); err != nil {
		return nil, err
	}
	s.grants = NewGrants(c, r, cfg.Namespace, derive(key, "grant-token"))
	if cfg.Registration {
		s.regs = NewRegistrations(c, r, cfg.Namespace, cfg.MaxClients, cfg.ClientTTL, cfg.PendingClientTTL, derive(key, "client-id"))
	}
	s.grants.SessionTTL = cfg.SessionTTL
	s.keys = NewKeyStore(direct{Client: c, r: r}, types.NamespacedName{Namespace: cfg.Namespace, Name: cfg.KeysSecret}, DefaultRingTimes)
	if err := s.keys.Sync(ctx); err != nil {
		return nil, err
	}
	cookieOpts := []httphelper.CookieHandlerOpt{httphelper.WithPath(s.path + "/"), httphelper.WithSameSite(http.SameSiteLaxMode), httphelper.WithMaxAge(int(requestTTL.Seconds()))}
	if iu.Scheme == "http" {
		cookieOpts = append(cookieOpts, httphelper.WithUnsecure())
	}
	s.cookies = httphelper.NewCookieHandler(derive(key, "cookie-hash"), derive(key, "cookie-encrypt"), cookieOpts...)

	opConfig := &op.Config{CodeMethodS256: true, GrantTypeRefreshToken: true, SupportedScopes: append(slices.Clone(cfg.Scopes), oidc.ScopeOfflineAccess)}
	copy(opConfig.CryptoKey[:], derive(key, "codes"))
	// The provider logs to slog's default logger (the manager sets it to its own).
	opts := []op.Option{op.WithCustomEndpoints(op.NewEndpoint("authorize"), op.NewEndpoint("token"), op.NewEndpoint("userinfo"),
		op.NewEndpoint("revoke"), op.NewEndpoint("end_session"), op.NewEndpoint("keys"))}
	if iu.Scheme == "http" {
		opts = append(opts, op.WithAllowInsecure())
	}
	if s.provider, err = op.NewProvider(opConfig, &storage{s}, op.StaticIssuer(cfg.Issuer), opts...); err != nil {
		return nil, fmt.Errorf("the authorization server: %w", err)
	}
	s.handler = s.routes()
	return s, nil
}

// orDefault sets *v to d when it is zero or less (an empty string): what a
// configuration leaves unset, or sets to nothing sensible, gets the default.
func orDefault[T cmp.Ordered](v *T, d T) {
	var zero T
	if *v <= zero {
		*v = d
	}
}

// direct writes with the manager's client and reads with a reader past its
// cache: the cache holds no Secret of this package's (it holds API key Secrets
// only), and is not started when the server is made.
type direct struct {
	client.Client
	r client.Reader
}

func (d direct) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return d.r.Get(ctx, key, obj, opts...)
}

func (d direct) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return d.r.List(ctx, list, opts...)
}

// derive is a key of its own for each use of the state key.
func derive(key []byte, use string) []byte {
	return mac(key, "sandbar authorization server: "+use)
}

// mac is the HMAC-SHA256 of data under key.
func mac(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// Path is where the server is served (its issuer URL's path).
func (s *Server) Path() string { return s.path }

// KeyStore is its signing keys.
func (s *Server) KeyStore() *KeyStore { return s.keys }

// Handler serves the authorization server under its path.
func (s *Server) Handler() http.Handler { return s.handler }

// WellKnown are the paths its metadata is served at beside its own path: RFC
// 8414's and OIDC discovery's with the issuer's path inserted.
func (s *Server) WellKnown() []string {
	return []string{"/.well-known/oauth-authorization-server" + s.path, "/.well-known/openid-configuration" + s.path}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	interceptor := op.NewIssuerInterceptor(s.provider.IssuerFromRequest)
	opHandler := http.Handler(s.provider)
	for _, p := range []string{"/keys", "/revoke"} {
		mux.Handle(s.path+p, http.StripPrefix(s.path, opHandler))
	}
	mux.Handle(s.path+"/authorize", s.checkRequest(true, http.StripPrefix(s.path, opHandler)))
	mux.Handle(s.path+"/token", s.checkRequest(false, http.StripPrefix(s.path, opHandler)))
	mux.Handle(s.path+"/.well-known/openid-configuration", http.HandlerFunc(s.metadata))
	mux.Handle(s.path+"/.well-known/oauth-authorization-server", http.HandlerFunc(s.metadata))
	if s.regs != nil {
		mux.Handle("POST "+s.path+"/register", s.regs)
	}
	mux.Handle("GET "+s.path+"/login", interceptor.HandlerFunc(s.login))
	mux.Handle("GET "+s.path+"/callback", interceptor.HandlerFunc(s.callback))
	mux.Handle("POST "+s.path+"/consent", interceptor.HandlerFunc(s.consent))
	return mux
}

// MetadataHandler serves the authorization server metadata (RFC 8414).
func (s *Server) MetadataHandler() http.Handler { return http.HandlerFunc(s.metadata) }

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	at := func(p string) string { return s.cfg.Issuer + "/" + p }
	doc := map[string]any{
		"issuer":                                     s.cfg.Issuer,
		"authorization_endpoint":                     at("authorize"),
		"token_endpoint":                             at("token"),
		"revocation_endpoint":                        at("revoke"),
		"jwks_uri":                                   at("keys"),
		"scopes_supported":                           append(slices.Clone(s.cfg.Scopes), oidc.ScopeOfflineAccess),
		"response_types_supported":                   []string{"code"},
		"response_modes_supported":                   []string{"query"},
		"grant_types_supported":                      []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":           []string{"S256"},
		"token_endpoint_auth_methods_supported":      []string{"none"},
		"revocation_endpoint_auth_methods_supported": []string{"none"},
		"client_id_metadata_document_supported":      true,
		"subject_types_supported":                    []string{"public"},
		"id_token_signing_alg_values_supported":      []string{"ES256"},
		"resource_parameter_supported":               true,
	}
	if s.regs != nil {
		doc["registration_endpoint"] = at("register")
	}
	if len(s.trusted) > 0 {
		doc["grant_types_supported"] = []string{"authorization_code", "refresh_token", GrantTypeJWTBearer}
		doc["authorization_grant_profiles_supported"] = []string{GrantProfileIDJAG}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_ = json.NewEncoder(w).Encode(doc)
}

// checkRequest refuses a resource (RFC 8707) other than the MCP server and a
// client whose metadata is refused (with the reason), and gives an authorization
// request that names no scope the default scopes (the library refuses one without). A client that names none gets tokens for the MCP server
// all the same: it is the only resource there is.
func (s *Server) checkRequest(authorize bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", "the request does not parse as a form")
			return
		}
		for _, res := range r.Form["resource"] {
			if strings.TrimSuffix(res, "/") != strings.TrimSuffix(s.cfg.Resource, "/") {
				writeOAuthError(w, http.StatusBadRequest, "invalid_target", fmt.Sprintf("this server grants tokens for %s only, not for %q", s.cfg.Resource, res))
				return
			}
		}
		if !authorize && r.Method == http.MethodPost && r.PostForm.Get("grant_type") == GrantTypeJWTBearer && len(s.trusted) > 0 {
			s.assertionGrant(w, r)
			return
		}
		if authorize && strings.TrimSpace(r.Form.Get("scope")) == "" {
			r.Form.Set("scope", strings.Join(s.cfg.Scopes, " "))
		}
		// A client whose document is refused is told why (the library would say
		// only that it has no such client); nothing is redirected for it.
		if id := r.Form.Get("client_id"); authorize && id != "" {
			var refused *DocumentError
			if _, err := s.client(r.Context(), id); errors.As(err, &refused) {
				writeOAuthError(w, http.StatusBadRequest, "invalid_client", refused.Error())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// party is the client of the upstream provider, discovered at the first login
// (and tried again at most every 5 s while that fails), so the manager starts
// while the provider is down.
func (s *Server) party(ctx context.Context) (rp.RelyingParty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.upstream != nil {
		return s.upstream, nil
	}
	if time.Since(s.lastTry) < 5*time.Second {
		return nil, s.lastErr
	}
	s.lastTry = time.Now()
	u := s.cfg.Upstream
	opts := []rp.Option{rp.WithHTTPClient(u.HTTPClient), rp.WithCookieHandler(s.cookies), rp.WithPKCE(s.cookies),
		rp.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, errorType, description, _ string) {
			loginFailed(w, r, http.StatusBadGateway, "The identity provider refused the login: "+errorType+" "+description)
		}),
		rp.WithUnauthorizedHandler(func(w http.ResponseWriter, r *http.Request, description, _ string) {
			loginFailed(w, r, http.StatusUnauthorized, "The login could not be completed: "+description+". Start again from your MCP client.")
		})}
	var party rp.RelyingParty
	var err error
	if u.OAuth2Only() {
		party, err = rp.NewRelyingPartyOAuth(&oauth2.Config{ClientID: u.ClientID, ClientSecret: u.ClientSecret,
			Endpoint: oauth2.Endpoint{AuthURL: u.AuthorizationURL, TokenURL: u.TokenURL}, RedirectURL: s.cfg.Issuer + "/callback", Scopes: u.Scopes}, opts...)
	} else {
		party, err = rp.NewRelyingPartyOIDC(ctx, u.IssuerURL, u.ClientID, u.ClientSecret, s.cfg.Issuer+"/callback", u.Scopes, opts...)
	}
	if err != nil {
		s.lastErr = fmt.Errorf("the identity provider %s: %w", u.Name(), err)
		return nil, s.lastErr
	}
	s.upstream = party
	return party, nil
}

// loginFailed answers a browser whose login cannot go on, with the reason.
func loginFailed(w http.ResponseWriter, r *http.Request, status int, message string) {
	ctrl.LoggerFrom(r.Context()).WithName("oauth2").Info("login refused", "status", status, "reason", message)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	http.Error(w, message, status)
}

// login sends the person to the upstream provider; the request comes back as its state.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	var req authRequest
	if err := s.seal.open(purposeRequest, id, &req); err != nil {
		loginFailed(w, r, http.StatusBadRequest, "This login link is not valid or has expired. Start again from your MCP client.")
		return
	}
	party, err := s.party(r.Context())
	if err != nil {
		loginFailed(w, r, http.StatusServiceUnavailable, "The identity provider cannot be reached; try again in a moment.")
		return
	}
	rp.AuthURLHandler(func() string { return id }, party)(w, r)
}

// callback takes the person back from the upstream provider, maps their identity
// and asks their consent.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	party, err := s.party(r.Context())
	if err != nil {
		loginFailed(w, r, http.StatusServiceUnavailable, "The identity provider cannot be reached; try again in a moment.")
		return
	}
	rp.CodeExchangeHandler(func(w http.ResponseWriter, r *http.Request, tokens *oidc.Tokens[*oidc.IDTokenClaims], state string, _ rp.RelyingParty) {
		var req authRequest
		if err := s.seal.open(purposeRequest, state, &req); err != nil {
			loginFailed(w, r, http.StatusBadRequest, "This login has expired. Start again from your MCP client.")
			return
		}
		claims, err := s.identity(r.Context(), tokens)
		if err != nil {
			loginFailed(w, r, http.StatusBadGateway, "The identity provider did not say who you are: "+err.Error())
			return
		}
		user, groups, err := s.cfg.Mapping.Map(claims)
		if err != nil {
			loginFailed(w, r, http.StatusForbidden, "Your identity cannot use Sandbar: it "+err.Error()+".")
			return
		}
		doc, err := s.client(r.Context(), req.ClientID)
		if err != nil {
			loginFailed(w, r, http.StatusBadGateway, "The client's metadata document cannot be read now: "+err.Error())
			return
		}
		req.User, req.Groups, req.AuthTime = user, groups, time.Now().Truncate(time.Second)
		if tokens.Token != nil && tokens.RefreshToken != "" {
			if req.Upstream, err = s.seal.seal(purposeUpstream, tokens.RefreshToken, DefaultRefreshTTL); err != nil {
				loginFailed(w, r, http.StatusInternalServerError, "The login could not be kept.")
				return
			}
		}
		formToken := randomToken()
		sealedReq, err := s.seal.seal(purposeConsent, consentState{Request: req, Token: hashOf(formToken)}, requestTTL)
		if err != nil {
			loginFailed(w, r, http.StatusInternalServerError, "The consent could not be prepared.")
			return
		}
		http.SetCookie(w, s.cookie(formToken, int(requestTTL.Seconds())))
		ServeConsent(w, Consent{Who: WhoOf(doc.ClientID, req.RedirectURI), ClientName: doc.ClientName,
			Trusted: slices.Contains(s.cfg.TrustedClients, doc.ClientID), ClientID: doc.ClientID, RedirectURI: req.RedirectURI, Resource: req.Resource,
			User: user, Groups: groups, Action: s.path + "/consent", Request: sealedReq, Token: formToken})
	}, party)(w, r)
}

const (
	purposeRequest  = "authorization request"
	purposeConsent  = "consent"
	purposeDone     = "consented request"
	purposeUpstream = "upstream refresh token"
)

// consentState is what the consent form carries: the request with the person's
// identity, and a hash of the token that binds it to their browser's cookie.
type consentState struct {
	Request authRequest `json:"request"`
	Token   string      `json:"token"`
}

func (s *Server) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: consentCookie, Value: value, Path: s.path + "/", MaxAge: maxAge, HttpOnly: true,
		Secure: strings.HasPrefix(s.cfg.Issuer, "https:"), SameSite: http.SameSiteStrictMode}
}

// consent takes the person's answer: a code for the client, or access_denied.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 32<<10)
	if err := r.ParseForm(); err != nil {
		loginFailed(w, r, http.StatusBadRequest, "The answer does not parse.")
		return
	}
	var cs consentState
	cookie, err := r.Cookie(consentCookie)
	if err := s.seal.open(purposeConsent, r.PostForm.Get("request"), &cs); err != nil {
		loginFailed(w, r, http.StatusBadRequest, "This consent has expired. Start again from your MCP client.")
		return
	}
	token := r.PostForm.Get("token")
	if err != nil || !hmac.Equal([]byte(cookie.Value), []byte(token)) || !sameHash(cs.Token, hashOf(token)) {
		loginFailed(w, r, http.StatusForbidden, "This answer did not come from the page this browser was shown.")
		return
	}
	http.SetCookie(w, s.cookie("", -1))
	req := cs.Request
	if r.PostForm.Get("answer") != "allow" {
		op.AuthRequestError(w, r, &req, oidc.ErrAccessDenied().WithDescription("the person did not allow the client"), s.provider)
		return
	}
	req.Consented = true
	if req.id, err = s.seal.seal(purposeDone, req, requestTTL); err != nil {
		loginFailed(w, r, http.StatusInternalServerError, "The code could not be made.")
		return
	}
	op.AuthResponse(&req, s.provider, w, r)
}

// Run keeps the keys, the grants and the registered clients until ctx ends:
// every few minutes it syncs the key ring (which rotates it when a key is due)
// and deletes expired grants and clients.
func (s *Server) Run(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("oauth2")
	tick := time.NewTicker(5 * time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.keys.Sync(ctx); err != nil {
			log.Error(err, "syncing the signing keys")
		}
		if err := s.grants.Sweep(ctx); err != nil {
			log.Error(err, "deleting expired grants")
		}
		if s.regs != nil {
			_ = s.regs.makeRoom(ctx) // deletes the expired; a full server is for /register to say
		}
	}
}

// client is the metadata of a client: its document, or its registration.
func (s *Server) client(ctx context.Context, clientID string) (*ClientDocument, error) {
	if s.regs != nil && IsRegistered(clientID) {
		return s.regs.Get(ctx, clientID)
	}
	return s.docs.Get(ctx, clientID)
}

// followUpstream asks the upstream provider, with the refresh token it gave at
// the login, whether the person's session still holds before a grant is
// refreshed: a provider that refuses (the person signed out everywhere, an admin
// disabled them) revokes the grant, and the identity it vouches for now (their
// groups today) replaces the grant's. A provider that cannot be reached refuses
// this refresh only. A grant without an upstream token (the provider gave none:
// ask it for offline_access) ends with the session, SessionTTL after the sign-in.
func (s *Server) followUpstream(ctx context.Context, g *grant) (func(*grantData), error) {
	if g.Data.Upstream == "" {
		return nil, nil
	}
	var upstreamToken string
	if err := s.seal.open(purposeUpstream, g.Data.Upstream, &upstreamToken); err != nil {
		s.grants.delete(ctx, g.secret)
		return nil, oidc.ErrInvalidGrant().WithDescription("the person's login can no longer be checked; sign in again")
	}
	party, err := s.party(ctx)
	if err != nil {
		return nil, oidc.ErrServerError().WithDescription("the identity provider cannot be reached; try again")
	}
	tokens, err := rp.RefreshTokens[*oidc.IDTokenClaims](ctx, party, upstreamToken, "", "")
	if errors.Is(err, rp.ErrMissingIDToken) {
		err = nil // a refresh may come without an ID token; the identity is then as it was
	}
	var refused *oidc.Error
	if errors.As(err, &refused) && refused.ErrorType == oidc.InvalidGrant {
		s.grants.delete(ctx, g.secret)
		return nil, oidc.ErrInvalidGrant().WithDescription("the identity provider ended the person's session; sign in again")
	}
	if err != nil {
		return nil, oidc.ErrServerError().WithDescription("the identity provider cannot be reached; try again")
	}
	groups := g.Data.Groups
	if claims, err := s.identity(ctx, tokens); err == nil {
		user, now, err := s.cfg.Mapping.Map(claims)
		if err != nil || user != g.Data.User {
			s.grants.delete(ctx, g.secret)
			return nil, oidc.ErrInvalidGrant().WithDescription("the identity provider no longer vouches for the person as they signed in; sign in again")
		}
		groups = now
	}
	next := g.Data.Upstream
	if tokens.RefreshToken != "" && tokens.RefreshToken != upstreamToken {
		if next, err = s.seal.seal(purposeUpstream, tokens.RefreshToken, DefaultRefreshTTL); err != nil {
			return nil, err
		}
	}
	return func(d *grantData) { d.Groups, d.Upstream = groups, next }, nil
}

// identity is what the provider says of the person: its ID token's claims, or
// for a provider of OAuth 2 only what its userinfo endpoint answers to the access
// token (a JSON object of at most 1 MiB).
func (s *Server) identity(ctx context.Context, tokens *oidc.Tokens[*oidc.IDTokenClaims]) (map[string]any, error) {
	if !s.cfg.Upstream.OAuth2Only() {
		if tokens.IDTokenClaims == nil || tokens.IDTokenClaims.Claims == nil {
			return nil, errors.New("no ID token came")
		}
		return tokens.IDTokenClaims.Claims, nil
	}
	if tokens.Token == nil || tokens.AccessToken == "" {
		return nil, errors.New("no access token came")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.Upstream.UserinfoURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tokens.AccessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.Upstream.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("its userinfo endpoint cannot be reached: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("its userinfo endpoint answered %d", resp.StatusCode)
	}
	var claims map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&claims); err != nil {
		return nil, errors.New("its userinfo endpoint did not answer a JSON object")
	}
	return claims, nil
}
