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

// OAuth resource server mode: access tokens of an issuer the test runs, on the
// OAuth route only; the person behind a token reaches what RBAC grants their
// Kubernetes user and groups.

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
	"github.com/sandbar-dev/sandbar/internal/testenv/issuer"
)

// oauthServer is an MCP server that accepts the tokens of a test issuer on its
// OAuth route, besides bearer tokens on /mcp.
type oauthServer struct {
	is *issuer.Issuer
	// base is http://127.0.0.1:PORT; mcp and oauth its two routes.
	base, mcp, oauth string
	// resource is the audience tokens must name.
	resource string
}

func newOAuthServer(t *testing.T, cfg oauth.Config) oauthServer {
	t.Helper()
	return newOAuthServerWith(t, mcpserver.Options{OAuth: cfg})
}

// newOAuthServerWith is newOAuthServer with other server options (opts.OAuth is
// the OAuth configuration).
func newOAuthServerWith(t *testing.T, opts mcpserver.Options) oauthServer {
	t.Helper()
	is, err := issuer.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	opts.OAuth.IssuerURL = is.URL()
	cfg := opts.OAuth
	mcpURL := serve(t, opts)
	base := strings.TrimSuffix(mcpURL, "/mcp")
	// Tools are served once the server has synced the catalog: /readyz says so.
	if err := waitFor(func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		t.Fatalf("the server did not become ready: %v", err)
	}
	s := oauthServer{is: is, base: base, mcp: mcpURL, oauth: base + "/oauth/mcp", resource: cfg.ResourceURL}
	if s.resource == "" {
		s.resource = s.oauth
	}
	return s
}

// token is a valid token of the user sub with the given extra claims.
func (s oauthServer) token(sub string, extra map[string]any) string {
	c := s.is.Claims(sub, s.resource)
	c["scope"] = "openid mcp"
	for k, v := range extra {
		c[k] = v
	}
	return s.is.Sign(c)
}

// rawCall posts a JSON-RPC body with headers and answers the status, headers and body.
func rawCall(t *testing.T, url string, headers map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

// namespaceFor makes a namespace that a Kubernetes user or group may edit
// instances in (kind "User" or "Group"; no subject: nobody may).
func namespaceFor(t *testing.T, kind, subject string) string {
	t.Helper()
	g := NewWithT(t)
	ns := unique("oauth")
	g.Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	if subject != "" {
		g.Expect(k8s.Create(context.Background(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "editor"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-editor"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: kind, Name: subject}}})).To(Succeed())
	}
	return ns
}

// canI is `kubectl auth can-i create spaceboots -n ns --as=user --as-group=...`.
func canI(t *testing.T, ns, user string, groups ...string) bool {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: append(groups, "system:authenticated"),
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "zorp.sandbar.dev", Resource: "spaceboots"},
	}}
	NewWithT(t).Expect(k8s.Create(context.Background(), review)).To(Succeed())
	return review.Status.Allowed
}

// The person behind a token acts as their Kubernetes user and groups: a RoleBinding
// to the user, or to one of the groups, lets them create in that namespace; in
// another the same call is Forbidden, in the API server's words, and creates
// nothing. They reach exactly what `kubectl auth can-i --as` says.
func TestOAuthUserReachesWhatRBACGrantsTheirUserAndGroups(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{Scopes: []string{"mcp"}})
	sub := unique("alice")
	user := "oidc:" + sub
	mine := namespaceFor(t, rbacv1.UserKind, user)
	teams := namespaceFor(t, rbacv1.GroupKind, "oidc:team-a")
	theirs := namespaceFor(t, "", "")
	// (The API server's RBAC authorizer sees a new RoleBinding through its own watch,
	// a moment after the create returns.)
	g.Eventually(func() []bool {
		return []bool{canI(t, mine, user, "oidc:team-a"), canI(t, teams, user, "oidc:team-a"), canI(t, theirs, user, "oidc:team-a")}
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal([]bool{true, true, false}))

	cs := connect(t, s.oauth, s.token(sub, map[string]any{"groups": []string{"team-a"}}), nil)
	tools, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tools.Tools).NotTo(BeEmpty())

	for _, ns := range []string{mine, teams} {
		res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Mine", "metadata": map[string]any{"namespace": ns, "name": "mine"}})
		g.Expect(res.IsError).To(BeFalse(), text(res))
		g.Expect(boots(t, ns)).To(Equal([]string{"mine"}))
		var u unstructured.Unstructured
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("SpaceBoot")
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mine"}, &u)).To(Succeed())
		g.Expect(u.GetAnnotations()[metav1alpha1.AnnotationCreatedBy]).To(Equal("default/" + oauth.AccountName(user)))
	}

	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Planted", "metadata": map[string]any{"namespace": theirs, "name": "planted"}})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`User "` + user + `" cannot create resource "spaceboots" in API group "zorp.sandbar.dev" in the namespace "` + theirs + `"`))
	res = callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": theirs})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`User "` + user + `" cannot list resource "spaceboots"`))
	g.Expect(boots(t, theirs)).To(BeEmpty())

	// Without the group in its token, the same person no longer reaches the team's namespace.
	cs = connect(t, s.oauth, s.token(sub, nil), nil)
	res = callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": teams})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(canI(t, teams, user)).To(BeFalse())
}

