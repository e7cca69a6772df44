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

import "testing"

// Only names this package gives reach the API server: a code, a refresh token or
// a client id a client sends is refused before any read unless it is one.
func TestIsName(t *testing.T) {
	for name, want := range map[string]bool{
		grantPrefix + "0123456789abcdef0123456789abcdef":        true,
		grantPrefix + "0123456789ABCDEF0123456789abcdef":        false,
		grantPrefix + "0123456789abcdef0123456789abcde":         false,
		grantPrefix + "0123456789abcdef0123456789abcdef0":       false,
		grantPrefix + "../../namespaces/kube-system/secrets/ab": false,
		grantPrefix + "0123456789abcdef/123456789abcdef":        false,
		clientPrefix + "0123456789abcdef0123456789abcdef":       false,
		"sandbar-oauth-keys":                                    false,
		"":                                                      false,
	} {
		if got := isName(grantPrefix, name); got != want {
			t.Errorf("isName(%q) = %v, want %v", name, got, want)
		}
	}
	if !IsRegistered(clientPrefix+"0123456789abcdef0123456789abcdef") || IsRegistered(clientPrefix+"x") {
		t.Error("IsRegistered takes a registered client's id only")
	}
}
