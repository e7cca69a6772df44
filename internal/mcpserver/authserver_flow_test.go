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

// The authorization server in the manager: a client that names itself by the URL
// of its metadata document, a person who logs in at the upstream identity
// provider (the test issuer) and allows the client on the consent page, and the
// tokens the client gets, used on the OAuth route. The browser is an HTTP
// client with a cookie jar here; typescript_oauth_test.go drives a real one.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
	"github.com/sandbar-dev/sandbar/internal/testenv/issuer"
)

// clientRedirect is where the client's browser is sent back with the code: a
// loopback address nothing listens on, as a native client's would be before it
// listens (the test reads the Location instead of following it).
const clientRedirect = "http://127.0.0.1:9/callback"

// asServer is an MCP server with the authorization server on, an upstream
// identity provider and a client's metadata document.
type asServer struct {
	is                 *issuer.Issuer
	base, oauth, asURL string
	// clientID is the URL of the client's metadata document.
	clientID string
}

// newASServer starts one; the client's document lists redirects (default: clientRedirect).
func newASServer(t *testing.T, configure func(*mcpserver.Options), redirects ...string) asServer {
	t.Helper()
	is, err := issuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	docs := httptest.NewTLSServer(nil)
	t.Cleanup(docs.Close)
	clientID := docs.URL + "/client.json"
	if len(redirects) == 0 {
		redirects = []string{clientRedirect}
	}
	docs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": clientID, "client_name": "Test Client",
			"redirect_uris": redirects, "grant_types": []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_method": "none"})
	})
	pool := docs.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	opts := mcpserver.Options{OAuth: oauth.Config{Scopes: []string{"mcp"}}, AuthorizationServer: authserver.Config{
		Enabled:   true,
		Upstream:  authserver.Upstream{IssuerURL: is.URL(), ClientID: "sandbar", ClientSecret: "upstream-secret"},
		Namespace: "default", KeysSecret: unique("oauth-keys"), StateSecret: unique("oauth-state"),
		Documents: authserver.DocumentsConfig{AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, RootCAs: pool},
	}}
	if configure != nil {
		configure(&opts)
	}
	t.Cleanup(func() {
		for _, name := range []string{opts.AuthorizationServer.KeysSecret, opts.AuthorizationServer.StateSecret} {
			_ = k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
		}
	})
	base := strings.TrimSuffix(serve(t, opts), "/mcp")
	is.AddClient("sandbar", "upstream-secret", base+"/oauth2/callback")
	return asServer{is: is, base: base, oauth: base + "/oauth/mcp", asURL: base + "/oauth2", clientID: clientID}
}

// browser follows redirects and keeps cookies, and stops at the client's redirect URI.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), clientRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// pkce is a code verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	verifier = unique("verifier-verifier-verifier-verifier-verifier")
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeURL is the authorization request a client makes, with changes.
func (s asServer) authorizeURL(challenge string, change func(url.Values)) string {
	q := url.Values{"response_type": {"code"}, "client_id": {s.clientID}, "redirect_uri": {clientRedirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"the-state"},
		"resource": {s.oauth}, "scope": {"mcp"}}
	if change != nil {
		change(q)
	}
	return s.asURL + "/authorize?" + q.Encode()
}

var formField = regexp.MustCompile(`name="(request|token)" value="([^"]*)"`)

// consentPage opens the authorization URL in the browser and answers the
// consent page's status, body and form fields.
func consentPage(t *testing.T, b *http.Client, authorize string) (int, string, url.Values) {
	t.Helper()
	resp, err := b.Get(authorize)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	form := url.Values{}
	for _, m := range formField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	return resp.StatusCode, string(body), form
}

