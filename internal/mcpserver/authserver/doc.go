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

// Package authserver holds parts of an OAuth authorization server for hosted MCP
// clients, which name themselves by the URL of a client ID metadata document
// (CIMD) rather than by a registration. The manager does not serve it yet.
//
// ClientDocuments fetches, checks and keeps those documents, within bounds no
// client id can move: public addresses only unless an admin allows a range, no
// redirects, no proxy, a size, a time and a rate limit, one fetch for many
// requests. What it refuses it refuses with a reason a client's developer can
// act on (DocumentError), which an authorization endpoint answers as
// invalid_client.
//
// KeyRing and KeyStore are the keys its access tokens are signed with, kept in
// one Secret that every replica reads and any may rotate. ServeConsent is the
// page that asks a person before a client gets a token for them.
package authserver
