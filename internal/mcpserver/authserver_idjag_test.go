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
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authserver"
	"github.com/sandbar-dev/sandbar/internal/testenv/issuer"
)

// Enterprise-Managed Authorization: a client signed in at its organisation's
// identity provider (a second test issuer, trusted, with a prefix of its own)
// exchanges the ID-JAG that provider issued for this server, with the jwt-bearer
// grant and no browser, for a token that acts as the person, mapped as a sign-in is
// but with that prefix, and lists its tools. The
// metadata says the grant is served. Refused, each with its reason: a forged
// ID-JAG, an expired one, one presented again, one for another audience or another
// resource, one from an issuer the server does not trust, one of another type, and
// one issued to another client. The TypeScript SDK's client exchanges one too.
func TestTheAuthorizationServerExchangesTheIDJAGOfATrustedIssuer(t *testing.T) {
	g := NewWithT(t)
	idp, err := issuer.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(idp.Close)
	untrusted, err := issuer.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(untrusted.Close)
	s := newASServer(t, func(o *mcpserver.Options) {
		o.AuthorizationServer.TrustedIssuers = []authserver.TrustedIssuer{{Issuer: idp.URL(), Prefix: "acme:"}}
	})
	status, meta := getJSON(t, s.base+"/.well-known/oauth-authorization-server/oauth2")
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(meta["grant_types_supported"]).To(ContainElement(authserver.GrantTypeJWTBearer))
	g.Expect(meta["authorization_grant_profiles_supported"]).To(Equal([]any{authserver.GrantProfileIDJAG}))

	sub := unique("erin")
	namespaceFor(t, rbacv1.UserKind, "acme:"+sub)
	claims := func(change func(map[string]any)) map[string]any {
		c := idp.Claims(sub, s.asURL)
		c["exp"] = time.Now().Add(5 * time.Minute).Unix()
		c["resource"], c["client_id"], c["jti"], c["scope"] = s.oauth, s.clientID, unique("jti"), "mcp"
		if change != nil {
			change(c)
		}
		return c
	}
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	g.Expect(err).NotTo(HaveOccurred())
	exchange := func(assertion string) (int, map[string]any) {
		return s.token(t, url.Values{"grant_type": {authserver.GrantTypeJWTBearer}, "assertion": {assertion}})
	}

	jag := idp.SignTyped("oauth-id-jag+jwt", claims(nil))
	status, tokens := exchange(jag)
	g.Expect(status).To(Equal(http.StatusOK), "%v", tokens)
	g.Expect(tokens).To(HaveKeyWithValue("token_type", "Bearer"))
	g.Expect(tokens).NotTo(HaveKey("refresh_token"))
	access, _ := tokens["access_token"].(string)
	at := claimsOf(t, access)
	g.Expect(at).To(And(HaveKeyWithValue("sub", "acme:"+sub), HaveKeyWithValue("aud", ContainElement(s.oauth)), HaveKeyWithValue("client_id", s.clientID)))
	g.Expect(listTools(t, connect(t, s.oauth, access, nil))).To(HaveKey("sandbar_entity_find"))
	// The TypeScript SDK's own exchange (exchangeJwtAuthGrant), as a public client.
	out := runScript(t, "idjag.mjs", "MCP_URL="+s.oauth, "TOKEN_ENDPOINT="+s.asURL+"/token", "CLIENT_ID="+s.clientID,
		"ASSERTION="+idp.SignTyped("oauth-id-jag+jwt", claims(nil)))
	g.Expect(string(out)).To(ContainSubstring(`"tokenType":"Bearer"`))

	for _, tc := range []struct {
		name, assertion, says string
	}{
		{"presented again", jag, "presented before"},
		{"forged", issuer.SignWithTyped(stranger, "idp-key", "oauth-id-jag+jwt", claims(nil)), "signature"},
		{"expired", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), "expired"},
		{"for another audience", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { c["aud"] = "https://elsewhere.example/oauth2" })), "audience"},
		{"for another resource", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { c["resource"] = "https://elsewhere.example/mcp" })), "resource"},
		{"from an untrusted issuer", untrusted.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { c["iss"] = untrusted.URL() })), "not one this server trusts"},
		{"of another type", idp.Sign(claims(nil)), "not oauth-id-jag+jwt"},
		{"issued to another client", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { c["client_id"] = "https://other.example/client.json" })), "issued to the client"},
		{"not a JWT", "not-a-jwt", "not a JWT"},
		{"with a scope that is not a string", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { c["scope"] = []string{"mcp"} })), "scope is not a string"},
		{"without iat", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { delete(c, "iat") })), "no iat"},
		{"without jti", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { delete(c, "jti") })), "no jti"},
		{"valid for longer than an hour", idp.SignTyped("oauth-id-jag+jwt", claims(func(c map[string]any) { c["exp"] = time.Now().Add(2 * time.Hour).Unix() })), "ahead"},
	} {
		status, doc := exchange(tc.assertion)
		g.Expect(status).To(Equal(http.StatusBadRequest), "%s: %v", tc.name, doc)
		g.Expect(doc).To(HaveKeyWithValue("error", "invalid_grant"), tc.name)
		g.Expect(doc["error_description"]).To(ContainSubstring(tc.says), tc.name)
	}
}