// answer posts the person's answer and returns where the browser is sent.
func (s asServer) answer(t *testing.T, b *http.Client, form url.Values, answer string) *url.URL {
	t.Helper()
	form.Set("answer", answer)
	resp, err := b.PostForm(s.asURL+"/consent", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("the consent answered %d: %s", resp.StatusCode, body)
	}
	to, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// code runs the flow to the code, as the person allows it.
func (s asServer) code(t *testing.T, challenge string) string {
	t.Helper()
	b := browser(t)
	status, body, form := consentPage(t, b, s.authorizeURL(challenge, nil))
	if status != http.StatusOK || form.Get("request") == "" {
		t.Fatalf("no consent page (%d): %s", status, body)
	}
	to := s.answer(t, b, form, "allow")
	if to.Query().Get("state") != "the-state" || to.Query().Get("code") == "" {
		t.Fatalf("the redirect %s has no code or not the state", to)
	}
	return to.Query().Get("code")
}

// token posts to the token endpoint and answers the status and the JSON.
func (s asServer) token(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	form.Set("client_id", s.clientID)
	resp, err := http.PostForm(s.asURL+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

func (s asServer) exchange(t *testing.T, code, verifier string) (int, map[string]any) {
	return s.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {clientRedirect},
		"code_verifier": {verifier}, "resource": {s.oauth}})
}

// status is what the OAuth route answers an initialize with a token.
func (s asServer) status(t *testing.T, token string) int {
	t.Helper()
	code, _, _ := rawCall(t, s.oauth, map[string]string{"Authorization": "Bearer " + token},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	return code
}

// A client that names itself by its metadata document's URL gets, through the
// person's login at the identity provider and their consent, an access token
// for the MCP server that acts as the person's Kubernetes user and groups, and
// a refresh token that is replaced on every use.
func TestTheAuthorizationServerGrantsAClientOfAMetadataDocumentThePersonsReach(t *testing.T) {
	g := NewWithT(t)
	s := newASServer(t, nil)
	sub := unique("alice")
	s.is.LoginAs(map[string]any{"sub": sub, "groups": []string{"team-a"}})
	mine := namespaceFor(t, rbacv1.UserKind, "oidc:"+sub)

	// Discovery, as a client makes it from the route's 401.
	status, prm := getJSON(t, s.base+oauth.WellKnownResource+"/oauth/mcp")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(prm["authorization_servers"]).To(Equal([]any{s.asURL}))
	status, meta := getJSON(t, s.base+"/.well-known/oauth-authorization-server/oauth2")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(meta).To(HaveKeyWithValue("issuer", s.asURL))
	g.Expect(meta).To(HaveKeyWithValue("client_id_metadata_document_supported", true))
	g.Expect(meta).To(HaveKeyWithValue("token_endpoint_auth_methods_supported", []any{"none"}))
	g.Expect(meta).To(HaveKeyWithValue("code_challenge_methods_supported", []any{"S256"}))

	// The consent page names the client, the server and the person.
	verifier, challenge := pkce()
	b := browser(t)
	status, body, form := consentPage(t, b, s.authorizeURL(challenge, nil))
	g.Expect(status).To(Equal(http.StatusOK), body)
	for _, want := range []string{"Test Client", html.EscapeString(s.clientID), s.oauth, "oidc:" + sub, "oidc:team-a", clientRedirect} {
		g.Expect(body).To(ContainSubstring(want))
	}
	to := s.answer(t, b, form, "allow")
	g.Expect(to.Query().Get("state")).To(Equal("the-state"))
	code := to.Query().Get("code")
	g.Expect(code).NotTo(BeEmpty())

	status, tokens := s.exchange(t, code, verifier)
	g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
	g.Expect(tokens).To(HaveKeyWithValue("token_type", "Bearer"))
	g.Expect(tokens["expires_in"]).To(BeNumerically("~", 3600, 5))
	access, _ := tokens["access_token"].(string)
	refresh, _ := tokens["refresh_token"].(string)
	g.Expect(access).NotTo(BeEmpty())
	g.Expect(refresh).NotTo(BeEmpty())

	// The grant is a Secret that holds no token, only hashes.
	var grants corev1.SecretList
	g.Expect(k8s.List(context.Background(), &grants, client.InNamespace("default"), client.MatchingLabels{authserver.LabelComponent: authserver.GrantComponent})).To(Succeed())
	found := false
	for _, gr := range grants.Items {
		raw := string(gr.Data["grant.json"])
		g.Expect(raw).NotTo(ContainSubstring(code))
		g.Expect(raw).NotTo(ContainSubstring(strings.SplitN(refresh, ".", 2)[1]))
		found = found || strings.Contains(raw, `"oidc:`+sub+`"`)
	}
	g.Expect(found).To(BeTrue())

	// The token acts as the person: it creates where RBAC lets their user.
	cs := connect(t, s.oauth, access, nil)
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Mine", "metadata": map[string]any{"namespace": mine, "name": "mine"}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(boots(t, mine)).To(Equal([]string{"mine"}))
	res = callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": "default"})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`User "oidc:` + sub + `" cannot list resource "spaceboots"`))

	// A refresh gives new tokens; the old refresh token used again revokes the
	// grant: the new refresh token and the access tokens stop working.
	status, next := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	g.Expect(status).To(Equal(http.StatusOK), "%v", next)
	refresh2, _ := next["refresh_token"].(string)
	access2, _ := next["access_token"].(string)
	g.Expect(refresh2).NotTo(Equal(refresh))
	g.Expect(s.status(t, access2)).To(Equal(http.StatusOK))
	status, reuse := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	g.Expect(status).To(Equal(http.StatusBadRequest))
	g.Expect(reuse).To(HaveKeyWithValue("error", "invalid_grant"))
	status, _ = s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh2}})
	g.Expect(status).To(Equal(http.StatusBadRequest))
	g.Expect(s.status(t, access2)).To(Equal(http.StatusUnauthorized))
	g.Expect(s.status(t, access)).To(Equal(http.StatusUnauthorized))
}

