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
	"strings"
	"testing"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// The identity providers whose ID-JAGs the server takes are https URLs (or
// loopback ones), each named once (a second would write its status twice), and each
// but the upstream provider with a prefix of its own for the names it vouches for.
func TestTrustedIssuersAreChecked(t *testing.T) {
	base := Config{Issuer: "https://sandbar.example.com/oauth2", Namespace: "sandbar-system",
		Upstream: Upstream{IssuerURL: "https://idp.example.com", ClientID: "sandbar", ClientSecret: "s"},
		Mapping:  oauth.Mapping{UsernamePrefix: "oidc:", GroupsPrefix: "oidc:"}}
	for _, tc := range []struct {
		issuers []TrustedIssuer
		refused string
	}{
		{nil, ""},
		{[]TrustedIssuer{{Issuer: "https://idp.example.com/"}}, ""},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com", Prefix: "acme:"}, {Issuer: "http://127.0.0.1:8090", JWKSURL: "http://127.0.0.1:8090/keys", Prefix: "lab:"}}, ""},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com"}}, "prefix of its own"},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com", Prefix: "oidc:"}}, "prefix of its own"},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com", Prefix: oauth.NoPrefix}}, "prefix of its own"},
		{[]TrustedIssuer{{Issuer: "http://acme.okta.com", Prefix: "acme:"}}, "not an https URL"},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com", JWKSURL: "ftp://acme.okta.com/keys", Prefix: "acme:"}}, "not an https URL"},
		{[]TrustedIssuer{{Issuer: ""}}, "not an https URL"},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com", Prefix: "acme:"}, {Issuer: "https://acme.okta.com", Prefix: "acme2:"}}, "named twice"},
	} {
		c := base
		c.TrustedIssuers = tc.issuers
		err := c.Validate()
		if (tc.refused == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.refused)) {
			t.Errorf("%v: %v, want %q", tc.issuers, err, tc.refused)
		}
	}
}
