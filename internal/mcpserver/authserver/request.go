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
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// authRequest is an authorization request between its steps. It is held by
// nobody: its id is the request itself, sealed, so any replica takes any step
// (the /authorize that began it, the login's return, the consent, the code).
type authRequest struct {
	ClientID     string   `json:"client"`
	RedirectURI  string   `json:"redirect"`
	State        string   `json:"state,omitempty"`
	Nonce        string   `json:"nonce,omitempty"`
	Scopes       []string `json:"scopes"`
	ResponseMode string   `json:"mode,omitempty"`
	Challenge    string   `json:"challenge"`
	Resource     string   `json:"resource"`
	Refreshable  bool     `json:"refreshable,omitempty"`
	// User and Groups are set once the person has logged in at the upstream
	// provider, AuthTime when they did; Consented once they allowed the client.
	User      string    `json:"user,omitempty"`
	Groups    []string  `json:"groups,omitempty"`
	AuthTime  time.Time `json:"authTime,omitzero"`
	Consented bool      `json:"consented,omitempty"`
	// Upstream is the upstream provider's refresh token, sealed: with it every
	// refresh asks the provider whether the person's session still holds.
	Upstream string `json:"upstream,omitempty"`

	// id is the sealed request; grant the grant of its code, once redeemed (not sealed).
	id    string
	grant *grant
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                      { return a.id }
func (a *authRequest) GetACR() string                     { return "" }
func (a *authRequest) GetAMR() []string                   { return nil }
func (a *authRequest) GetAudience() []string              { return []string{a.Resource} }
func (a *authRequest) GetAuthTime() time.Time             { return a.AuthTime }
func (a *authRequest) GetClientID() string                { return a.ClientID }
func (a *authRequest) GetNonce() string                   { return a.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseTypeCode }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return oidc.ResponseMode(a.ResponseMode) }
func (a *authRequest) GetState() string                   { return a.State }
func (a *authRequest) GetSubject() string                 { return a.User }
func (a *authRequest) Done() bool                         { return a.Consented && a.User != "" }

// GetScopes are the scopes asked for, and offline_access when the client may
// refresh (the library issues refresh tokens only for it).
func (a *authRequest) GetScopes() []string {
	if a.Refreshable {
		return append(a.Scopes[:len(a.Scopes):len(a.Scopes)], oidc.ScopeOfflineAccess)
	}
	return a.Scopes
}

func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.Challenge, Method: oidc.CodeChallengeMethodS256}
}

// refreshRequest is a grant being refreshed.
type refreshRequest struct {
	g      *grant
	scopes []string
}

var _ op.RefreshTokenRequest = (*refreshRequest)(nil)

func (r *refreshRequest) GetAMR() []string            { return nil }
func (r *refreshRequest) GetAudience() []string       { return []string{r.g.Data.Resource} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.g.Data.AuthTime }
func (r *refreshRequest) GetClientID() string         { return r.g.Data.ClientID }
func (r *refreshRequest) GetScopes() []string         { return r.scopes }
func (r *refreshRequest) GetSubject() string          { return r.g.Data.User }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.scopes = s }