// Each attack on the flow is refused, with an answer that says why.
func TestTheAuthorizationServerRefusesTheAttacksOnItsFlow(t *testing.T) {
	s := newASServer(t, nil)
	s.is.LoginAs(map[string]any{"sub": unique("mallory")})

	t.Run("a code used twice revokes what it gave", func(t *testing.T) {
		g := NewWithT(t)
		verifier, challenge := pkce()
		code := s.code(t, challenge)
		status, tokens := s.exchange(t, code, verifier)
		g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
		access := tokens["access_token"].(string)
		g.Expect(s.status(t, access)).To(Equal(http.StatusOK))
		status, again := s.exchange(t, code, verifier)
		g.Expect(status).To(Equal(http.StatusBadRequest))
		g.Expect(again).To(HaveKeyWithValue("error", "invalid_grant"))
		g.Expect(s.status(t, access)).To(Equal(http.StatusUnauthorized))
	})

	t.Run("forged refresh tokens cost nothing a real one needs", func(t *testing.T) {
		g := NewWithT(t)
		verifier, challenge := pkce()
		status, tokens := s.exchange(t, s.code(t, challenge), verifier)
		g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
		// Forged tokens, far more than the lookups' budget, all the while the real
		// client refreshes: with its client id and grant names of the right shape
		// (half the real grant's).
		real, _, _ := strings.Cut(tokens["refresh_token"].(string), ".")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					name := fmt.Sprintf("sandbar-grant-%016x%016x", i, n)
					if n%2 == 0 {
						name = real
					}
					status, answer := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {name + "." + unique("forged") + ".mac"}})
					if status != http.StatusBadRequest || answer["error"] != "invalid_grant" {
						t.Errorf("a forged refresh token: %d %v", status, answer)
						return
					}
				}
			})
		}
		defer wg.Wait()
		defer close(stop)
		for range 10 {
			status, next := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens["refresh_token"].(string)}})
			g.Expect(status).To(Equal(http.StatusOK), "a real refresh during the flood: %v", next)
			tokens = next
		}
		verifier, challenge = pkce()
		status, answer := s.exchange(t, s.code(t, challenge), verifier)
		g.Expect(status).To(Equal(http.StatusOK), "a real code exchange during the flood: %v", answer)
	})

	t.Run("a code with the wrong verifier gives nothing", func(t *testing.T) {
		g := NewWithT(t)
		_, challenge := pkce()
		code := s.code(t, challenge)
		other, _ := pkce()
		status, answer := s.exchange(t, code, other)
		g.Expect(status).To(Equal(http.StatusBadRequest))
		g.Expect(answer).To(HaveKeyWithValue("error", "invalid_grant"))
	})

	t.Run("no PKCE, or plain, is refused before the login", func(t *testing.T) {
		g := NewWithT(t)
		for _, change := range []func(url.Values){
			func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") },
			func(q url.Values) { q.Set("code_challenge_method", "plain") },
		} {
			b := browser(t)
			resp, err := b.Get(s.authorizeURL("abc", change))
			g.Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			to, _ := url.Parse(resp.Header.Get("Location"))
			g.Expect(resp.StatusCode).To(Equal(http.StatusFound))
			g.Expect(to.String()).To(HavePrefix(clientRedirect))
			g.Expect(to.Query().Get("error")).To(Equal("invalid_request"))
			g.Expect(to.Query().Get("code")).To(BeEmpty())
		}
	})

	t.Run("a redirect URI the document does not list is not redirected to", func(t *testing.T) {
		g := NewWithT(t)
		_, challenge := pkce()
		for _, redirect := range []string{"https://evil.example.com/cb", clientRedirect + "/more", "http://127.0.0.1:9/callback?x=1"} {
			b := browser(t)
			resp, err := b.Get(s.authorizeURL(challenge, func(q url.Values) { q.Set("redirect_uri", redirect) }))
			g.Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), redirect)
			g.Expect(resp.Header.Get("Location")).To(BeEmpty())
			g.Expect(string(body)).To(ContainSubstring("redirect_uri"))
		}
	})

	t.Run("a token for another resource is not issued", func(t *testing.T) {
		g := NewWithT(t)
		_, challenge := pkce()
		b := browser(t)
		resp, err := b.Get(s.authorizeURL(challenge, func(q url.Values) { q.Set("resource", "https://other.example.com/mcp") }))
		g.Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
		g.Expect(string(body)).To(ContainSubstring("invalid_target"))

		verifier, challenge := pkce()
		code := s.code(t, challenge)
		status, answer := s.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {clientRedirect},
			"code_verifier": {verifier}, "resource": {"https://other.example.com/mcp"}})
		g.Expect(status).To(Equal(http.StatusBadRequest))
		g.Expect(answer).To(HaveKeyWithValue("error", "invalid_target"))
	})

	t.Run("a client document at a private address is not fetched", func(t *testing.T) {
		g := NewWithT(t)
		_, challenge := pkce()
		b := browser(t)
		resp, err := b.Get(s.authorizeURL(challenge, func(q url.Values) { q.Set("client_id", "https://10.0.0.1/client.json") }))
		g.Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
		g.Expect(resp.Header.Get("Location")).To(BeEmpty())
		g.Expect(string(body)).To(ContainSubstring("invalid_client"))
		g.Expect(string(body)).To(ContainSubstring("private, loopback, link-local"))
	})

	t.Run("an ID token is not an access token", func(t *testing.T) {
		g := NewWithT(t)
		verifier, challenge := pkce()
		code := s.code(t, challenge)
		status, tokens := s.exchange(t, code, verifier)
		g.Expect(status).To(Equal(http.StatusOK))
		if id, ok := tokens["id_token"].(string); ok {
			g.Expect(s.status(t, id)).To(Equal(http.StatusUnauthorized))
		}
		g.Expect(s.status(t, tokens["access_token"].(string))).To(Equal(http.StatusOK))
	})

	t.Run("a denial sends access_denied", func(t *testing.T) {
		g := NewWithT(t)
		_, challenge := pkce()
		b := browser(t)
		_, _, form := consentPage(t, b, s.authorizeURL(challenge, nil))
		to := s.answer(t, b, form, "deny")
		g.Expect(to.Query().Get("error")).To(Equal("access_denied"))
		g.Expect(to.Query().Get("state")).To(Equal("the-state"))
		g.Expect(to.Query().Get("code")).To(BeEmpty())
	})

	t.Run("an answer from another browser is refused", func(t *testing.T) {
		g := NewWithT(t)
		_, challenge := pkce()
		_, _, form := consentPage(t, browser(t), s.authorizeURL(challenge, nil))
		form.Set("answer", "allow")
		resp, err := browser(t).PostForm(s.asURL+"/consent", form)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
	})
}