// Every token that is not a valid access token of the issuer for this resource is
// refused with 401 and a challenge that points to the metadata; a token without
// the required scope gets 403 insufficient_scope. None of them reaches a tool.
func TestOAuthRefusesForgedAndMisdirectedTokens(t *testing.T) {
	s := newOAuthServer(t, oauth.Config{Scopes: []string{"mcp"}})
	sub := unique("mallory")
	ns := namespaceFor(t, rbacv1.UserKind, "oidc:"+sub)
	valid := func(edit func(map[string]any)) map[string]any {
		c := s.is.Claims(sub, s.resource)
		c["scope"] = "mcp"
		edit(c)
		return c
	}
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	good := s.is.Sign(valid(func(map[string]any) {}))
	parts := strings.Split(good, ".")
	sig := []byte(parts[2])
	sig[5] ^= 1
	if sig[5] == '.' { // keep it in the alphabet
		sig[5] = 'A'
	}
	// A token with the claims of another user, under the valid token's signature.
	other := strings.Split(s.is.Sign(valid(func(c map[string]any) { c["sub"] = "root" })), ".")

	metadata := s.base + oauth.WellKnownResource + "/oauth/mcp"
	invalid := `Bearer error="invalid_token", resource_metadata="` + metadata + `"`
	cases := []struct {
		name, token string
		status      int
		challenge   string
	}{
		{"no token", "", http.StatusUnauthorized, `Bearer resource_metadata="` + metadata + `"`},
		{"expired", s.is.Sign(valid(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), http.StatusUnauthorized, invalid},
		{"no expiry", s.is.Sign(valid(func(c map[string]any) { delete(c, "exp") })), http.StatusUnauthorized, invalid},
		{"wrong audience", s.is.Sign(valid(func(c map[string]any) { c["aud"] = "https://elsewhere.example.com/mcp" })), http.StatusUnauthorized, invalid},
		{"wrong issuer", s.is.Sign(valid(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), http.StatusUnauthorized, invalid},
		{"alg none", issuer.Unsigned(valid(func(map[string]any) {})), http.StatusUnauthorized, invalid},
		{"unsigned", parts[0] + "." + parts[1] + ".", http.StatusUnauthorized, invalid},
		{"tampered signature", parts[0] + "." + parts[1] + "." + string(sig), http.StatusUnauthorized, invalid},
		{"claims swapped under a signature", other[0] + "." + other[1] + "." + parts[2], http.StatusUnauthorized, invalid},
		{"signed by a key the issuer does not publish", issuer.SignWith(stranger, "stranger", valid(func(map[string]any) {})), http.StatusUnauthorized, invalid},
		{"no user name", s.is.Sign(valid(func(c map[string]any) { delete(c, "sub") })), http.StatusUnauthorized, invalid},
		{"a ServiceAccount's bearer token", token, http.StatusUnauthorized, invalid},
		{"missing scope", s.is.Sign(valid(func(c map[string]any) { c["scope"] = "openid" })), http.StatusForbidden,
			`Bearer error="insufficient_scope", scope="mcp", resource_metadata="` + metadata + `"`},
	}
	create := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbar_class_zorp_SpaceBoot","arguments":{"name":"X","metadata":{"namespace":"` + ns + `","name":"forged"}}}}`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			headers := map[string]string{}
			if tc.token != "" {
				headers["Authorization"] = "Bearer " + tc.token
			}
			for _, body := range []string{initializeBody, create} {
				status, h, _ := rawCall(t, s.oauth, headers, body)
				g.Expect(status).To(Equal(tc.status))
				g.Expect(h.Get("WWW-Authenticate")).To(Equal(tc.challenge))
			}
		})
	}
	NewWithT(t).Expect(boots(t, ns)).To(BeEmpty())
	// Forged signatures make the server fetch the issuer's JWKS again only a few times
	// (the burst of its refetch limit), and the valid token itself still gets in.
	NewWithT(t).Expect(s.is.JWKSFetches()).To(BeNumerically("<=", 3))
	status, _, body := rawCall(t, s.oauth, map[string]string{"Authorization": "Bearer " + good}, initializeBody)
	NewWithT(t).Expect(status).To(Equal(http.StatusOK), body)
}

