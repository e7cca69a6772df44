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
	"context"
	"encoding/base64"
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

	"github.com/coreos/go-oidc/v3/oidc"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctrl "sigs.k8s.io/controller-runtime"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// Enterprise-Managed Authorization (the MCP extension
// io.modelcontextprotocol/enterprise-managed-authorization): a client signed in at
// its organisation's identity provider presents an Identity Assertion JWT
// Authorization Grant (ID-JAG) that provider issued for this server, with the
// jwt-bearer grant of RFC 7523, and gets the same token a person's sign-in gives,
// with no consent screen.
const (
	// GrantTypeJWTBearer is RFC 7523's grant type.
	GrantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// GrantProfileIDJAG names the ID-JAG profile in the metadata.
	GrantProfileIDJAG = "urn:ietf:params:oauth:grant-profile:id-jag"
	// idJAGType is the typ of an ID-JAG's header.
	idJAGType = "oauth-id-jag+jwt"
	// maxAssertionLife is the longest an ID-JAG may still be valid for when it is
	// presented: its grant, which refuses it a second time, is kept that long.
	maxAssertionLife = time.Hour
)

// TrustedIssuer is an identity provider whose ID-JAGs the server takes: its issuer
// URL, its JWKS (empty: the one its discovery document names), and the prefix of
// the user and group names it vouches for. The upstream provider's people map as at
// their sign-in, with its prefixes; another provider needs a prefix of its own, or
// its administrator could name anyone the upstream provider signs in.
type TrustedIssuer struct {
	Issuer  string
	JWKSURL string
	Prefix  string
}

// trusted is a trusted issuer and the verifier of its ID-JAGs, made on first use.
type trusted struct {
	cfg      TrustedIssuer
	audience string
	hc       *http.Client
	// mapping is the sign-in's, with the issuer's prefix for another issuer.
	mapping oauth.Mapping

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	lastTry  time.Time
	lastErr  error
}

// verifierFor discovers the issuer's keys once (again at most every 5 s while it
// fails).
// Requests that come while it is discovered are not queued behind it.
func (t *trusted) verifierFor() (*oidc.IDTokenVerifier, error) {
	if !t.mu.TryLock() {
		return nil, errors.New("the issuer's keys are being read")
	}
	defer t.mu.Unlock()
	if t.verifier != nil {
		return t.verifier, nil
	}
	if time.Since(t.lastTry) < 5*time.Second {
		return nil, t.lastErr
	}
	t.verifier, t.lastErr = oauth.NewVerifier(t.cfg.Issuer, t.cfg.JWKSURL, t.audience, []string{oidc.RS256, oidc.ES256, oidc.PS256}, t.hc)
	t.lastTry = time.Now()
	return t.verifier, t.lastErr
}