// A person whose upstream group would map to system:masters never gets a token:
// with a groups prefix the group is theirs (oidc:system:masters), without one
// the login is refused.
func TestTheAuthorizationServerNeverMapsAPersonToASystemGroup(t *testing.T) {
	g := NewWithT(t)
	s := newASServer(t, func(o *mcpserver.Options) { o.OAuth.GroupsPrefix = oauth.NoPrefix })
	s.is.LoginAs(map[string]any{"sub": unique("eve"), "groups": []string{"system:masters"}})
	_, challenge := pkce()
	status, body, form := consentPage(t, browser(t), s.authorizeURL(challenge, nil))
	g.Expect(status).To(Equal(http.StatusForbidden), body)
	g.Expect(body).To(ContainSubstring("system: user or group"))
	g.Expect(form.Get("request")).To(BeEmpty())
}

// register posts client metadata to the registration endpoint.
func (s asServer) register(t *testing.T, metadata map[string]any) (int, map[string]any) {
	return s.registerFrom(t, http.DefaultClient, metadata)
}

// registerFrom registers with a client of its own (from another source address).
func (s asServer) registerFrom(t *testing.T, c *http.Client, metadata map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(metadata)
	resp, err := c.Post(s.asURL+"/register", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

// Without a metadata document, a client registers itself when the admin lets
// clients register: a public client with checked redirect URIs, kept as a Secret,
// at most MaxClients of them. Otherwise there is no registration endpoint.
func TestTheAuthorizationServerRegistersClientsOnlyWhenAllowed(t *testing.T) {
	g := NewWithT(t)
	off := newASServer(t, nil)
	status, _ := off.register(t, map[string]any{"redirect_uris": []string{clientRedirect}})
	g.Expect(status).To(Equal(http.StatusNotFound))
	_, meta := getJSON(t, off.base+"/.well-known/oauth-authorization-server/oauth2")
	g.Expect(meta).NotTo(HaveKey("registration_endpoint"))

	const pending = 2 * time.Second
	s := newASServer(t, func(o *mcpserver.Options) {
		o.AuthorizationServer.Registration = true
		o.AuthorizationServer.MaxClients = 2
		o.AuthorizationServer.PendingClientTTL = pending
	})
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &corev1.Secret{}, client.InNamespace("default"),
			client.MatchingLabels{authserver.LabelComponent: authserver.ClientComponent})
	})
	_, meta = getJSON(t, s.base+"/.well-known/oauth-authorization-server/oauth2")
	g.Expect(meta).To(HaveKeyWithValue("registration_endpoint", s.asURL+"/register"))
	s.is.LoginAs(map[string]any{"sub": unique("rita")})

	for _, bad := range []struct {
		metadata map[string]any
		code     string
	}{
		{map[string]any{"redirect_uris": []string{"http://evil.example.com/cb"}}, "invalid_redirect_uri"},
		{map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
		{map[string]any{}, "invalid_redirect_uri"},
		{map[string]any{"redirect_uris": []string{clientRedirect}, "token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata"},
	} {
		status, answer := s.register(t, bad.metadata)
		g.Expect(status).To(Equal(http.StatusBadRequest), "%v", bad.metadata)
		g.Expect(answer).To(HaveKeyWithValue("error", bad.code), "%v", bad.metadata)
	}

	status, reg := s.register(t, map[string]any{"client_name": "Old Client", "redirect_uris": []string{clientRedirect}})
	g.Expect(status).To(Equal(http.StatusCreated), "%v", reg)
	g.Expect(reg).To(HaveKeyWithValue("token_endpoint_auth_method", "none"))
	g.Expect(reg).NotTo(HaveKey("client_secret"))
	registered := s
	registered.clientID = reg["client_id"].(string)
	verifier, challenge := pkce()
	status, tokens := registered.exchange(t, registered.code(t, challenge), verifier)
	g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
	g.Expect(registered.status(t, tokens["access_token"].(string))).To(Equal(http.StatusOK))

	// A client that never completes a sign-in holds its slot minutes, not the
	// registration's 30 days; one source registers three at once.
	status, never := s.register(t, map[string]any{"redirect_uris": []string{clientRedirect}})
	g.Expect(status).To(Equal(http.StatusCreated))
	status, full := s.register(t, map[string]any{"redirect_uris": []string{clientRedirect}})
	g.Expect(status).To(Equal(http.StatusServiceUnavailable))
	g.Expect(full["error_description"]).To(ContainSubstring("limit"))
	status, busy := s.register(t, map[string]any{"redirect_uris": []string{clientRedirect}})
	g.Expect(status).To(Equal(http.StatusTooManyRequests), "a fourth registration from one source: %v", busy)
	gone := s
	gone.clientID = never["client_id"].(string)
	g.Eventually(func() string {
		_, body, _ := consentPage(t, browser(t), gone.authorizeURL("x", nil))
		return body
	}, 5*pending, 200*time.Millisecond).Should(ContainSubstring("no such registered client"))
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	status, _ = s.registerFrom(t, other, map[string]any{"redirect_uris": []string{clientRedirect}})
	g.Expect(status).To(Equal(http.StatusCreated), "its slot is free again, for another source")
	// The client that signed in is kept.
	verifier, challenge = pkce()
	status, tokens = registered.exchange(t, registered.code(t, challenge), verifier)
	g.Expect(status).To(Equal(http.StatusOK), "a live registered client after the pending time: %v", tokens)

	// Made-up client ids of the registered kind are refused without a read.
	for _, id := range []string{"sandbar-client-0123456789abcdef0123456789abcdef", "sandbar-client-" + strings.Repeat("0", 32)} {
		madeUp := s
		madeUp.clientID = id
		_, body, _ := consentPage(t, browser(t), madeUp.authorizeURL("x", nil))
		g.Expect(body).To(ContainSubstring("no such registered client"))
	}
}

// claimsOf are the claims of a JWT, unverified.
func claimsOf(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// With a refresh token of the upstream provider (offline_access), every refresh
// asks it whether the person's session holds: their groups there today are in
// the new token, and once the provider ends the session the grant is revoked.
func TestTheAuthorizationServerFollowsThePersonsUpstreamSession(t *testing.T) {
	g := NewWithT(t)
	s := newASServer(t, func(o *mcpserver.Options) {
		o.AuthorizationServer.Upstream.Scopes = []string{"openid", "profile", "offline_access"}
	})
	sub := unique("uma")
	s.is.LoginAs(map[string]any{"sub": sub, "groups": []string{"team-a"}})
	verifier, challenge := pkce()
	status, tokens := s.exchange(t, s.code(t, challenge), verifier)
	g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
	g.Expect(claimsOf(t, tokens["access_token"].(string))).To(HaveKeyWithValue("groups", []any{"oidc:team-a"}))

	s.is.LoginAs(map[string]any{"sub": sub, "groups": []string{"team-b"}})
	status, next := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens["refresh_token"].(string)}})
	g.Expect(status).To(Equal(http.StatusOK), "%v", next)
	access := next["access_token"].(string)
	g.Expect(claimsOf(t, access)).To(HaveKeyWithValue("groups", []any{"oidc:team-b"}))
	g.Expect(s.status(t, access)).To(Equal(http.StatusOK))

	s.is.EndSessions()
	status, refused := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {next["refresh_token"].(string)}})
	g.Expect(status).To(Equal(http.StatusBadRequest))
	g.Expect(refused).To(HaveKeyWithValue("error", "invalid_grant"))
	g.Expect(s.status(t, access)).To(Equal(http.StatusUnauthorized))
}