// After the issuer rotates its signing key, tokens signed by the new key are
// accepted: the unknown key id makes the server fetch the JWKS again.
func TestOAuthAcceptsTokensAfterKeyRotation(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{})
	sub := unique("rotating")
	cs := connect(t, s.oauth, s.token(sub, nil), nil)
	_, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	fetches := s.is.JWKSFetches()

	g.Expect(s.is.Rotate()).To(Succeed())
	cs = connect(t, s.oauth, s.token(sub, nil), nil)
	_, err = cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.is.JWKSFetches()).To(BeNumerically(">", fetches))
}

// The metadata names the resource, the issuer, the scopes and the header method; it
// is served for the OAuth route only, so /mcp advertises no OAuth.
func TestOAuthProtectedResourceMetadata(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{Scopes: []string{"mcp"}, ScopesSupported: []string{"mcp", "offline_access"}})
	status, doc := getJSON(t, s.base+"/.well-known/oauth-protected-resource/oauth/mcp")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(doc).To(Equal(map[string]any{
		"resource":                 s.oauth,
		"authorization_servers":    []any{s.is.URL()},
		"scopes_supported":         []any{"mcp", "offline_access"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "Sandbar",
	}))
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		status, _ := getJSON(t, s.base+path)
		g.Expect(status).To(Equal(http.StatusNotFound), path)
	}
}

// With OAuth on, /mcp answers bearer-token clients exactly as before: the same
// challenge (no resource_metadata, which would make clients drop their configured
// header for an OAuth flow), and a ServiceAccount's token works.
func TestBearerRouteAdvertisesNoOAuth(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{})
	for _, headers := range []map[string]string{{}, {"Authorization": "Bearer " + s.token(unique("alice"), nil)}} {
		status, h, body := rawCall(t, s.mcp, headers, initializeBody)
		g.Expect(status).To(Equal(http.StatusUnauthorized))
		g.Expect(h.Get("WWW-Authenticate")).To(Equal(`Bearer realm="sandbar-mcp"`))
		g.Expect(body).NotTo(ContainSubstring("resource_metadata"))
	}
	cs := connect(t, s.mcp, token, nil)
	_, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
}

