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

// Package resources serves every instance and metamodel object as an MCP resource:
// lists, reads (in the class's codec or a chosen format), a template per concrete
// class, subscriptions with notifications/resources/updated driven by watches, and
// completion of template and prompt arguments. An account sees the instances of the
// namespaces it may use, and nothing else shows through.
package resources

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/apps"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sessions"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

const mimeJSON = "application/json"

// appMIME is an MCP Apps view's MIME type; appMeta what a view asks of its host: no
// origin for anything (the empty CSP lists none) and a border.
const appMIME = apps.MIMEType

var appMeta = mcp.Meta{"ui": map[string]any{"csp": map[string]any{}, "prefersBorder": true}}

// instanceWatch follows the instances of one class through a metadata-only informer
// (names and versions, not contents), to tell subscribers when one changes. A class
// is watched only while some session subscribes to one of its instances: a manager
// with a thousand classes and no subscribers holds no watch at all.
type instanceWatch struct {
	// refs counts the (session, URI) subscriptions to the class's instances.
	refs  int
	class string
	// obj names the informer; nil while none runs (the class is not served now).
	obj    *metav1.PartialObjectMetadata
	inf    cache.Informer
	handle toolscache.ResourceEventHandlerRegistration
}

// Service serves the resources of one SDK server.
type Service struct {
	mcp   *mcp.Server
	store *catalog.Store
	// ids read instances as the caller's Kubernetes identity, and ask whether it may
	// list what the server lists for it.
	ids *identity.Identities
	// guard applies the account's tool permissions: instances take entity.find,
	// metamodel objects schema.classes.
	guard *authorize.Guard
	// sessions tell the account of a session that a notification is for.
	sessions  *sessions.Registry
	informers cache.Informers
	// reader lists instances' metadata from the API server, for resources/list (in
	// chunks, kept for the walk that listed them) and completion.
	reader client.Reader
	chunks chunks
	// promptWorkflow names the workflow of a served prompt, for completion.
	promptWorkflow func(prompt string) string
	// tokens seal the cursors of resources/list.
	tokens *seal.Sealer
	// NameStyle spells the names of the tools a view calls; NoViews serves none.
	NameStyle tool.NameStyle
	NoViews   bool
	// Reads applies the call policies to the instances a request reads, lists or
	// completes (nil: none): a read of the instances of cl in ns (name: one of them).
	Reads func(ctx context.Context, req mcp.Request, method string, snap *catalog.Snapshot, cl *catalog.Class, ns, name string) error

	mu            sync.Mutex
	metaResources map[string]*mcp.Resource
	// apps are the class views (package apps) made for the classes of the snapshot
	// last synced; a class that changes is a new *catalog.Class, and its view is made
	// again.
	apps map[*catalog.Class][]byte
	// fits says of each class synced whether it has a view (apps.Fits).
	fits map[*catalog.Class]bool
	// board is the board made for the snapshot of version boardOf.
	board   []byte
	boardOf uint64
	// templates is the MIME type of each served class's template, by class ident.
	templates map[string]string
	// watches are the watched classes, by ident; subs the instance URIs each session
	// subscribes to, with their class.
	watches map[string]*instanceWatch
	subs    map[*mcp.ServerSession]map[string]string
}

// New makes the service; Sync serves what a snapshot asks for. The server's
// subscription and completion handlers are the service's Subscribe, Unsubscribe and
// Complete.
func New(server *mcp.Server, store *catalog.Store, ids *identity.Identities, guard *authorize.Guard, registry *sessions.Registry,
	informers cache.Informers, reader client.Reader, promptWorkflow func(string) string, tokens *seal.Sealer) *Service {
	return &Service{mcp: server, store: store, ids: ids, guard: guard, sessions: registry, informers: informers, reader: reader,
		promptWorkflow: promptWorkflow, tokens: tokens, metaResources: map[string]*mcp.Resource{}, apps: map[*catalog.Class][]byte{}, templates: map[string]string{},
		watches: map[string]*instanceWatch{}, subs: map[*mcp.ServerSession]map[string]string{}}
}

