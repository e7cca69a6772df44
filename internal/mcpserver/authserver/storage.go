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
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is what the OpenID provider keeps and looks up, made of this
// package's parts: requests sealed into their ids, clients from their metadata
// documents, grants in Secrets, keys from the key ring.
type storage struct{ s *Server }

var (
	_ op.Storage                        = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
)

// CreateAuthRequest begins a request the library has checked against its client
// (redirect URI, response type, scopes). PKCE is required, with S256: the library
// would take plain or none.
func (st *storage) CreateAuthRequest(ctx context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if r.CodeChallenge == "" || r.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required: send a code_challenge with code_challenge_method S256")
	}
	if r.ResponseMode != "" && r.ResponseMode != oidc.ResponseModeQuery {
		return nil, oidc.ErrInvalidRequest().WithDescription("only response_mode query is supported")
	}
	doc, err := st.s.client(ctx, r.ClientID)
	if err != nil {
		return nil, clientError(err)
	}
	req := &authRequest{ClientID: r.ClientID, RedirectURI: r.RedirectURI, State: r.State, Nonce: r.Nonce,
		Scopes:    slices.DeleteFunc(slices.Clone(r.Scopes), func(s string) bool { return s == oidc.ScopeOfflineAccess }),
		Challenge: r.CodeChallenge, Resource: st.s.cfg.Resource, Refreshable: slices.Contains(doc.GrantTypes, "refresh_token")}
	if req.id, err = st.s.seal.seal(purposeRequest, req, requestTTL); err != nil {
		return nil, err
	}
	return req, nil
}

func (st *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	var req authRequest
	if err := st.s.seal.open(purposeDone, id, &req); err != nil {
		return nil, oidc.ErrInvalidRequest().WithDescription("the authorization request expired")
	}
	req.id = id
	return &req, nil
}

// AuthRequestByCode is the request of a code that was issued and not redeemed:
// the code is the request, encrypted, and its grant says it was issued.
func (st *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	id, err := st.s.provider.Crypto().Decrypt(code)
	if err != nil {
		return nil, oidc.ErrInvalidGrant().WithDescription("the code is not valid")
	}
	a, err := st.AuthRequestByID(ctx, id)
	if err != nil {
		return nil, oidc.ErrInvalidGrant().WithDescription("the code expired")
	}
	req := a.(*authRequest)
	if req.grant, err = st.s.grants.byCode(ctx, code); err != nil {
		return nil, grantError(err)
	}
	return req, nil
}

func (st *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	var req authRequest
	if err := st.s.seal.open(purposeDone, id, &req); err != nil {
		return oidc.ErrInvalidRequest().WithDescription("the authorization request expired")
	}
	return st.s.grants.saveCode(ctx, code, &req)
}

func (st *storage) DeleteAuthRequest(context.Context, string) error { return nil }

// CreateAccessToken redeems a code of a client that takes no refresh token.
func (st *storage) CreateAccessToken(ctx context.Context, r op.TokenRequest) (string, time.Time, error) {
	id, _, exp, err := st.CreateAccessAndRefreshTokens(ctx, r, "")
	return id, exp, err
}

// CreateAccessAndRefreshTokens redeems a code or a refresh token: once, whichever
// replica is asked. The access token's id names its grant.
func (st *storage) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, _ string) (string, string, time.Time, error) {
	var (
		g           *grant
		refreshable bool
		change      func(*grantData)
		err         error
	)
	switch r := r.(type) {
	case *authRequest:
		g, refreshable = r.grant, r.Refreshable
		// A registered client that exchanged a code is a live one: kept its full time.
		if st.s.regs != nil && IsRegistered(r.ClientID) {
			if err := st.s.regs.Live(ctx, r.ClientID); err != nil {
				return "", "", time.Time{}, oidc.ErrServerError().WithDescription("the registered client could not be kept; try again").WithParent(err)
			}
		}
	case *refreshRequest:
		g, refreshable = r.g, true
		if change, err = st.s.followUpstream(ctx, g); err != nil {
			return "", "", time.Time{}, err
		}
	}
	if g == nil {
		return "", "", time.Time{}, oidc.ErrInvalidGrant()
	}
	refresh, err := st.s.grants.renew(ctx, g, refreshable, change)
	if err != nil {
		return "", "", time.Time{}, grantError(err)
	}
	return st.s.grants.tokenOf(g.secret.Name), refresh, g.Data.until(time.Now().Add(st.s.cfg.AccessTokenTTL)), nil
}

func (st *storage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	g, err := st.s.grants.byRefresh(ctx, token)
	if err != nil {
		return nil, grantError(err)
	}
	return &refreshRequest{g: g, scopes: g.Data.Scopes}, nil
}

func (st *storage) TerminateSession(context.Context, string, string) error { return nil }

// RevokeToken revokes the grant of a refresh token or of an access token's id,
// when the client asking is the grant's.
func (st *storage) RevokeToken(ctx context.Context, tokenOrID, _ string, clientID string) *oidc.Error {
	name, ok := st.s.grants.issued(tokenOrID)
	if !ok {
		return nil // RFC 7009: a token that is not valid is not an error.
	}
	g, err := st.s.grants.presented(ctx, name)
	if errors.Is(err, errBusy) {
		return oidc.ErrServerError().WithDescription("too many token requests at once; try again")
	}
	if err != nil {
		return nil // RFC 7009: a token that is not valid is not an error.
	}
	if g.Data.ClientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("the token is another client's")
	}
	st.s.grants.delete(ctx, g.secret)
	return nil
}