// probe reads the issuer's keys now, as the status reports them: how many there
// are, or why they are not read.
func (t *trusted) probe(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	jwks := t.cfg.JWKSURL
	if jwks == "" {
		var err error
		if jwks, err = oauth.DiscoverJWKS(ctx, t.cfg.Issuer, t.hc); err != nil {
			return 0, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwks, nil)
	if err != nil {
		return 0, err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s answered %d", jwks, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil || len(set.Keys) == 0 {
		return 0, fmt.Errorf("%s holds no keys", jwks)
	}
	return len(set.Keys), nil
}

// observeTrusted writes the trusted issuers' status and their condition (none:
// no condition).
func (s *Server) observeTrusted(ctx context.Context, st *metav1alpha1.AuthorizationServerStatus, generation int64) {
	st.TrustedIssuers = nil
	var down []string
	for _, t := range s.cfg.TrustedIssuers {
		out := metav1alpha1.TrustedIssuerStatus{Issuer: t.Issuer}
		if n, err := s.trusted[t.Issuer].probe(ctx); err != nil {
			out.Message = fmt.Sprintf("%.1000s", err.Error())
			down = append(down, t.Issuer)
		} else {
			out.Ready, out.Message = true, fmt.Sprintf("keys read (%d)", n)
		}
		st.TrustedIssuers = append(st.TrustedIssuers, out)
	}
	c := metav1.Condition{Type: metav1alpha1.ConditionTrustedIssuersReady, Status: metav1.ConditionTrue, Reason: "KeysRead",
		Message: fmt.Sprintf("the keys of %d identity providers are read: their ID-JAGs are taken", len(s.cfg.TrustedIssuers)), ObservedGeneration: generation}
	switch {
	case len(s.cfg.TrustedIssuers) == 0:
		meta.RemoveStatusCondition(&st.Conditions, metav1alpha1.ConditionTrustedIssuersReady)
		return
	case len(down) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, "KeysUnread"
		c.Message = "the keys of " + strings.Join(down, ", ") + " are not read now (see status.trustedIssuers): their ID-JAGs are refused while no key of theirs is held"
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// assertionGrant answers a token request of the jwt-bearer grant: the ID-JAG in
// assertion, from a trusted issuer, for this server and its MCP server, for the
// client that presents it, valid, and never presented before. The person it names
// is mapped as a sign-in is, and the token is a sign-in's, without a refresh token.
func (s *Server) assertionGrant(w http.ResponseWriter, r *http.Request) {
	log := ctrl.LoggerFrom(r.Context()).WithName("oauth2")
	refuse := func(format string, args ...any) {
		reason := fmt.Sprintf(format, args...)
		log.Info("ID-JAG refused", "reason", reason)
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "the assertion is refused: "+reason)
	}
	// What a token request says is in its body, never its URL (RFC 6749 §3.2).
	raw := r.PostForm.Get("assertion")
	header, payload, ok := jwtParts(raw)
	if !ok {
		refuse("it is not a JWT")
		return
	}
	if typ := strings.TrimPrefix(strings.ToLower(str(header["typ"])), "application/"); typ != idJAGType {
		refuse("its typ is %q, not %s (an ID-JAG)", str(header["typ"]), idJAGType)
		return
	}
	iss := str(payload["iss"])
	t := s.trusted[iss]
	if t == nil {
		refuse("its issuer %.200q is not one this server trusts", iss)
		return
	}
	v, err := t.verifierFor()
	if err != nil {
		writeOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the keys of "+iss+" could not be read; try again")
		return
	}
	tok, err := v.Verify(r.Context(), raw)
	if err != nil {
		// go-oidc's own words may carry what the issuer answered: the log has them.
		log.Info("ID-JAG refused", "issuer", iss, "reason", err.Error())
		var expired *oidc.TokenExpiredError
		switch {
		case errors.As(err, &expired):
			refuse("it expired at %s", expired.Expiry.UTC().Format(time.RFC3339))
		case strings.Contains(err.Error(), "audience"):
			refuse("its audience (aud) is not this server's issuer %s", s.cfg.Issuer)
		default:
			refuse("its signature does not verify with the keys of %s", iss)
		}
		return
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		refuse("its claims do not read")
		return
	}
	now := time.Now()
	client := r.PostForm.Get("client_id")
	jti := str(claims["jti"])
	scope, scoped := claims["scope"].(string)
	if client == "" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "client_id is missing: the client that presents the assertion names itself")
		return
	}
	// Without resource, an ID-JAG for this server is for its one resource.
	switch res, named := claims["resource"]; {
	case named && (str(res) == "" || strings.TrimSuffix(str(res), "/") != strings.TrimSuffix(s.cfg.Resource, "/")):
		refuse("it is for the resource %.200q, not %s", fmt.Sprint(res), s.cfg.Resource)
		return
	case claims["scope"] != nil && !scoped:
		refuse("its scope is not a string")
		return
	case str(claims["client_id"]) != client:
		refuse("it was issued to the client %.200q, not to %.200q, which presents it", str(claims["client_id"]), client)
		return
	case jti == "":
		refuse("it has no jti")
		return
	case tok.IssuedAt.IsZero() || tok.IssuedAt.After(now.Add(time.Minute)):
		refuse("it has no iat, or one ahead of this server's clock")
		return
	case tok.Expiry.After(now.Add(maxAssertionLife)):
		refuse("it is valid until %s, more than %s ahead", tok.Expiry.UTC().Format(time.RFC3339), maxAssertionLife)
		return
	}
	doc, err := s.client(r.Context(), client)
	if err != nil {
		msg := fmt.Sprintf("the client %.200q is not known", client)
		var refused *DocumentError
		if errors.As(err, &refused) {
			msg = refused.Error()
		}
		writeOAuthError(w, http.StatusBadRequest, "invalid_client", msg)
		return
	}
	scopes := s.cfg.Scopes
	if granted := strings.Fields(scope); len(granted) > 0 {
		scopes = slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return !slices.Contains(granted, sc) })
	}
	if asked := strings.Fields(r.PostForm.Get("scope")); len(asked) > 0 {
		scopes = slices.DeleteFunc(scopes, func(sc string) bool { return !slices.Contains(asked, sc) })
	}
	if len(scopes) == 0 {
		writeOAuthError(w, http.StatusBadRequest, "invalid_scope", "no scope this server grants is both asked for and in the assertion")
		return
	}
	user, groups, err := t.mapping.Map(claims)
	if err != nil {
		refuse("it %v", err)
		return
	}
	req := &authRequest{ClientID: client, Resource: s.cfg.Resource, Scopes: scopes, User: user, Groups: groups, AuthTime: now}
	if req.grant, err = s.grants.saveAssertion(r.Context(), iss, jti, req, tok.Expiry); err != nil {
		if errors.Is(err, errReplay) {
			refuse("it was presented before")
			return
		}
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "the grant could not be stored; try again")
		return
	}
	ctx := op.ContextWithIssuer(r.Context(), s.cfg.Issuer)
	access, _, validity, err := op.CreateAccessToken(ctx, req, op.AccessTokenTypeJWT, s.provider, &docClient{doc, s}, "")
	if err != nil {
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "the token could not be made; try again")
		return
	}
	log.Info("ID-JAG exchanged", "issuer", iss, "client", client, "user", user)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(zoidc.AccessTokenResponse{AccessToken: access, TokenType: zoidc.BearerToken,
		ExpiresIn: uint64(validity.Seconds()), Scope: scopes})
}