// A provider that gives no refresh token (the default scopes) cannot be asked
// whether the person may still sign in: the sign-in then lasts the session length,
// and neither a refresh nor an access token of the grant outlives it, so a person
// disabled or moved out of a group upstream is out within that time.
func TestTheAuthorizationServerEndsASessionItCannotAskTheProviderAbout(t *testing.T) {
	g := NewWithT(t)
	const session = 3 * time.Second
	s := newASServer(t, func(o *mcpserver.Options) { o.AuthorizationServer.SessionTTL = session })
	sub := unique("ula")
	s.is.LoginAs(map[string]any{"sub": sub, "groups": []string{"admins"}})
	verifier, challenge := pkce()
	status, tokens := s.exchange(t, s.code(t, challenge), verifier)
	g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
	claims := claimsOf(t, tokens["access_token"].(string))
	g.Expect(claims["exp"]).To(BeNumerically("<=", claims["iat"].(float64)+session.Seconds()+1), "an access token outlives the session")

	// The person is removed from admins (and could as well be disabled): the
	// grant's refreshes go on with what the sign-in said, until the session ends.
	s.is.LoginAs(map[string]any{"sub": sub, "groups": []string{"guests"}})
	refresh, access := tokens["refresh_token"].(string), ""
	g.Eventually(func() map[string]any {
		status, next := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
		if status == http.StatusOK {
			refresh, access = next["refresh_token"].(string), next["access_token"].(string)
			g.Expect(claimsOf(t, access)).To(HaveKeyWithValue("groups", []any{"oidc:admins"}))
		}
		return next
	}, 4*session, 200*time.Millisecond).Should(HaveKeyWithValue("error", "invalid_grant"), "a refresh after the session's end")
	if access != "" {
		g.Eventually(func() int { return s.status(t, access) }, 2*session, 200*time.Millisecond).Should(Equal(http.StatusUnauthorized))
	}
}

