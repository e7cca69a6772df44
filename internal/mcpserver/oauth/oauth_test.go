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

package oauth

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// An OAuth user's account name goes where account names go (process owners,
// created-by annotations, logs): it is a valid label value, the same for the same
// user, different for users whose readable parts agree, and never the name of a
// ServiceAccount object.
func TestOAuthAccountNamesAreStableLabelValuesNoObjectCanHave(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)
	seen := map[string]string{}
	for _, user := range []string{
		"oidc:alice", "oidc:Alice", "oidc:alice@example.com", "oidc:ALICE@EXAMPLE.COM", "oidc:", "oidc:---",
		"oidc:" + strings.Repeat("very-long-user-name-", 10), "oidc:" + strings.Repeat("very-long-user-name-", 10) + "x",
		"oidc:名前", "https://login.example.com#0f9a",
	} {
		name := AccountName(user)
		if len(name) > 63 || !label.MatchString(name) {
			t.Errorf("%q -> %q: not a label value", user, name)
		}
		if !strings.Contains(name, "_") {
			t.Errorf("%q -> %q could be a ServiceAccount's name", user, name)
		}
		if name != AccountName(user) {
			t.Errorf("%q: not stable", user)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%q and %q share the account %q", user, other, name)
		}
		seen[name] = user
	}
	if got := AccountName("oidc:alice@example.com"); !strings.HasPrefix(got, "oauth_oidc-alice-example-com_") {
		t.Errorf("the readable part is lost: %q", got)
	}
}

func TestOAuthConfigIsChecked(t *testing.T) {
	ok := Config{IssuerURL: "https://idp.example.com", ResourceURL: "https://sandbar.example.com/oauth/mcp"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	host := ok
	host.Host, host.ResourceURL = "mcp.example.com", "https://mcp.example.com/mcp"
	if err := host.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Config){
		"plain http issuer":        func(c *Config) { c.IssuerURL = "http://idp.example.com" },
		"no resource":              func(c *Config) { c.ResourceURL = "" },
		"resource on another path": func(c *Config) { c.ResourceURL = "https://sandbar.example.com/mcp" },
		"OAuth on /mcp":            func(c *Config) { c.Path, c.ResourceURL = "/mcp", "https://sandbar.example.com/mcp" },
		"OAuth on /mcp/sse":        func(c *Config) { c.Path, c.ResourceURL = "/mcp/sse", "https://sandbar.example.com/mcp/sse" },
		"alg none":                 func(c *Config) { c.SigningAlgs = []string{"none"} },
		"HMAC":                     func(c *Config) { c.SigningAlgs = []string{"HS256"} },
		"system: prefix":           func(c *Config) { c.UsernamePrefix = "system:" },
		"host with a port":         func(c *Config) { c.Host, c.ResourceURL = "mcp.example.com:443", "https://mcp.example.com/mcp" },
		"unknown client":           func(c *Config) { c.Clients = []string{"claude-ai", "netscape"} },
	} {
		c := ok
		edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestOAuthUsersComeWithTheHostedConnectorsToolLimit(t *testing.T) {
	o, err := NewAuthenticator(Config{IssuerURL: "https://idp.example.com", ResourceURL: "https://sandbar.example.com/oauth/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if limit, client := tool.ToolLimit(o.account("oidc:alice", nil), "", 40); limit != 256 || client != "claude.ai, as the account declares" {
		t.Errorf("an OAuth user's tool limit is %d (%s), want claude.ai's 256", limit, client)
	}
	o, err = NewAuthenticator(Config{IssuerURL: "https://idp.example.com", ResourceURL: "https://sandbar.example.com/oauth/mcp",
		Clients: []string{"claude-ai", "vscode"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if limit, client := tool.ToolLimit(o.account("oidc:alice", nil), "", 40); limit != 128 || client != "VS Code, as the account declares" {
		t.Errorf("with vscode declared, the limit is %d (%s), want 128 (vscode)", limit, client)
	}
}

// The mapping of a person's claims is the one RBAC decides on: a user and groups
// with the configured prefixes, never a system: name, an address only once
// verified.
func TestClaimsMapToAKubernetesUserAndGroups(t *testing.T) {
	prefixed := Config{}.Mapping()
	bare := Mapping{UsernameClaim: "email", UsernamePrefix: NoPrefix, GroupsClaim: "groups", GroupsPrefix: NoPrefix}
	many := make([]any, maxGroups+1)
	for i := range many {
		many[i] = "g" + strings.Repeat("x", i)
	}
	for _, tc := range []struct {
		name   string
		m      Mapping
		claims map[string]any
		user   string
		groups string
		err    string
	}{
		{"sub and groups", prefixed, map[string]any{"sub": "alice", "groups": []any{"dev", "ops", "dev", ""}}, "oidc:alice", "oidc:dev oidc:ops", ""},
		{"one group as a string", prefixed, map[string]any{"sub": "alice", "groups": "dev"}, "oidc:alice", "oidc:dev", ""},
		{"an upstream group named system:masters, prefixed", prefixed, map[string]any{"sub": "mallory", "groups": []any{"system:masters"}}, "oidc:mallory", "oidc:system:masters", ""},
		{"an upstream group named system:masters, unprefixed", bare, map[string]any{"email": "m@example.com", "email_verified": true, "groups": []any{"system:masters"}}, "", "", "maps to a system: user or group"},
		{"a system: user, unprefixed", bare, map[string]any{"email": "system:admin", "email_verified": true}, "", "", "maps to a system: user or group"},
		{"an unverified address", bare, map[string]any{"email": "alice@example.com", "email_verified": false}, "", "", "not verified"},
		{"an address without email_verified", bare, map[string]any{"email": "alice@example.com"}, "", "", "not verified"},
		{"a verified address", bare, map[string]any{"email": "alice@example.com", "email_verified": true}, "alice@example.com", "", ""},
		{"no user claim", prefixed, map[string]any{"groups": []any{"dev"}}, "", "", `no string claim "sub"`},
		{"too many groups", prefixed, map[string]any{"sub": "alice", "groups": many}, "", "", "more than 200"},
	} {
		user, groups, err := tc.m.Map(tc.claims)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case user != tc.user || strings.Join(groups, " ") != tc.groups:
			t.Errorf("%s: %q %q, want %q %q", tc.name, user, groups, tc.user, tc.groups)
		}
	}
}