// A session opened with one person's token is refused to another person's token,
// however valid: a session id is not a credential.
func TestOAuthSessionIsRefusedToAnotherUser(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServer(t, oauth.Config{})
	alice, bob := unique("alice"), unique("bob")
	cs := connect(t, s.oauth, s.token(alice, nil), nil)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	headers := map[string]string{"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": "2025-06-18"}

	headers["Authorization"] = "Bearer " + s.token(bob, nil)
	status, _, body := rawCall(t, s.oauth, headers, list)
	g.Expect(status).To(Equal(http.StatusForbidden), body)
	g.Expect(body).NotTo(ContainSubstring("sandbar_"))

	// A ServiceAccount's token on /mcp cannot take it over either.
	headers["Authorization"] = "Bearer " + token
	status, _, body = rawCall(t, s.mcp, headers, list)
	g.Expect(status).To(Equal(http.StatusForbidden), body)

	headers["Authorization"] = "Bearer " + s.token(alice, nil)
	status, _, body = rawCall(t, s.oauth, headers, list)
	g.Expect(status).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring("sandbar_"))
}

// On the OAuth host, /mcp is the OAuth route and the metadata is at the root
// well-known URL too; other hosts keep bearer tokens on /mcp.
func TestOAuthHostServesOAuthOnMCP(t *testing.T) {
	g := NewWithT(t)
	const host = "mcp-oauth.sandbar.test"
	s := newOAuthServer(t, oauth.Config{Host: host, ResourceURL: "https://" + host + "/mcp"})
	metadata := "https://" + host + "/.well-known/oauth-protected-resource/mcp"

	status, h, _ := rawCall(t, s.mcp, map[string]string{"Host": host}, initializeBody)
	g.Expect(status).To(Equal(http.StatusUnauthorized))
	g.Expect(h.Get("WWW-Authenticate")).To(Equal(`Bearer resource_metadata="` + metadata + `"`))
	// A valid token passes authentication; the SDK's DNS-rebinding guard of a loopback
	// listener (this test's) then refuses the host name, as it would not behind an Ingress.
	status, _, body := rawCall(t, s.mcp, map[string]string{"Host": host, "Authorization": "Bearer " + s.token(unique("alice"), nil)}, initializeBody)
	g.Expect(status).To(Equal(http.StatusForbidden), body)
	g.Expect(body).To(ContainSubstring("invalid Host header"))

	status, h, _ = rawCall(t, s.mcp, nil, initializeBody)
	g.Expect(status).To(Equal(http.StatusUnauthorized))
	g.Expect(h.Get("WWW-Authenticate")).To(Equal(`Bearer realm="sandbar-mcp"`))

	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		req, err := http.NewRequest(http.MethodGet, s.base+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		var doc map[string]any
		g.Expect(json.NewDecoder(resp.Body).Decode(&doc)).To(Succeed())
		resp.Body.Close()
		g.Expect(doc["resource"]).To(Equal("https://" + host + "/mcp"))
		status, _ := getJSON(t, s.base+path)
		g.Expect(status).To(Equal(http.StatusNotFound), "%s on another host", path)
	}
}

// A built-in job runs in the controller as the ServiceAccount its process names; a
// person signed in with OAuth is told to use one, and no process is created.
func TestOAuthUserCannotStartBuiltinJobs(t *testing.T) {
	g := NewWithT(t)
	ns := unique("oauth-home")
	s := newOAuthServer(t, oauth.Config{Namespace: ns})
	g.Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	cs := connect(t, s.oauth, s.token(unique("alice"), nil), nil)
	res := callTool(t, cs, "sandbar_project_export", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring("runs in the cluster as a Sandbar ServiceAccount"))
	var list metav1alpha1.WorkflowProcessList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())
}

