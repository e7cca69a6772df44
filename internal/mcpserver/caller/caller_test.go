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

package caller

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// What authentication hands on is what the rest of the server reads: the account of
// a request, its key Secret for an API key, none for an OAuth person.
func TestTheAccountAndKeyHandedOnAreTheOnesRead(t *testing.T) {
	acct := &catalog.Account{Namespace: "team", Name: "agent"}
	info := TokenInfo("team/agent", acct, Key{Name: "agent-key", ResourceVersion: "7"})
	if got := Of(&mcp.RequestExtra{TokenInfo: info}); got != acct {
		t.Errorf("Of = %v, want the account handed on", got)
	}
	if key, ok := KeyOf(info); !ok || key != (Key{Name: "agent-key", ResourceVersion: "7"}) {
		t.Errorf("KeyOf = %+v, %v", key, ok)
	}
	if info.UserID != "team/agent" {
		t.Errorf("UserID = %q: the SDK binds a session to it", info.UserID)
	}

	person := TokenInfo("oidc:ada", &catalog.Account{Name: "oauth-ada", User: "oidc:ada"}, Key{})
	if _, ok := KeyOf(person); ok {
		t.Error("an OAuth person's token info names a key Secret")
	}
	if Of(nil) != nil || Of(&mcp.RequestExtra{}) != nil {
		t.Error("a request without token info has an account")
	}

	ctx := WithAccount(context.Background(), acct)
	if FromContext(ctx) != acct || FromContext(context.Background()) != nil {
		t.Error("the account in a context is not the one put there")
	}
}
