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

// Package issuer is an OAuth 2.1 authorization server for tests, on loopback: OIDC
// discovery and RFC 8414 metadata, a JWKS whose signing key rotates, dynamic client
// registration, an authorization endpoint that approves at once (PKCE S256 checked)
// and a token endpoint that mints RS256 JWT access tokens for the requested
// resource, and an ID token when the scope has openid. It also serves
// confidential clients (AddClient), as an identity provider serves an
// authorization server that federates its logins to it, and a userinfo endpoint
// for the access tokens it gave, as an OAuth 2 provider's (GitHub's /user). Tests also mint tokens
// of any shape with Sign.
package issuer

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Issuer is a running authorization server.
type Issuer struct {
	srv *httptest.Server

	mu   sync.Mutex
	keys []*key // the newest signs; the JWKS serves all
	// Login are the claims of the user the authorization endpoint approves.
	login   map[string]any
	clients map[string][]string // client id -> redirect URIs
	secrets map[string]string   // client id -> secret, of confidential clients
	codes   map[string]grant
	// refreshes are the refresh tokens given (with offline_access) and not used yet.
	refreshes map[string]grant
	// issued are the access tokens the token endpoint gave (userinfo takes them).
	issued map[string]bool
	// jwksFetches counts the JWKS requests.
	jwksFetches int
}

type key struct {
	id   string
	priv *rsa.PrivateKey
}

type grant struct {
	client, redirect, challenge, resource, scope, nonce string
}

// Start starts an issuer on loopback; Close stops it.
func Start() (*Issuer, error) {
	is := &Issuer{clients: map[string][]string{}, secrets: map[string]string{}, codes: map[string]grant{}, refreshes: map[string]grant{}, issued: map[string]bool{}, login: map[string]any{"sub": "alice"}}
	if err := is.Rotate(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", is.metadata)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", is.metadata)
	mux.HandleFunc("GET /jwks", is.jwks)
	mux.HandleFunc("POST /register", is.register)
	mux.HandleFunc("GET /authorize", is.authorize)
	mux.HandleFunc("POST /token", is.token)
	mux.HandleFunc("GET /userinfo", is.userinfo)
	is.srv = httptest.NewServer(mux)
	return is, nil
}

// URL is the issuer identifier.
func (is *Issuer) URL() string { return is.srv.URL }

// AddClient registers a confidential client with its secret and redirect URIs.
func (is *Issuer) AddClient(id, secret string, redirectURIs ...string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.clients[id], is.secrets[id] = redirectURIs, secret
}

// Close stops the issuer.
func (is *Issuer) Close() { is.srv.Close() }

// Rotate makes a new signing key; the JWKS serves it beside the older ones.
func (is *Issuer) Rotate() error {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	is.mu.Lock()
	is.keys = append(is.keys, &key{id: fmt.Sprintf("%x", id), priv: priv})
	is.mu.Unlock()
	return nil
}

// JWKSFetches is how often the JWKS was fetched.
func (is *Issuer) JWKSFetches() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.jwksFetches
}

// LoginAs sets the claims of the user the authorization endpoint approves (sub,
// groups, ...); iss, aud, exp, iat and scope are added.
func (is *Issuer) LoginAs(claims map[string]any) {
	is.mu.Lock()
	is.login = claims
	is.mu.Unlock()
}

// Claims are the claims of a valid token for a user and an audience: iss, sub, aud,
// iat, and exp an hour ahead.
func (is *Issuer) Claims(sub, audience string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": is.URL(), "sub": sub, "aud": audience, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Sign signs claims with the newest key (RS256).
func (is *Issuer) Sign(claims map[string]any) string {
	is.mu.Lock()
	k := is.keys[len(is.keys)-1]
	is.mu.Unlock()
	return SignWith(k.priv, k.id, claims)
}

// SignTyped signs claims with the newest key (RS256), the header's typ typ (as
// oauth-id-jag+jwt, for an ID-JAG).
func (is *Issuer) SignTyped(typ string, claims map[string]any) string {
	is.mu.Lock()
	k := is.keys[len(is.keys)-1]
	is.mu.Unlock()
	return SignWithTyped(k.priv, k.id, typ, claims)
}

// SignWith signs claims with any RSA key (RS256) under a key id.
func SignWith(priv *rsa.PrivateKey, kid string, claims map[string]any) string {
	return SignWithTyped(priv, kid, "at+jwt", claims)
}

// SignWithTyped signs claims with any RSA key (RS256) under a key id, the header's typ typ.
func SignWithTyped(priv *rsa.PrivateKey, kid, typ string, claims map[string]any) string {
	input := segment(map[string]any{"alg": "RS256", "typ": typ, "kid": kid}) + "." + segment(claims)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Unsigned is a token with alg "none" and an empty signature.
func Unsigned(claims map[string]any) string {
	return segment(map[string]any{"alg": "none", "typ": "JWT"}) + "." + segment(claims) + "."
}

func segment(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (is *Issuer) metadata(w http.ResponseWriter, _ *http.Request) {
	u := is.URL()
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                u,
		"authorization_endpoint":                u + "/authorize",
		"token_endpoint":                        u + "/token",
		"registration_endpoint":                 u + "/register",
		"jwks_uri":                              u + "/jwks",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
		"scopes_supported":                      []string{"openid", "email", "profile", "offline_access", "mcp"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
	})
}

func (is *Issuer) jwks(w http.ResponseWriter, _ *http.Request) {
	is.mu.Lock()
	is.jwksFetches++
	var keys []map[string]any
	for _, k := range is.keys {
		keys = append(keys, map[string]any{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.id,
			"n": base64.RawURLEncoding.EncodeToString(k.priv.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.priv.E)).Bytes()),
		})
	}
	is.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

func (is *Issuer) register(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	var uris []string
	if list, ok := req["redirect_uris"].([]any); ok {
		for _, u := range list {
			if s, ok := u.(string); ok {
				uris = append(uris, s)
			}
		}
	}
	if len(uris) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri"})
		return
	}
	id := random()
	is.mu.Lock()
	is.clients[id] = uris
	is.mu.Unlock()
	req["client_id"] = id
	req["client_id_issued_at"] = time.Now().Unix()
	req["token_endpoint_auth_method"] = "none"
	writeJSON(w, http.StatusCreated, req)
}