func (st *storage) GetRefreshTokenInfo(ctx context.Context, clientID, token string) (string, string, error) {
	g, err := st.s.grants.byRefresh(ctx, token)
	if err != nil {
		return "", "", op.ErrInvalidRefreshToken
	}
	if g.Data.ClientID != clientID {
		return "", "", oidc.ErrInvalidClient()
	}
	return g.Data.User, g.secret.Name, nil
}

func (st *storage) SigningKey(context.Context) (op.SigningKey, error) {
	k, ok := st.s.keys.Signer()
	if !ok {
		return nil, errors.New("no signing key is ready")
	}
	return signingKey{k.JWK}, nil
}

func (st *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.ES256}, nil
}

func (st *storage) KeySet(context.Context) ([]op.Key, error) {
	var keys []op.Key
	for _, k := range st.s.keys.Ring().Public().Keys {
		keys = append(keys, publicKey{k})
	}
	return keys, nil
}

// GetClientByClientID is the client of a client ID metadata document.
func (st *storage) GetClientByClientID(ctx context.Context, clientID string) (op.Client, error) {
	doc, err := st.s.client(ctx, clientID)
	if err != nil {
		return nil, clientError(err)
	}
	return &docClient{doc: doc, s: st.s}, nil
}

func (st *storage) AuthorizeClientIDSecret(context.Context, string, string) error {
	return oidc.ErrInvalidClient().WithDescription("clients here are public: they have no secret")
}

func (st *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (st *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return nil
}

func (st *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return nil
}

func (st *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetPrivateClaimsFromRequest are the access token's claims beyond the
// standard ones: the person's groups, the grant it belongs to, and its scopes.
func (st *storage) GetPrivateClaimsFromRequest(_ context.Context, r op.TokenRequest, scopes []string) (map[string]any, error) {
	var g *grant
	switch r := r.(type) {
	case *authRequest:
		g = r.grant
	case *refreshRequest:
		g = r.g
	}
	if g == nil {
		return nil, oidc.ErrInvalidGrant()
	}
	return map[string]any{ClaimGroups: g.Data.Groups, ClaimGrant: g.secret.Name,
		"scope": strings.Join(slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return s == oidc.ScopeOfflineAccess }), " ")}, nil
}

// The claims of an access token that name the person's groups and its grant.
const (
	ClaimGroups = "groups"
	ClaimGrant  = "grant"
)

func (st *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, oidc.ErrUnauthorizedClient()
}

func (st *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, oidc.ErrUnauthorizedClient()
}

func (st *storage) Health(context.Context) error { return nil }

func clientError(err error) error {
	var de *DocumentError
	if errors.As(err, &de) {
		return oidc.ErrInvalidClient().WithDescription("%s", de.Error())
	}
	return oidc.ErrServerError().WithDescription("the client's metadata document could not be read").WithParent(err)
}

func grantError(err error) error {
	switch {
	case errors.Is(err, errReplay):
		return oidc.ErrInvalidGrant().WithDescription("the code or refresh token was used before; every token of its grant is revoked")
	case errors.Is(err, errNoGrant):
		return oidc.ErrInvalidGrant().WithDescription("the code or refresh token is not valid: it expired, was revoked or was never issued")
	case errors.Is(err, errBusy):
		return oidc.ErrServerError().WithDescription("too many token requests at once; try again")
	}
	return err
}

type signingKey struct{ k jose.JSONWebKey }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k signingKey) Key() any                                    { return k.k.Key }
func (k signingKey) ID() string                                  { return k.k.KeyID }

type publicKey struct{ k jose.JSONWebKey }

func (k publicKey) ID() string                         { return k.k.KeyID }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return k.k.Key }

// docClient is a public client whose metadata document names its redirect URIs.
type docClient struct {
	doc *ClientDocument
	s   *Server
}

var _ op.Client = (*docClient)(nil)

func (c *docClient) GetID() string                    { return c.doc.ClientID }
func (c *docClient) RedirectURIs() []string           { return c.doc.RedirectURIs }
func (c *docClient) PostLogoutRedirectURIs() []string { return nil }

// ApplicationType is native when the document says so (the library then allows
// a loopback redirect URI on any port, RFC 8252 7.3); otherwise redirect URIs
// match exactly.
func (c *docClient) ApplicationType() op.ApplicationType {
	if c.doc.ApplicationType == "native" {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}
func (c *docClient) AuthMethod() oidc.AuthMethod { return oidc.AuthMethodNone }
func (c *docClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *docClient) GrantTypes() []oidc.GrantType {
	var out []oidc.GrantType
	for _, g := range c.doc.GrantTypes {
		out = append(out, oidc.GrantType(g))
	}
	return out
}
func (c *docClient) LoginURL(id string) string {
	return c.s.cfg.Issuer + "/login?id=" + url.QueryEscape(id)
}
func (c *docClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c *docClient) IDTokenLifetime() time.Duration      { return time.Hour }
func (c *docClient) DevMode() bool                       { return false }
func (c *docClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *docClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *docClient) IsScopeAllowed(scope string) bool     { return slices.Contains(c.s.cfg.Scopes, scope) }
func (c *docClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *docClient) ClockSkew() time.Duration             { return 0 }