// jwtParts are a compact JWT's header and claims, unverified.
func jwtParts(raw string) (header, payload map[string]any, ok bool) {
	parts := strings.Split(raw, ".")
	if len(raw) > 16<<10 || len(parts) != 3 {
		return nil, nil, false
	}
	for i, into := range []*map[string]any{&header, &payload} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, into) != nil {
			return nil, nil, false
		}
	}
	return header, payload, true
}

func str(v any) string { s, _ := v.(string); return s }

// validTrusted checks the trusted issuers of a configuration: https URLs, each
// named once, and a prefix of its own for each but the upstream provider.
func validTrusted(c Config) error {
	issuers := c.TrustedIssuers
	https := func(v string) bool {
		u, err := url.Parse(v)
		return err == nil && u.Host != "" && (u.Scheme == "https" || oauth.LoopbackURL(u))
	}
	seen := map[string]bool{}
	for _, t := range issuers {
		if !https(t.Issuer) || (t.JWKSURL != "" && !https(t.JWKSURL)) {
			return fmt.Errorf("--oauth-trusted-issuers: %q (JWKS %q) is not an https URL", t.Issuer, t.JWKSURL)
		}
		if seen[t.Issuer] {
			return fmt.Errorf("--oauth-trusted-issuers: %q is named twice", t.Issuer)
		}
		upstream := strings.TrimSuffix(t.Issuer, "/") == strings.TrimSuffix(c.Upstream.IssuerURL, "/")
		if !upstream && (t.Prefix == "" || t.Prefix == "-" || t.Prefix == c.Mapping.UsernamePrefix || t.Prefix == c.Mapping.GroupsPrefix) {
			return fmt.Errorf("--oauth-trusted-issuers: %q is not the upstream provider, so it needs a prefix of its own for the names it vouches for (prefix=...), other than the sign-in's", t.Issuer)
		}
		seen[t.Issuer] = true
	}
	return nil
}

// newTrusted makes the trusted issuers of a configuration, by issuer URL.
func newTrusted(cfg Config, hc *http.Client) map[string]*trusted {
	out := map[string]*trusted{}
	for _, t := range cfg.TrustedIssuers {
		m := cfg.Mapping
		if t.Prefix != "" {
			m.UsernamePrefix, m.GroupsPrefix = t.Prefix, t.Prefix
		}
		out[t.Issuer] = &trusted{cfg: t, audience: cfg.Issuer, hc: hc, mapping: m}
	}
	return out
}