// With the prefixes turned off, a token still cannot make its holder a Kubernetes
// system identity: a user or a group named system:... (system:masters would be
// cluster-admin through the manager's impersonation) is refused, and nothing is
// created.
func TestOAuthTokenCannotClaimASystemIdentity(t *testing.T) {
	s := newOAuthServer(t, oauth.Config{UsernamePrefix: oauth.NoPrefix, GroupsPrefix: oauth.NoPrefix})
	ns := namespaceFor(t, "", "")
	create := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbar_class_zorp_SpaceBoot","arguments":{"name":"X","metadata":{"namespace":"` + ns + `","name":"escalated"}}}}`
	for name, tok := range map[string]string{
		"system user":  s.token("system:admin", nil),
		"system group": s.token(unique("eve"), map[string]any{"groups": []string{"developers", "system:masters"}}),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			for _, body := range []string{initializeBody, create} {
				status, h, _ := rawCall(t, s.oauth, map[string]string{"Authorization": "Bearer " + tok}, body)
				g.Expect(status).To(Equal(http.StatusUnauthorized))
				g.Expect(h.Get("WWW-Authenticate")).To(HavePrefix(`Bearer error="invalid_token"`))
			}
		})
	}
	NewWithT(t).Expect(boots(t, ns)).To(BeEmpty())
	// Without the prefix, an ordinary user is still that user.
	cs := connect(t, s.oauth, s.token(unique("eve"), map[string]any{"groups": []string{"developers"}}), nil)
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "X", "metadata": map[string]any{"namespace": ns, "name": "plain"}})
	NewWithT(t).Expect(res.IsError).To(BeTrue(), text(res))
	NewWithT(t).Expect(text(res)).To(ContainSubstring(`User "eve-`))
	NewWithT(t).Expect(boots(t, ns)).To(BeEmpty())
}

// With the user name taken from the email claim, a token names that address's
// user only when the issuer says it verified the address (email_verified true):
// at many issuers anyone may put another person's address on an account. A token
// whose email_verified is false, missing or not a boolean is refused with 401 like
// any bad token, and nothing is created in the namespace the address may edit.
func TestOAuthEmailNamesAUserOnlyOnceVerified(t *testing.T) {
	s := newOAuthServer(t, oauth.Config{UsernameClaim: "email"})
	email := unique("alice") + "@example.com"
	ns := namespaceFor(t, rbacv1.UserKind, "oidc:"+email)
	create := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbar_class_zorp_SpaceBoot","arguments":{"name":"X","metadata":{"namespace":"` + ns + `","name":"unverified"}}}}`
	for name, extra := range map[string]map[string]any{
		"email_verified false":    {"email": email, "email_verified": false},
		"email_verified missing":  {"email": email},
		"email_verified a string": {"email": email, "email_verified": "true"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tok := s.token(unique("mallory"), extra)
			for _, body := range []string{initializeBody, create} {
				status, h, _ := rawCall(t, s.oauth, map[string]string{"Authorization": "Bearer " + tok}, body)
				g.Expect(status).To(Equal(http.StatusUnauthorized))
				g.Expect(h.Get("WWW-Authenticate")).To(HavePrefix(`Bearer error="invalid_token"`))
			}
		})
	}
	NewWithT(t).Expect(boots(t, ns)).To(BeEmpty())
	// A verified address is its user: RBAC lets that user create in the namespace.
	cs := connect(t, s.oauth, s.token(unique("alice"), map[string]any{"email": email, "email_verified": true}), nil)
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "X", "metadata": map[string]any{"namespace": ns, "name": "verified"}})
	NewWithT(t).Expect(res.IsError).To(BeFalse(), text(res))
	NewWithT(t).Expect(boots(t, ns)).To(HaveLen(1))
}

// The per-account rate limit applies to each person: one who has spent their bucket
// gets 429, another person gets in.
func TestOAuthRateLimitIsPerPerson(t *testing.T) {
	g := NewWithT(t)
	s := newOAuthServerWith(t, mcpserver.Options{RateLimit: 0.01, RateBurst: 2})
	alice := map[string]string{"Authorization": "Bearer " + s.token(unique("alice"), nil)}
	for range 2 {
		status, _, body := rawCall(t, s.oauth, alice, initializeBody)
		g.Expect(status).To(Equal(http.StatusOK), body)
	}
	status, h, body := rawCall(t, s.oauth, alice, initializeBody)
	g.Expect(status).To(Equal(http.StatusTooManyRequests), body)
	g.Expect(h.Get("Retry-After")).NotTo(BeEmpty())
	status, _, body = rawCall(t, s.oauth, map[string]string{"Authorization": "Bearer " + s.token(unique("bob"), nil)}, initializeBody)
	g.Expect(status).To(Equal(http.StatusOK), body)
}

