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

package card

import (
	"net/url"
	"strings"
)

// ServerCard is the card, as the extension's schema.ts declares it (the fields
// used here).
type ServerCard struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description"`
	Title       string         `json:"title,omitempty"`
	Repository  *Repository    `json:"repository,omitempty"`
	Remotes     []Remote       `json:"remotes"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// Repository is where the source is.
type Repository struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// Remote is an endpoint: its transport ("streamable-http" or "sse"), URL, the
// headers a client sends, and the protocol revisions it serves.
type Remote struct {
	Type                      string          `json:"type"`
	URL                       string          `json:"url"`
	Headers                   []KeyValueInput `json:"headers,omitempty"`
	SupportedProtocolVersions []string        `json:"supportedProtocolVersions,omitempty"`
}

// Input is a value a client asks its user for.
type Input struct {
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
}

// KeyValueInput is a header: its name, its value with {variables}, and what each
// variable is.
type KeyValueInput struct {
	Input
	Name      string           `json:"name"`
	Value     string           `json:"value,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Meta is what the card's _meta[MetaKey] says.
type Meta struct {
	// Experimental says that the card's shape may change with the extension.
	Experimental string `json:"experimental"`
	// Authentication says how each endpoint authenticates.
	Authentication Authentication `json:"authentication"`
	// Extensions are the extensions the server declares (server/discover's
	// capabilities.extensions), by identifier.
	Extensions map[string]struct{} `json:"extensions"`
}

// Authentication is how each endpoint authenticates: a bearer token (an account's
// API key) or an OAuth access token, whose Protected Resource Metadata names the
// authorization server.
type Authentication struct {
	Bearer *Bearer     `json:"bearer,omitempty"`
	OAuth  *OAuthRoute `json:"oauth,omitempty"`
	// None lists the endpoints that take no token (the no-auth mode, loopback only).
	None []string `json:"none,omitempty"`
}

// Bearer is the endpoints that take an account's API key as a bearer token.
type Bearer struct {
	Remotes     []string `json:"remotes"`
	TokenFormat string   `json:"tokenFormat"`
}

// OAuthRoute is the endpoints that take an OAuth access token.
type OAuthRoute struct {
	Remotes          []string `json:"remotes"`
	ResourceMetadata string   `json:"resourceMetadata"`
}

// tokenFormat is what an API key looks like in the Authorization header.
const tokenFormat = "<namespace>/<service>:<key>"

// experimental is the card's warning.
const experimental = "MCP Server Cards are an experimental extension (SEP-2127): this document's shape may change with it."

// Card is the card of a server reached at origin. Where /mcp at origin is the
// OAuth route (on the OAuth host), the card names that route alone: the endpoints
// of bearer tokens are on another host, which only a public URL names.
func (d *Documents) Card(origin string) ServerCard {
	c := d.cfg
	meta := Meta{Experimental: experimental, Extensions: map[string]struct{}{}}
	for _, e := range c.Extensions {
		meta.Extensions[e] = struct{}{}
	}
	var session []string
	for _, v := range c.Versions {
		if v < c.Stateless {
			session = append(session, v)
		}
	}
	var remotes []Remote
	if endpoint := origin + c.Endpoint; c.OAuth == nil || endpoint != c.OAuth.URL {
		remotes = d.keyed(&meta.Authentication, endpoint, origin+c.LegacySSE, session)
	}
	if o := c.OAuth; o != nil {
		remotes = append(remotes,
			Remote{Type: "streamable-http", URL: o.URL, SupportedProtocolVersions: c.Versions},
			Remote{Type: "sse", URL: o.URL + "/sse", SupportedProtocolVersions: session})
		meta.Authentication.OAuth = &OAuthRoute{Remotes: []string{o.URL, o.URL + "/sse"}, ResourceMetadata: o.MetadataURL}
	}
	return ServerCard{Schema: SchemaURL, Name: Name, Version: c.Version, Description: Description, Title: Title,
		Repository: &Repository{URL: RepositoryURL, Source: "github"}, Remotes: remotes, Meta: map[string]any{MetaKey: meta}}
}

// keyed are the endpoints of API keys (Streamable HTTP, and legacy SSE with the
// session-based revisions), each with the Authorization header it needs, or none in
// the no-auth mode; auth records which.
func (d *Documents) keyed(auth *Authentication, endpoint, legacy string, session []string) []Remote {
	var headers []KeyValueInput
	if d.cfg.Bearer {
		headers = []KeyValueInput{{
			Name: "Authorization", Value: "Bearer {token}",
			Input: Input{Description: "An API key of a Sandbar ServiceAccount, as a bearer token.", IsRequired: true, IsSecret: true},
			Variables: map[string]Input{"token": {Description: "The key, as " + tokenFormat + " (sandbar create-key prints it).",
				IsRequired: true, IsSecret: true, Placeholder: tokenFormat}},
		}}
		auth.Bearer = &Bearer{Remotes: []string{endpoint, legacy}, TokenFormat: tokenFormat}
	} else {
		auth.None = []string{endpoint, legacy}
	}
	return []Remote{
		{Type: "streamable-http", URL: endpoint, Headers: headers, SupportedProtocolVersions: d.cfg.Versions},
		{Type: "sse", URL: legacy, Headers: headers, SupportedProtocolVersions: session},
	}
}

// Catalog is a catalog of one entry, this server's card, in the format of an AI
// Catalog (specVersion "1.0") or of the earlier drafts' MCP Catalog ("draft").
type Catalog struct {
	SpecVersion string  `json:"specVersion"`
	Entries     []Entry `json:"entries"`
}

// Entry points to a card.
type Entry struct {
	Identifier string `json:"identifier"`
	Type       string `json:"type"`
	URL        string `json:"url"`
}

// catalog is the catalog of a server reached at origin.
func (d *Documents) catalog(origin, specVersion string) Catalog {
	return Catalog{SpecVersion: specVersion, Entries: []Entry{{
		Identifier: d.identifier(origin), Type: MediaType, URL: origin + d.cfg.Endpoint + Suffix,
	}}}
}

// identifier is the entry's domain-anchored name, urn:air:{publisher}:mcp:{name}:
// the publisher is the host the catalog is served for, the name the part of the
// card's name after its slash.
func (d *Documents) identifier(origin string) string {
	host := origin
	if u, err := url.Parse(origin); err == nil {
		host = u.Hostname()
	}
	_, name, _ := strings.Cut(Name, "/")
	return "urn:air:" + strings.ReplaceAll(host, ":", "-") + ":mcp:" + name
}