// authorize approves at once: it redirects with a code bound to the client, the
// redirect URI, the PKCE challenge and the resource.
func (is *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	is.mu.Lock()
	uris := is.clients[q.Get("client_id")]
	is.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if !contains(uris, redirect) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "response_type=code and a PKCE S256 code_challenge are required", http.StatusBadRequest)
		return
	}
	code := random()
	is.mu.Lock()
	is.codes[code] = grant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"),
		resource: q.Get("resource"), scope: q.Get("scope"), nonce: q.Get("nonce")}
	is.mu.Unlock()
	to, err := url.Parse(redirect)
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := to.Query()
	v.Set("code", code)
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// token exchanges a code (once) for an access token whose audience is the resource
// the authorization asked for.
func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	grantType := r.PostFormValue("grant_type")
	if grantType != "authorization_code" && grantType != "refresh_token" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	clientID, secret, basic := r.BasicAuth()
	if !basic {
		clientID, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	} else if u, err := url.QueryUnescape(clientID); err == nil {
		clientID = u
		secret, _ = url.QueryUnescape(secret)
	}
	is.mu.Lock()
	var (
		g  grant
		ok bool
	)
	if grantType == "refresh_token" {
		g, ok = is.refreshes[r.PostForm.Get("refresh_token")]
		delete(is.refreshes, r.PostForm.Get("refresh_token"))
	} else {
		g, ok = is.codes[r.PostForm.Get("code")]
		delete(is.codes, r.PostForm.Get("code"))
	}
	login := is.login
	want, confidential := is.secrets[clientID]
	is.mu.Unlock()
	if confidential && secret != want {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case !ok, g.client != clientID:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	case grantType == "authorization_code" && g.redirect != r.PostForm.Get("redirect_uri"):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	case grantType == "authorization_code" && base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
		return
	}
	resource := g.resource
	if resource == "" {
		resource = r.PostForm.Get("resource")
	}
	claims := map[string]any{}
	for k, v := range login {
		claims[k] = v
	}
	now := time.Now()
	claims["iss"], claims["aud"], claims["iat"], claims["exp"] = is.URL(), resource, now.Unix(), now.Add(time.Hour).Unix()
	claims["client_id"] = g.client
	if g.scope != "" {
		claims["scope"] = g.scope
	}
	access := is.Sign(claims)
	is.mu.Lock()
	is.issued[access] = true
	is.mu.Unlock()
	answer := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": g.scope}
	scopes := strings.Fields(g.scope)
	if contains(scopes, "openid") {
		id := map[string]any{}
		for k, v := range login {
			id[k] = v
		}
		id["iss"], id["aud"], id["iat"], id["exp"] = is.URL(), g.client, now.Unix(), now.Add(time.Hour).Unix()
		if g.nonce != "" && grantType == "authorization_code" {
			id["nonce"] = g.nonce
		}
		answer["id_token"] = is.Sign(id)
	}
	if contains(scopes, "offline_access") {
		// A new refresh token each time; the one used is gone.
		refresh := random()
		is.mu.Lock()
		is.refreshes[refresh] = g
		is.mu.Unlock()
		answer["refresh_token"] = refresh
	}
	writeJSON(w, http.StatusOK, answer)
}

// userinfo answers the claims of the user logged in now to an access token it gave,
// as an OAuth 2 provider's user endpoint does (GitHub's /user).
func (is *Issuer) userinfo(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	is.mu.Lock()
	valid := ok && is.issued[token]
	login := is.login
	is.mu.Unlock()
	if !valid {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	writeJSON(w, http.StatusOK, login)
}

// EndSessions ends every session: the refresh tokens it gave are refused from now on.
func (is *Issuer) EndSessions() {
	is.mu.Lock()
	defer is.mu.Unlock()
	clear(is.refreshes)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return strings.TrimRight(base64.RawURLEncoding.EncodeToString(b), "=")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
