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

package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/authserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// bindOAuthFlags binds the flags of the OAuth resource server to c.
func bindOAuthFlags(fs *flag.FlagSet, c *oauth.Config) {
	fs.StringVar(&c.IssuerURL, "oauth-issuer-url", "", "Issuer of the OAuth access tokens accepted on the OAuth route (its OIDC discovery names the JWKS). Empty: OAuth is off.")
	fs.StringVar(&c.JWKSURL, "oauth-jwks-url", "", "The issuer's JWKS URL, instead of the one its discovery document names.")
	fs.StringVar(&c.ResourceURL, "oauth-resource-url", "", "Public URL of the OAuth route, as https://sandbar.example.com/oauth/mcp: the resource of the Protected Resource Metadata and the default audience.")
	fs.StringVar(&c.Audience, "oauth-audience", "", "The audience (aud) a token must name (default: --oauth-resource-url).")
	fs.StringVar(&c.Path, "oauth-path", oauth.DefaultPath, "Path of the OAuth route on every host (/mcp stays for bearer tokens).")
	fs.StringVar(&c.Host, "oauth-host", "", "A host name whose requests get OAuth on /mcp too (and the metadata at the root well-known URL).")
	fs.Func("oauth-scopes", "Comma-separated scopes every token must carry (scope or scp claim); also listed as scopes_supported.", listFlag(&c.Scopes))
	fs.Func("oauth-scopes-supported", "Comma-separated scopes the metadata tells clients to ask for (default: --oauth-scopes).", listFlag(&c.ScopesSupported))
	fs.Func("oauth-signing-algs", "Comma-separated JWS algorithms accepted (default RS256,ES256; never none).", listFlag(&c.SigningAlgs))
	fs.StringVar(&c.UsernameClaim, "oauth-username-claim", oauth.DefaultUsernameClaim, "Claim holding the user name; a token without it is refused (email: also one whose email_verified is not true).")
	fs.StringVar(&c.UsernamePrefix, "oauth-username-prefix", oauth.DefaultUsernamePrefix, "Prefix of the Kubernetes user name (\"-\": none).")
	fs.StringVar(&c.GroupsClaim, "oauth-groups-claim", oauth.DefaultGroupsClaim, "Claim holding the groups (a list or one string).")
	fs.StringVar(&c.GroupsPrefix, "oauth-groups-prefix", oauth.DefaultGroupsPrefix, "Prefix of the Kubernetes group names (\"-\": none).")
	fs.StringVar(&c.Namespace, "oauth-namespace", "default", "Namespace where an OAuth user's tools act by default; bind the people the role sandbar-process-owner there (the verb own on workflowprocesses) to let them keep tasks.")
	fs.StringVar(&c.TasksNamespace, "oauth-tasks-namespace", "", "Namespace where the processes (tasks) of people signed in with OAuth live, apart from the namespaces they work in: grant no person anything there (default: the manager's namespace; outside a pod with no --leader-election-namespace, --oauth-namespace).")
	fs.Func("oauth-clients", "Comma-separated MCP clients OAuth users come with, as a ServiceAccount's spec.clients: they bound the tools served (default claude-ai, 256 tools).", listFlag(&c.Clients))
	fs.Func("oauth-tools", "Comma-separated tool globs an OAuth user may see and call (default: every tool; RBAC decides the reach).", listFlag(&c.Tools))
}

// listFlag sets dst from a comma-separated flag value (splitList).
func listFlag(dst *[]string) func(string) error {
	return func(v string) error { *dst = splitList(v); return nil }
}