// The AuthorizationServer object says what works, as `kubectl get oas` shows it:
// the identity provider's discovery, the last client document fetched, the
// signing keys, registration; and why it is not Ready when it is not.
func TestTheAuthorizationServerStatusSaysWhatWorks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	is, err := issuer.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer is.Close()
	ns := namespaceFor(t, "", "")
	// As the manager makes it: its client, whose cache holds no Secret of the
	// server's, and its reader past the cache.
	as, err := authserver.New(ctx, authserver.Config{
		Enabled: true, Issuer: "http://127.0.0.1:1/oauth2", Resource: "http://127.0.0.1:1/oauth/mcp", Mapping: oauth.Config{}.Mapping(),
		Upstream:  authserver.Upstream{IssuerURL: is.URL(), ClientID: "sandbar", ClientSecret: "upstream-secret"},
		Namespace: ns, Registration: true, MaxClients: 5,
		TrustedIssuers: []authserver.TrustedIssuer{{Issuer: is.URL()}, {Issuer: "http://127.0.0.1:1/idp", JWKSURL: "http://127.0.0.1:1/idp/jwks", Prefix: "lab:"}},
	}, managerCluster.Client, managerCluster.APIReader)
	g.Expect(err).NotTo(HaveOccurred())
	// The periodic sync reads the ring it made.
	g.Expect(as.KeyStore().Sync(ctx)).To(Succeed())
	status := func() metav1alpha1.AuthorizationServer {
		g.Expect(as.ReportStatus(ctx)).To(Succeed())
		var obj metav1alpha1.AuthorizationServer
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authserver.StatusName}, &obj)).To(Succeed())
		return obj
	}
	condition := func(obj metav1alpha1.AuthorizationServer, typ string) metav1.Condition {
		c := apimeta.FindStatusCondition(obj.Status.Conditions, typ)
		g.Expect(c).NotTo(BeNil(), typ)
		return *c
	}

	obj := status()
	g.Expect(obj.Status.Issuer).To(Equal("http://127.0.0.1:1/oauth2"))
	g.Expect(obj.Status.Registration).To(Equal("0/5"))
	g.Expect(condition(obj, metav1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(obj, metav1alpha1.ConditionUpstreamReady).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(obj, metav1alpha1.ConditionSigningKeysReady).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(obj, metav1alpha1.ConditionClientDocumentsReady).Status).To(Equal(metav1.ConditionUnknown))
	// The identity providers whose ID-JAGs it takes: one whose keys are read, one
	// that does not answer.
	g.Expect(obj.Status.TrustedIssuers).To(HaveLen(2))
	g.Expect(obj.Status.TrustedIssuers[0]).To(Equal(metav1alpha1.TrustedIssuerStatus{Issuer: is.URL(), Ready: true, Message: "keys read (1)"}))
	g.Expect(obj.Status.TrustedIssuers[1].Ready).To(BeFalse())
	trusted := condition(obj, metav1alpha1.ConditionTrustedIssuersReady)
	g.Expect(trusted.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(trusted.Message).To(And(ContainSubstring("http://127.0.0.1:1/idp"), Not(ContainSubstring(is.URL()))))

	// A client whose document is at a private address: the last fetch failed, and why.
	rec := httptest.NewRecorder()
	as.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/oauth2/authorize?"+url.Values{
		"client_id": {"https://10.0.0.1/client.json"}, "redirect_uri": {clientRedirect}, "response_type": {"code"},
		"code_challenge": {"abc"}, "code_challenge_method": {"S256"}}.Encode(), nil))
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	docs := condition(status(), metav1alpha1.ConditionClientDocumentsReady)
	g.Expect(docs.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(docs.Message).To(ContainSubstring("https://10.0.0.1/client.json"))
	g.Expect(docs.Message).To(ContainSubstring("private"))

	// The identity provider gone: not Ready, and the message names it.
	is.Close()
	obj = status()
	g.Expect(condition(obj, metav1alpha1.ConditionUpstreamReady).Status).To(Equal(metav1.ConditionFalse))
	ready := condition(obj, metav1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal("UpstreamUnreachable"))
	g.Expect(ready.Message).To(ContainSubstring(is.URL()))
}

