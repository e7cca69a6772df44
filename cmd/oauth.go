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

	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// bindOAuthFlags binds the flags of the OAuth resource server to c.
func bindOAuthFlags(fs *flag.FlagSet, c *oauth.Config) {
	list := func(dst *[]string) func(string) error {
		return func(v string) error { *dst = splitList(v); return nil }
	}
	fs.StringVar(&c.IssuerURL, "oauth-issuer-url", "", "Issuer of the OAuth access tokens accepted on the OAuth route (its OIDC discovery names the JWKS). Empty: OAuth is off.")
	fs.StringVar(&c.JWKSURL, "oauth-jwks-url", "", "The issuer's JWKS URL, instead of the one its discovery document names.")
	fs.StringVar(&c.ResourceURL, "oauth-resource-url", "", "Public URL of the OAuth route, as https://sandbar.example.com/oauth/mcp: the resource of the Protected Resource Metadata and the default audience.")
	fs.StringVar(&c.Audience, "oauth-audience", "", "The audience (aud) a token must name (default: --oauth-resource-url).")
	fs.StringVar(&c.Path, "oauth-path", oauth.DefaultPath, "Path of the OAuth route on every host (/mcp stays for bearer tokens).")
	fs.StringVar(&c.Host, "oauth-host", "", "A host name whose requests get OAuth on /mcp too (and the metadata at the root well-known URL).")
	fs.Func("oauth-scopes", "Comma-separated scopes every token must carry (scope or scp claim); also listed as scopes_supported.", list(&c.Scopes))
	fs.Func("oauth-scopes-supported", "Comma-separated scopes the metadata tells clients to ask for (default: --oauth-scopes).", list(&c.ScopesSupported))
	fs.Func("oauth-signing-algs", "Comma-separated JWS algorithms accepted (default RS256,ES256; never none).", list(&c.SigningAlgs))
	fs.StringVar(&c.UsernameClaim, "oauth-username-claim", oauth.DefaultUsernameClaim, "Claim holding the user name; a token without it is refused (email: also one whose email_verified is not true).")
	fs.StringVar(&c.UsernamePrefix, "oauth-username-prefix", oauth.DefaultUsernamePrefix, "Prefix of the Kubernetes user name (\"-\": none).")
	fs.StringVar(&c.GroupsClaim, "oauth-groups-claim", oauth.DefaultGroupsClaim, "Claim holding the groups (a list or one string).")
	fs.StringVar(&c.GroupsPrefix, "oauth-groups-prefix", oauth.DefaultGroupsPrefix, "Prefix of the Kubernetes group names (\"-\": none).")
	fs.StringVar(&c.Namespace, "oauth-namespace", "default", "Namespace where an OAuth user's tools act by default and its processes live.")
	fs.Func("oauth-clients", "Comma-separated MCP clients OAuth users come with, as a ServiceAccount's spec.clients: they bound the tools served (default claude-ai, 256 tools).", list(&c.Clients))
	fs.Func("oauth-tools", "Comma-separated tool globs an OAuth user may see and call (default: every tool; RBAC decides the reach).", list(&c.Tools))
}
