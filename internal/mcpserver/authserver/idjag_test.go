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
)

// The identity providers whose ID-JAGs the server takes are https URLs (or
// loopback ones), each named once: a second would write its status twice.
func TestTrustedIssuersAreChecked(t *testing.T) {
	base := Config{Issuer: "https://sandbar.example.com/oauth2", Namespace: "sandbar-system",
		Upstream: Upstream{IssuerURL: "https://idp.example.com", ClientID: "sandbar", ClientSecret: "s"}}
	for _, tc := range []struct {
		issuers []TrustedIssuer
		refused string
	}{
		{nil, ""},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com"}, {Issuer: "http://127.0.0.1:8090", JWKSURL: "http://127.0.0.1:8090/keys"}}, ""},
		{[]TrustedIssuer{{Issuer: "http://acme.okta.com"}}, "not an https URL"},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com", JWKSURL: "ftp://acme.okta.com/keys"}}, "not an https URL"},
		{[]TrustedIssuer{{Issuer: ""}}, "not an https URL"},
		{[]TrustedIssuer{{Issuer: "https://acme.okta.com"}, {Issuer: "https://acme.okta.com"}}, "named twice"},
	} {
		c := base
		c.TrustedIssuers = tc.issuers
		err := c.Validate()
		if (tc.refused == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.refused)) {
			t.Errorf("%v: %v, want %q", tc.issuers, err, tc.refused)
		}
	}
}