// authServerFlags are the flags of the authorization server that are read
// before they become options: files and the namespace.
type authServerFlags struct {
	clientSecretFile, namespace string
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// bindAuthServerFlags binds the flags of the authorization server to c and f.
func bindAuthServerFlags(fs *flag.FlagSet, c *authserver.Config, f *authServerFlags) {
	fs.BoolVar(&c.Enabled, "oauth-authorization-server", false, "Serve an OAuth authorization server at /oauth2 on the OAuth route's origin, as the route's issuer: hosted MCP clients name themselves by a client ID metadata document, people log in at --oauth-upstream-issuer-url. Excludes --oauth-issuer-url; needs --oauth-resource-url.")
	fs.StringVar(&c.Upstream.IssuerURL, "oauth-upstream-issuer-url", "", "The OpenID provider people log in at (its discovery document is read at the first login); --oauth-username-claim, --oauth-groups-claim and their prefixes map its ID token's claims.")
	fs.StringVar(&c.Upstream.AuthorizationURL, "oauth-upstream-authorization-url", "", "For a provider of OAuth 2 only (GitHub: https://github.com/login/oauth/authorize), instead of --oauth-upstream-issuer-url, with the token and userinfo URLs.")
	fs.StringVar(&c.Upstream.TokenURL, "oauth-upstream-token-url", "", "The token URL of a provider of OAuth 2 only (GitHub: https://github.com/login/oauth/access_token).")
	fs.StringVar(&c.Upstream.UserinfoURL, "oauth-upstream-userinfo-url", "", "The userinfo URL of a provider of OAuth 2 only, whose JSON answer to the access token holds the claims --oauth-username-claim and --oauth-groups-claim name (GitHub: https://api.github.com/user, username claim login).")
	fs.StringVar(&c.Upstream.ClientID, "oauth-upstream-client-id", "", "The client id registered at the upstream provider, with the redirect URI <origin>/oauth2/callback.")
	fs.StringVar(&f.clientSecretFile, "oauth-upstream-client-secret-file", "", "A file holding that client's secret.")
	fs.Func("oauth-upstream-scopes", "Comma-separated scopes asked of the upstream provider (default openid,email,profile).", listFlag(&c.Upstream.Scopes))
	fs.Func("oauth-client-document-allowed-cidrs", "Comma-separated address ranges the client ID metadata documents may be fetched from although they are private (loopback, RFC 1918, ...); none by default.", func(v string) error {
		for _, p := range splitList(v) {
			prefix, err := netip.ParsePrefix(p)
			if err != nil {
				return err
			}
			c.Documents.AllowedPrefixes = append(c.Documents.AllowedPrefixes, prefix)
		}
		return nil
	})
	fs.DurationVar(&c.SessionTTL, "oauth-session-length", authserver.DefaultSessionTTL, "How long a sign-in lasts when the upstream provider gives no refresh token (no offline_access): then its grant's tokens end and the person signs in again, their groups read anew.")
	fs.Func("oauth-trusted-issuers", "Comma-separated identity providers whose ID-JAGs (Enterprise-Managed Authorization: an organisation's sign-in, as Okta Cross App Access) a client may exchange for a token with the jwt-bearer grant, no consent screen: each an issuer URL, then |jwks=<URL> where its discovery document is not to be read, and |prefix=<p>, the prefix of the user and group names it vouches for, which every provider but the upstream one needs (default: none, the grant is not served).", func(v string) error {
		c.TrustedIssuers = nil
		for _, item := range splitList(v) {
			parts := strings.Split(item, "|")
			t := authserver.TrustedIssuer{Issuer: parts[0]}
			for _, p := range parts[1:] {
				switch k, v, _ := strings.Cut(p, "="); k {
				case "jwks":
					t.JWKSURL = v
				case "prefix":
					t.Prefix = v
				default:
					return fmt.Errorf("%q: %q is neither jwks=<URL> nor prefix=<p>", item, p)
				}
			}
			c.TrustedIssuers = append(c.TrustedIssuers, t)
		}
		return nil
	})
	fs.Func("oauth-trusted-clients", "Comma-separated client ids (metadata documents' URLs, as https://claude.ai/oauth/mcp-oauth-client-metadata) whose own names the consent page may lead with; others lead with what the server verified (the document's host, or a program on the person's computer).", listFlag(&c.TrustedClients))
	fs.BoolVar(&c.Registration, "oauth-dynamic-client-registration", false, "Let clients without a client ID metadata document register themselves (RFC 7591) with the authorization server: public clients only, at most 1000, each kept 30 days once it completes a sign-in (10 minutes until then), three at once from one address then one every 20 s, one a second in all.")
	fs.StringVar(&f.namespace, "oauth-authorization-server-namespace", "", "Namespace of the Secrets of the authorization server's keys and grants (default: the pod's namespace).")
}

// complete reads the secret file and finds the namespace.
func (f authServerFlags) complete(c *authserver.Config) error {
	if !c.Enabled {
		return nil
	}
	if f.clientSecretFile != "" {
		secret, err := os.ReadFile(f.clientSecretFile)
		if err != nil {
			return fmt.Errorf("--oauth-upstream-client-secret-file: %w", err)
		}
		c.Upstream.ClientSecret = strings.TrimSpace(string(secret))
	}
	if c.Namespace = f.namespace; c.Namespace == "" {
		if c.Namespace = managerNamespace(""); c.Namespace == "" {
			return fmt.Errorf("--oauth-authorization-server-namespace is needed outside a pod (%s cannot be read)", serviceAccountNamespace)
		}
	}
	return nil
}