// A provider of OAuth 2 only (GitHub): no discovery and no ID token; the person
// is who its userinfo endpoint says the access token belongs to.
func TestTheAuthorizationServerLogsInAtAnOAuth2Provider(t *testing.T) {
	g := NewWithT(t)
	s := newASServer(t, func(o *mcpserver.Options) {
		o.OAuth.UsernameClaim = "login"
		u := &o.AuthorizationServer.Upstream
		// The issuer's own endpoints, named one by one as for GitHub.
		base := u.IssuerURL
		u.IssuerURL, u.AuthorizationURL, u.TokenURL, u.UserinfoURL, u.Scopes = "", base+"/authorize", base+"/token", base+"/userinfo", []string{"read:user"}
	})
	login := unique("octocat")
	s.is.LoginAs(map[string]any{"login": login, "id": 583231, "sub": "ignored"})
	mine := namespaceFor(t, rbacv1.UserKind, "oidc:"+login)

	verifier, challenge := pkce()
	b := browser(t)
	status, body, form := consentPage(t, b, s.authorizeURL(challenge, nil))
	g.Expect(status).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring("oidc:" + login))
	to := s.answer(t, b, form, "allow")
	status, tokens := s.exchange(t, to.Query().Get("code"), verifier)
	g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
	cs := connect(t, s.oauth, tokens["access_token"].(string), nil)
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Octo", "metadata": map[string]any{"namespace": mine, "name": "octo"}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(boots(t, mine)).To(Equal([]string{"octo"}))
}
