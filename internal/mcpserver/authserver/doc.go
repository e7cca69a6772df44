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

// Package authserver is the OAuth authorization server the manager serves for
// the OAuth route when --oauth-authorization-server is on: zitadel/oidc's
// OpenID provider (authorize, token, revocation, keys) with a storage of this
// package's parts, for hosted MCP clients, which name themselves by the URL of a
// client ID metadata document (CIMD) rather than by a registration.
//
// ClientDocuments fetches, checks and keeps those documents, within bounds no
// client id can move: public addresses only unless an admin allows a range, no
// redirects, no proxy, a size, a time and a rate limit, one fetch for many
// requests. What it refuses it refuses with a reason a client's developer can
// act on (DocumentError), which the authorization endpoint answers as
// invalid_client. Registrations are the clients that registered (RFC 7591) when
// that is allowed.
//
// People log in at the upstream OpenID provider (zitadel/oidc's relying party);
// their identity maps to a Kubernetes user and groups as the OAuth route maps a
// token's (oauth.Mapping); ServeConsent asks them before a client gets a token.
// What passes through the browser between those steps is sealed with a key all
// replicas share (StateKey), so any replica takes any step. Grants keep what a
// person allowed, in Secrets, with hashes of the code and refresh token only.
// KeyRing and KeyStore are the keys its access tokens are signed with, kept in
// one Secret that every replica reads and any may rotate; Tokens is how the
// OAuth route checks those tokens. ReportStatus writes the AuthorizationServer
// object that says whether it works.
package authserver
