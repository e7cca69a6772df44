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

// Package card is the MCP server card and the catalogs that point to it: the
// experimental Server Card extension (SEP-2127, its wire format kept in the
// extension's own repository, experimental-ext-server-card). A card says what a
// client needs before it connects: the server's name, version and title, its
// endpoints with their transports and protocol revisions, how a client
// authenticates, and the extensions the server declares. It lists no tools,
// resources or prompts (a client lists those once connected) and grants nothing:
// cards and catalogs are public documents, served without a token.
//
// The card is at <endpoint>/server-card, the location the extension reserves; the
// catalog is at /.well-known/ai-catalog.json (an AI Catalog, as the extension's
// discovery document now says) and at /.well-known/mcp/catalog.json (the MCP
// Catalog of its earlier drafts, which clients of those drafts fetch).
package card

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// What the extension names.
const (
	// SchemaURL is the card's $schema: the extension's v1 schema, the only one a
	// card may name.
	SchemaURL = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	// MediaType is a card's media type, and the type of a catalog entry that points
	// to one.
	MediaType = "application/mcp-server-card+json"
	// Suffix follows an endpoint's path: the card of /mcp is /mcp/server-card.
	Suffix = "/server-card"
	// AICatalogPath is the AI Catalog, of media type AICatalogType.
	AICatalogPath = "/.well-known/ai-catalog.json"
	AICatalogType = "application/ai-catalog+json"
	// MCPCatalogPath is the MCP Catalog of the extension's earlier drafts (plain JSON,
	// specVersion "draft").
	MCPCatalogPath = "/.well-known/mcp/catalog.json"
	// MetaKey is the card's _meta entry of what the extension has no field for:
	// that the card is experimental, how each endpoint authenticates, and the
	// extensions the server declares.
	MetaKey = "dev.sandbar/server-card"
)

// Who the server is, as its card and the chart's registry entry (server.json) say:
// its name in reverse-DNS form (namespace/name; serverInfo says "sandbar"), its
// display name (serverInfo's title), what it does (at most 100 characters) and where
// its source is.
const (
	Name          = "io.github.sandbar-dev/sandbar"
	Title         = "Sandbar"
	Description   = "A metamodel of Kubernetes custom resources: its classes, instances and workflows."
	RepositoryURL = "https://github.com/sandbar-dev/sandbar"
)

// Config is what the documents say.
type Config struct {
	// Version is the build's version.
	Version string
	// PublicURL is the origin clients reach the server at (https://host[:port], or
	// http; see ParsePublicURL). Empty: the documents are served only to a request
	// that came in at a loopback address, and name that address (make dev, a
	// port-forward); never the Host a request names.
	PublicURL string
	// Endpoint is the path of Streamable HTTP, serving Versions; LegacySSE the path of
	// the HTTP+SSE transport, serving the session-based revisions among them.
	Endpoint, LegacySSE string
	Versions            []string
	// Stateless is the first revision without sessions, which LegacySSE does not serve.
	Stateless string
	// Bearer is true when Endpoint and LegacySSE want a bearer token (false: the
	// no-auth mode, loopback only).
	Bearer bool
	// Extensions are the protocol extensions the server declares.
	Extensions []string
	// OAuth is the OAuth route (nil: none).
	OAuth *OAuth
}

// OAuth is the OAuth route: its public URL and the URL of its Protected Resource
// Metadata (RFC 9728).
type OAuth struct{ URL, MetadataURL string }

// Documents serves the card and the catalogs.
type Documents struct{ cfg Config }

// New checks the configuration.
func New(cfg Config) (*Documents, error) {
	if cfg.PublicURL != "" {
		origin, err := ParsePublicURL(cfg.PublicURL)
		if err != nil {
			return nil, err
		}
		cfg.PublicURL = origin
	}
	return &Documents{cfg: cfg}, nil
}

// ParsePublicURL reads the origin clients reach the server at: an https URL (or
// http, for an install without TLS, which the card then owns up to), with no path
// but "/", no query, fragment or user. It answers the origin, scheme://host[:port],
// in lower case.
func ParsePublicURL(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil, u.Host == "", u.User != nil, u.RawQuery != "", u.ForceQuery, u.Fragment != "",
		u.Path != "" && u.Path != "/", !validHost(u.Host):
		return "", fmt.Errorf("must be an origin such as https://sandbar.example.com (no path, query or fragment), not %q", s)
	case u.Scheme == "https", u.Scheme == "http":
		return strings.ToLower(u.Scheme + "://" + u.Host), nil
	}
	return "", fmt.Errorf("must be an https (or http) URL, not %q", s)
}

// errNoOrigin is the answer to a request off loopback when no public URL is set.
var errNoOrigin = errors.New("this server has no public URL set (--mcp-public-url; the chart sets it from mcp.publicURL " +
	"or the first Ingress host), so it serves its card and catalogs only on a loopback address: they never name the Host a request sends")

// origin is the origin the documents name for a request: the configured public
// URL (or on the OAuth host, the OAuth route's); without one, the loopback address
// the request came in at. Never the Host header: anyone sends one, and a document
// that named it would be kept by any shared cache (it is public) and handed to
// others.
func (d *Documents) origin(r *http.Request) (string, error) {
	if o := d.cfg.OAuth; o != nil {
		// On the OAuth host, /mcp is the OAuth route, which the configuration names.
		if u, err := url.Parse(o.URL); err == nil && u.Path == d.cfg.Endpoint && strings.EqualFold(r.Host, u.Host) {
			return strings.ToLower(u.Scheme + "://" + u.Host), nil
		}
	}
	if d.cfg.PublicURL != "" {
		return d.cfg.PublicURL, nil
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local == nil {
		return "", errNoOrigin
	}
	host, port, err := net.SplitHostPort(local.String())
	if err != nil || !loopback(host) {
		return "", errNoOrigin
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// validHost says whether s is host[:port] of a DNS name or an IP address, with
// nothing else a URL could carry.
func validHost(s string) bool {
	if s == "" || len(s) > 261 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") != "" {
		return false
	}
	u, err := url.Parse("http://" + s)
	if err != nil || u.Host != s || u.Hostname() == "" {
		return false
	}
	if p := u.Port(); p != "" {
		for _, c := range p {
			if c < '0' || c > '9' {
				return false
			}
		}
	} else if strings.HasSuffix(s, ":") {
		return false
	}
	return true
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