// Sync keeps the served resources and templates equal to what a snapshot
// asks for: every metamodel object and a template per concrete class. Instances are
// listed when a client asks (resources/list), and watched while subscribed to.
func (s *Service) Sync(ctx context.Context, snap *catalog.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()

	meta := map[string]*mcp.Resource{}
	add := func(kind, name, title, description string) {
		uri := MetaURI(kind, name)
		meta[uri] = &mcp.Resource{URI: uri, Name: name, Title: title, Description: description, MIMEType: mimeJSON}
	}
	for _, n := range snap.ClassNames() {
		add(MetaClass, n, "Class "+snap.Classes[n].Ident(), snap.Classes[n].Description)
	}
	for n, p := range snap.Properties {
		add(MetaProperty, n, "Property "+n, p.Slot.Description)
	}
	for _, n := range snap.WorkflowNames() {
		add(MetaWorkflow, n, "Workflow "+n, snap.Workflows[n].Spec.Description)
	}
	made, fit := map[*catalog.Class][]byte{}, map[*catalog.Class]bool{}
	for _, n := range snap.ClassNames() {
		c := snap.Classes[n]
		if s.NoViews || !c.Servable() {
			continue
		}
		fits, ok := s.fits[c]
		if !ok {
			fits = apps.Fits(snap, c)
		}
		fit[c] = fits
		if !fits { // too large for a view: it has none
			continue
		}
		uri := ResourceRef{App: AppClass, Prefix: c.Prefix, Kind: c.Kind}.String()
		meta[uri] = &mcp.Resource{URI: uri, Name: c.Ident() + " view", Title: c.Ident(),
			Description: "A form to create or edit a " + c.Ident() + " and a table of its instances, for clients that show MCP Apps.",
			MIMEType:    appMIME, Meta: appMeta}
		if v, ok := s.apps[c]; ok {
			made[c] = v
		}
	}
	s.apps, s.fits = made, fit
	if !s.NoViews && len(snap.Workflows) > 0 {
		meta[apps.BoardURI] = &mcp.Resource{URI: apps.BoardURI, Name: "workflows view", Title: "Workflows",
			Description: "A board of your processes of each workflow, in columns by state, for clients that show MCP Apps.",
			MIMEType:    appMIME, Meta: appMeta}
	}
	for uri, r := range meta {
		if old, ok := s.metaResources[uri]; ok && old.Description == r.Description && old.Title == r.Title {
			continue
		}
		read := s.readMeta
		if r.MIMEType == appMIME {
			read = s.readApp
		}
		s.mcp.AddResource(r, read)
	}
	var gone []string
	for uri := range s.metaResources {
		if _, ok := meta[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	s.metaResources = meta

	// One template per concrete class.
	want := map[string]*catalog.Class{}
	for _, n := range snap.ClassNames() {
		if c := snap.Classes[n]; c.Servable() {
			want[c.Ident()] = c
		}
	}
	for ident, c := range want {
		mime := codec.MIMEType(c.Codec.Format)
		if s.templates[ident] == mime {
			continue
		}
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: classTemplate(c.Prefix, c.Kind), Name: ident, Title: c.Ident() + " instances",
			Description: fmt.Sprintf("An instance of %s, by namespace and name; format (json or markdown) overrides the class's own.", c.Ident()),
			MIMEType:    mime,
		}, s.readInstance)
		s.templates[ident] = mime
	}
	for ident := range s.templates {
		if _, ok := want[ident]; !ok {
			prefix, kind, _ := strings.Cut(ident, "/")
			s.mcp.RemoveResourceTemplates(classTemplate(prefix, kind))
			delete(s.templates, ident)
		}
	}
	// A subscribed class that is no longer served stops being watched (its API may
	// be gone); one that is served again is watched again for its subscribers.
	for ident, w := range s.watches {
		c, ok := want[ident]
		switch {
		case !ok && w.obj != nil:
			s.stopInformer(w)
		case ok && w.obj == nil:
			if err := s.startInformer(ctx, c, w); err != nil {
				ctrl.LoggerFrom(ctx).WithName("mcp").Error(err, "watching instances", "class", ident)
			}
		}
	}
}

// classTemplate is the URI template of a class's instances.
func classTemplate(prefix, kind string) string {
	return uriBase + prefix + "/" + kind + "/{namespace}/{name}{?format}"
}

// Middleware answers resources/list with the metamodel objects the caller may read
// and, after them, the instances it may list (in namespaces it may use, and that its
// Kubernetes identity may list; see listInstances); and it answers a read of a
// malformed URI with -32602 (the SDK would say not found).
func (s *Service) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/read":
			uri := req.(*mcp.ReadResourceRequest).Params.URI
			if _, err := ParseURI(uri); err != nil {
				return nil, invalidURI(uri, err)
			}
		case "resources/list":
			return s.list(ctx, next, req.(*mcp.ListResourcesRequest))
		}
		return next(ctx, method, req)
	}
}
