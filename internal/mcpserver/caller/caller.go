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

// Package caller is who a request acts for, as authentication hands it on to the rest
// of the server: the account, in the go-sdk's token info and in a context, and for an
// API key, the key Secret it was checked against. It checks nothing: package keys
// authenticates API keys, package oauth OAuth access tokens, package authorize decides
// what the account may do, and package sessions what it may hold open.
package caller

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// The keys of the token info's Extra: the account, and the key Secret.
const (
	accountExtra = "account"
	keyExtra     = "sandbar.dev/key"
)

// Key is the key Secret a request was authenticated against: its name and the
// resource version read then. The session registry records it (package sessions), so
// that it need not read the account and its Secret again for every request.
type Key struct{ Name, ResourceVersion string }

// TokenInfo is the token info of an account's requests: userID (the SDK binds a
// session to it), the account, and the key Secret they were authenticated against
// (none when key has no name).
func TokenInfo(userID string, acct *catalog.Account, key Key) *auth.TokenInfo {
	extra := map[string]any{accountExtra: acct}
	if key.Name != "" {
		extra[keyExtra] = key
	}
	return &auth.TokenInfo{UserID: userID, Extra: extra}
}

// KeyOf is the key Secret of a request's token info; false when it holds none (an
// OAuth person's, no-auth mode).
func KeyOf(info *auth.TokenInfo) (Key, bool) {
	key, ok := info.Extra[keyExtra].(Key)
	return key, ok
}

// Of is the authenticated account of a request.
func Of(extra *mcp.RequestExtra) *catalog.Account {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	a, _ := extra.TokenInfo.Extra[accountExtra].(*catalog.Account)
	return a
}

type accountKey struct{}

// WithAccount carries an account in a context.
func WithAccount(ctx context.Context, acct *catalog.Account) context.Context {
	return context.WithValue(ctx, accountKey{}, acct)
}

// FromContext is the account WithAccount put in a context.
func FromContext(ctx context.Context) *catalog.Account {
	a, _ := ctx.Value(accountKey{}).(*catalog.Account)
	return a
}
