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

package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/apps"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/card"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/edge"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/tasks"
	mcptransport "github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
)

// serveCards serves the server card (the experimental Server Card extension) at
// /mcp/server-card, and at the OAuth route's <path>/server-card with one, and the
// catalogs that point to it: public documents, outside the chain (no token, any
// origin), like the Protected Resource Metadata. The card names the endpoints at
// the configured public URL, or at the host a request came to without one.
func serveCards(e *edge.Edge, opts Options, route *card.OAuth) error {
	extensions := []string{tasks.Extension}
	if !opts.NoViews {
		extensions = append(extensions, apps.Extension)
	}
	docs, err := card.New(card.Config{
		Version: opts.Version, PublicURL: opts.PublicURL, Endpoint: endpointPath, LegacySSE: legacySSEPath,
		Versions: mcp.SupportedProtocolVersions(), Stateless: mcptransport.Stateless,
		Bearer: !opts.NoAuth, Extensions: extensions, OAuth: route,
	})
	if err != nil {
		return err
	}
	cards := docs.CardHandler()
	e.HandlePublic(endpointPath+card.Suffix, cards)
	if route != nil {
		e.HandlePublic(opts.OAuth.WithDefaults().Path+card.Suffix, cards)
	}
	e.HandlePublic(card.AICatalogPath, docs.AICatalogHandler())
	e.HandlePublic(card.MCPCatalogPath, docs.MCPCatalogHandler())
	return nil
}
