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

package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// The chart's oauth values: off by default; on, the manager gets the OAuth flags,
// the rights to impersonate users and groups, and an Ingress for the OAuth route on
// a path of the Ingress hosts or on a host of its own; bad values are refused.
func TestChartServesOAuthOnTheRouteItChooses(t *testing.T) {
	g := NewWithT(t)
	chart := filepath.Join(testenv.RepoRoot(), "charts", "sandbar")
	for _, helm := range []string{os.Getenv("HELM"), os.Getenv("HELM4")} {
		if helm == "" {
			t.Fatal("HELM or HELM4 is not set: run the tests with `make test`, which installs Helm 3 and Helm 4")
		}
		render := func(set ...string) ([]byte, error) {
			args := []string{"template", release, chart, "--namespace", namespace, "--kube-version=v1.37.0", "--set", "ingress.enabled=true"}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			return exec.Command(helm, args...).CombinedOutput()
		}
		objects := func(set ...string) (map[string]*unstructured.Unstructured, []string) {
			out, err := render(set...)
			g.Expect(err).NotTo(HaveOccurred(), "%s", out)
			byID := map[string]*unstructured.Unstructured{}
			var args []string
			for _, o := range decode(t, string(out)) {
				byID[id(o)] = o
				if o.GetKind() == "Deployment" {
					containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					args, _, _ = unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
				}
			}
			return byID, args
		}
		// paths are host+path of an Ingress's rules.
		paths := func(objs map[string]*unstructured.Unstructured, name string) []string {
			o := objs["Ingress.networking.k8s.io "+namespace+"/"+name]
			g.Expect(o).NotTo(BeNil(), "no Ingress %s", name)
			rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
			var out []string
			for _, r := range rules {
				host, _, _ := unstructured.NestedString(r.(map[string]any), "host")
				ps, _, _ := unstructured.NestedSlice(r.(map[string]any), "http", "paths")
				for _, p := range ps {
					path, _, _ := unstructured.NestedString(p.(map[string]any), "path")
					out = append(out, host+path)
				}
			}
			return out
		}
		oauthFlags := func(args []string) []string {
			return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return !strings.HasPrefix(a, "--oauth-") })
		}

		// Off by default: no flag, no impersonation of users, no second Ingress.
		objs, args := objects()
		g.Expect(oauthFlags(args)).To(BeEmpty(), helm)
		g.Expect(objs).NotTo(HaveKey("ClusterRole.rbac.authorization.k8s.io sandbar-oauth-impersonator"))
		g.Expect(objs).NotTo(HaveKey("Ingress.networking.k8s.io " + namespace + "/sandbar-oauth"))

		// route path: the OAuth path and its metadata on the Ingress hosts; /mcp stays on the first Ingress.
		objs, args = objects("oauth.issuerURL=https://idp.example.com/realms/sandbar", "oauth.scopes={mcp}", "oauth.claims.username=email")
		g.Expect(oauthFlags(args)).To(Equal([]string{
			"--oauth-issuer-url=https://idp.example.com/realms/sandbar",
			"--oauth-resource-url=https://sandbar.example.com/oauth/mcp",
			"--oauth-path=/oauth/mcp",
			"--oauth-scopes=mcp",
			"--oauth-username-claim=email",
			"--oauth-username-prefix=oidc:",
			"--oauth-groups-claim=groups",
			"--oauth-groups-prefix=oidc:",
			"--oauth-namespace=default",
			"--oauth-clients=claude-ai",
		}), helm)
		g.Expect(paths(objs, "sandbar-oauth")).To(Equal([]string{
			"sandbar.example.com/oauth/mcp", "sandbar.example.com/oauth/mcp/sse", "sandbar.example.com/oauth/mcp/server-card",
			"sandbar.example.com/.well-known/oauth-protected-resource/oauth/mcp"}), helm)
		g.Expect(paths(objs, "sandbar")).To(Equal([]string{"sandbar.example.com/mcp", "sandbar.example.com/mcp/sse", "sandbar.example.com/mcp/server-card",
			"sandbar.example.com/.well-known/ai-catalog.json", "sandbar.example.com/.well-known/mcp/catalog.json"}), helm)
		var role rbacv1.ClusterRole
		g.Expect(objs).To(HaveKey("ClusterRole.rbac.authorization.k8s.io sandbar-oauth-impersonator"))
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(
			objs["ClusterRole.rbac.authorization.k8s.io sandbar-oauth-impersonator"].Object, &role)).To(Succeed())
		g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users", "groups"}, Verbs: []string{"impersonate"}}}))
		// The kustomize install grants the same (config/oauth), to its own manager.
		kustomized, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "oauth", "impersonate.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(kustomized).To(HaveLen(2))
		var kRole rbacv1.ClusterRole
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(kustomized[0].Object, &kRole)).To(Succeed())
		g.Expect(kRole.Rules).To(Equal(role.Rules), "config/oauth and the chart differ")
		var kBinding rbacv1.ClusterRoleBinding
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(kustomized[1].Object, &kBinding)).To(Succeed())
		g.Expect(kBinding.RoleRef.Name).To(Equal(kRole.Name))
		g.Expect(kBinding.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "sandbar-controller-manager", Namespace: "sandbar-system"}}))

		// route host: /mcp and the metadata on the OAuth host.
		objs, args = objects("oauth.issuerURL=https://login.microsoftonline.com/tenant/v2.0", "oauth.route=host", "oauth.host=mcp-oauth.example.com",
			"oauth.scopes={mcp}", "oauth.scopesSupported={api://sandbar/mcp}")
		g.Expect(oauthFlags(args)).To(ContainElements("--oauth-resource-url=https://mcp-oauth.example.com/mcp", "--oauth-host=mcp-oauth.example.com",
			"--oauth-scopes=mcp", "--oauth-scopes-supported=api://sandbar/mcp"), helm)
		g.Expect(paths(objs, "sandbar-oauth")).To(Equal([]string{"mcp-oauth.example.com/mcp", "mcp-oauth.example.com/mcp/sse",
			"mcp-oauth.example.com/mcp/server-card", "mcp-oauth.example.com/.well-known/oauth-protected-resource", "mcp-oauth.example.com/.well-known/oauth-protected-resource/mcp"}), helm)

		// The authorization server: its flags instead of the issuer's, its secret
		// mounted, its paths on the route's host, a Role for its Secrets.
		as := []string{"oauth.authorizationServer.enabled=true", "oauth.authorizationServer.upstream.issuerURL=https://idp.example.com",
			"oauth.authorizationServer.upstream.clientID=sandbar", "oauth.authorizationServer.upstream.clientSecret.secretName=idp-client"}
		objs, args = objects(as...)
		g.Expect(oauthFlags(args)).To(HaveExactElements(
			"--oauth-authorization-server",
			"--oauth-authorization-server-namespace="+namespace,
			"--oauth-upstream-issuer-url=https://idp.example.com",
			"--oauth-upstream-client-id=sandbar",
			"--oauth-upstream-client-secret-file=/etc/sandbar/oauth-upstream/client-secret",
			"--oauth-session-length=24h",
			"--oauth-resource-url=https://sandbar.example.com/oauth/mcp",
			"--oauth-path=/oauth/mcp",
			"--oauth-username-claim=sub",
			"--oauth-username-prefix=oidc:",
			"--oauth-groups-claim=groups",
			"--oauth-groups-prefix=oidc:",
			"--oauth-namespace=default",
			"--oauth-clients=claude-ai",
		), helm)
		g.Expect(paths(objs, "sandbar-oauth")).To(ContainElements("sandbar.example.com/oauth2",
			"sandbar.example.com/.well-known/oauth-authorization-server/oauth2", "sandbar.example.com/.well-known/openid-configuration/oauth2"), helm)
		var asRole rbacv1.Role
		g.Expect(objs).To(HaveKey("Role.rbac.authorization.k8s.io " + namespace + "/sandbar-oauth-authorization-server"))
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(
			objs["Role.rbac.authorization.k8s.io "+namespace+"/sandbar-oauth-authorization-server"].Object, &asRole)).To(Succeed())
		g.Expect(asRole.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "update", "delete"}}}))
		_, args = objects(append(as, "oauth.authorizationServer.dynamicClientRegistration=true", "oauth.authorizationServer.clientDocumentAllowedCIDRs={10.0.0.0/8}")...)
		g.Expect(oauthFlags(args)).To(ContainElements("--oauth-dynamic-client-registration", "--oauth-client-document-allowed-cidrs=10.0.0.0/8"), helm)
		_, args = objects(append(as, "oauth.authorizationServer.trustedIssuers[0].issuer=https://idp.example.com",
			"oauth.authorizationServer.trustedIssuers[1].issuer=https://acme.okta.com", "oauth.authorizationServer.trustedIssuers[1].prefix=acme:",
			"oauth.authorizationServer.trustedIssuers[1].jwksURL=https://acme.okta.com/keys")...)
		g.Expect(oauthFlags(args)).To(ContainElement("--oauth-trusted-issuers=https://idp.example.com,https://acme.okta.com|jwks=https://acme.okta.com/keys|prefix=acme:"), helm)
		refused, err := render(append(as, "oauth.authorizationServer.trustedIssuers[0].issuer=http://idp.example.org")...)
		g.Expect(err).To(HaveOccurred(), "%s: a trusted issuer is https", helm)
		g.Expect(string(refused)).To(ContainSubstring("trustedIssuers"), helm)
		_, args = objects("oauth.authorizationServer.enabled=true", "oauth.authorizationServer.upstream.clientID=sandbar",
			"oauth.authorizationServer.upstream.clientSecret.secretName=github", "oauth.claims.username=login",
			"oauth.authorizationServer.upstream.authorizationURL=https://github.com/login/oauth/authorize",
			"oauth.authorizationServer.upstream.tokenURL=https://github.com/login/oauth/access_token",
			"oauth.authorizationServer.upstream.userinfoURL=https://api.github.com/user")
		g.Expect(oauthFlags(args)).To(ContainElements("--oauth-upstream-authorization-url=https://github.com/login/oauth/authorize",
			"--oauth-upstream-token-url=https://github.com/login/oauth/access_token", "--oauth-upstream-userinfo-url=https://api.github.com/user"), helm)
		g.Expect(oauthFlags(args)).NotTo(ContainElement(HavePrefix("--oauth-upstream-issuer-url")), helm)
		out, err := render(append(as, "oauth.issuerURL=https://other.example.com")...)
		g.Expect(err).To(HaveOccurred(), "%s", out)
		g.Expect(string(out)).To(ContainSubstring("exclude each other"))
		out, err = render(as[:3]...)
		g.Expect(err).To(HaveOccurred(), "%s", out)
		g.Expect(string(out)).To(ContainSubstring("clientSecret.secretName"))

		for _, bad := range [][]string{
			{"oauth.issuerURL=http://idp.example.com"},
			{"oauth.issuerURL=https://idp.example.com", "oauth.route=host"},
			{"oauth.issuerURL=https://idp.example.com", "oauth.path=/mcp"},
			{"oauth.issuerURL=https://idp.example.com", "oauth.path=/mcp/sse"},
			{"oauth.issuerURL=https://idp.example.com", "oauth.claims.usernamePrefix=system:"},
			{"oauth.issuerURL=https://idp.example.com", "oauth.signingAlgs={none}"},
		} {
			out, err := render(bad...)
			g.Expect(err).To(HaveOccurred(), "%s accepts %v:\n%s", helm, bad, out)
		}
	}
}