// Without an issuer there is no OAuth route and no metadata.
func TestOAuthIsOffWithoutAnIssuer(t *testing.T) {
	g := NewWithT(t)
	base := strings.TrimSuffix(mcpURL, "/mcp")
	status, _, _ := rawCall(t, base+"/oauth/mcp", map[string]string{"Authorization": "Bearer " + token}, initializeBody)
	g.Expect(status).To(Equal(http.StatusNotFound))
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource/oauth/mcp"} {
		status, _ := getJSON(t, base+path)
		g.Expect(status).To(Equal(http.StatusNotFound), path)
	}
}

// The people signed in with OAuth keep their processes in one namespace, apart from
// the namespace they work in, and none reaches another's: bound to the
// process-owner role (which grants only the verb own) and, as the docs tell, to the
// instance-editor role where they work, each starts and reads their own tasks
// through MCP, sees no one else's in their list or by id, and cannot read any with
// kubectl; a person without the role starts none.
func TestOAuthPeopleKeepTheirProcessesApart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, tasks := unique("oauth-home"), unique("oauth-tasks")
	s := newOAuthServer(t, oauth.Config{Namespace: ns, TasksNamespace: tasks})
	for _, n := range []string{ns, tasks} {
		g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		t.Cleanup(func() {
			_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		})
	}
	members := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "oidc:team-a"}}
	for _, role := range []string{"sandbar-process-owner", "sandbar-instance-editor"} {
		g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: members})).To(Succeed())
	}
	team := map[string]any{"groups": []string{"team-a"}}
	aliceSub, bobSub := unique("alice"), unique("bob")
	alice := connect(t, s.oauth, s.token(aliceSub, team), nil)
	bob := connect(t, s.oauth, s.token(bobSub, team), nil)

	res := startOrder(t, alice, map[string]any{"note": "alice's"}, nil)
	g.Expect(res.IsError).To(BeFalse(), text(res))
	id := taskID(t, res)
	var p metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: tasks, Name: id}, &p)).To(Succeed(), "a person's task lives in the tasks namespace")
	g.Expect(p.Spec.Owner).To(Equal(oauth.AccountName("oidc:" + aliceSub)))

	res = callTool(t, alice, "sandbar_tasks_get", map[string]any{"taskId": id})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	res = callTool(t, bob, "sandbar_tasks_get", map[string]any{"taskId": id})
	g.Expect(res.IsError).To(BeTrue(), "bob reads alice's task: %s", text(res))
	g.Expect(text(res)).To(ContainSubstring("unknown task"))
	res = callTool(t, bob, "sandbar_tasks_list", map[string]any{})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(text(res)).NotTo(ContainSubstring(id))

	// What the people were granted lets no one read a task with kubectl: where
	// they work there is none, and where the tasks are they have nothing.
	for _, verb := range []string{"get", "list"} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "oidc:" + bobSub, Groups: []string{"oidc:team-a", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tasks, Verb: verb, Group: metav1alpha1.GroupVersion.Group,
				Resource: "workflowprocesses", Name: map[string]string{"get": id}[verb]},
		}}
		g.Expect(k8s.Create(ctx, review)).To(Succeed())
		g.Expect(review.Status.Allowed).To(BeFalse(), "bob may %s the people's tasks", verb)
	}
	var where metav1alpha1.WorkflowProcessList
	g.Expect(k8s.List(ctx, &where, client.InNamespace(ns))).To(Succeed())
	g.Expect(where.Items).To(BeEmpty(), "no task lives where the people work")

	// Without the role, a person starts nothing.
	carol := connect(t, s.oauth, s.token(unique("carol"), nil), nil)
	res = startOrder(t, carol, nil, nil)
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`cannot own resource "workflowprocesses"`))
}
