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
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/access"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
)

const mimeJSON = "application/json"

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
	guard *access.Guard
	// sessions tell the account of a session that a notification is for.
	sessions  *access.Sessions
	informers cache.Informers
	// reader lists instances' metadata from the API server, for resources/list (in
	// chunks, kept for the walk that listed them) and completion.
	reader client.Reader
	chunks chunks
	// promptWorkflow names the workflow of a served prompt, for completion.
	promptWorkflow func(prompt string) string
	// tokens seal the cursors of resources/list.
	tokens *seal.Sealer

	mu            sync.Mutex
	metaResources map[string]*mcp.Resource
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
func New(server *mcp.Server, store *catalog.Store, ids *identity.Identities, guard *access.Guard, sessions *access.Sessions,
	informers cache.Informers, reader client.Reader, promptWorkflow func(string) string, tokens *seal.Sealer) *Service {
	return &Service{mcp: server, store: store, ids: ids, guard: guard, sessions: sessions, informers: informers, reader: reader,
		promptWorkflow: promptWorkflow, tokens: tokens, metaResources: map[string]*mcp.Resource{}, templates: map[string]string{},
		watches: map[string]*instanceWatch{}, subs: map[*mcp.ServerSession]map[string]string{}}
}

// Sync keeps the served resources and templates equal to what a snapshot
// asks for: every metamodel object and a template per concrete class. Instances are
// listed when a client asks (resources/list), and watched while subscribed to.
func (s *Service) Sync(ctx context.Context, snap *catalog.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()

	meta := map[string]*mcp.Resource{}
	for _, n := range snap.ClassNames() {
		c := snap.Classes[n]
		meta[MetaURI(MetaClass, n)] = &mcp.Resource{URI: MetaURI(MetaClass, n), Name: n, Title: "Class " + c.Ident(),
			Description: c.Description, MIMEType: mimeJSON}
	}
	for n, p := range snap.Properties {
		meta[MetaURI(MetaProperty, n)] = &mcp.Resource{URI: MetaURI(MetaProperty, n), Name: n, Title: "Property " + n,
			Description: p.Slot.Description, MIMEType: mimeJSON}
	}
	for _, n := range snap.WorkflowNames() {
		w := snap.Workflows[n]
		meta[MetaURI(MetaWorkflow, n)] = &mcp.Resource{URI: MetaURI(MetaWorkflow, n), Name: n, Title: "Workflow " + n,
			Description: w.Spec.Description, MIMEType: mimeJSON}
	}
	for uri, r := range meta {
		if old, ok := s.metaResources[uri]; ok && old.Description == r.Description && old.Title == r.Title {
			continue
		}
		s.mcp.AddResource(r, s.readMeta)
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

// startInformer follows a class's instances for w's subscribers; s.mu is held.
func (s *Service) startInformer(ctx context.Context, c *catalog.Class, w *instanceWatch) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(c.GVK())
	inf, err := s.informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	prefix, kind := c.Prefix, c.Kind
	uriOf := func(o any) (string, bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, ok := o.(client.Object)
		if !ok {
			return "", false
		}
		return InstanceURI(prefix, kind, m.GetNamespace(), m.GetName()), true
	}
	handle, err := inf.AddEventHandler(contain.Handler("informer", toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, o any) {
			uri, ok := uriOf(o)
			if !ok || old.(client.Object).GetResourceVersion() == o.(client.Object).GetResourceVersion() {
				return
			}
			_ = s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		},
		DeleteFunc: func(o any) {
			if uri, ok := uriOf(o); ok {
				_ = s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
			}
		},
	}))
	if err != nil {
		_ = s.informers.RemoveInformer(context.Background(), obj)
		return err
	}
	w.class, w.obj, w.inf, w.handle = c.Ident(), obj, inf, handle
	watchStarted(w.class)
	return nil
}

// stopInformer ends the watch of w's class; s.mu is held.
func (s *Service) stopInformer(w *instanceWatch) {
	_ = w.inf.RemoveEventHandler(w.handle)
	_ = s.informers.RemoveInformer(context.Background(), w.obj)
	w.obj, w.inf, w.handle = nil, nil, nil
	watchStopped(w.class)
}

// syncWait bounds how long a subscription waits for the first listing of its
// class's watch, after which changes are told.
const syncWait = 30 * time.Second

// hold records that ss subscribes to the instance at uri, of class c, and watches the
// class if it is the first subscription to it. It returns once the watch has listed
// the class, so a change made after the subscription's answer is told.
func (s *Service) hold(ctx context.Context, ss *mcp.ServerSession, uri string, c *catalog.Class) error {
	ident := c.Ident()
	s.mu.Lock()
	uris, known := s.subs[ss]
	if _, ok := uris[uri]; ok {
		s.mu.Unlock()
		return nil
	}
	w := s.watches[ident]
	if w == nil {
		w = &instanceWatch{}
	}
	if w.obj == nil {
		if err := s.startInformer(ctx, c, w); err != nil {
			s.mu.Unlock()
			return access.RPCError(err)
		}
	}
	s.watches[ident] = w
	w.refs++
	if !known {
		uris = map[string]string{}
		s.subs[ss] = uris
	}
	uris[uri] = ident
	handle := w.handle
	s.mu.Unlock()
	if !known {
		// The SDK forgets a closed session's subscriptions; so does the service.
		contain.Go("subscriptions-end", func() {
			_ = ss.Wait()
			s.dropSession(ss)
		})
	}
	wctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	if !toolscache.WaitForCacheSync(wctx.Done(), handle.HasSynced) {
		s.release(ss, uri)
		return fmt.Errorf("subscribing to %s: the instances of %s could not be listed in %s; try again", uri, ident, syncWait)
	}
	return nil
}

// release forgets ss's subscription to uri, and stops watching its class after the
// last one.
func (s *Service) release(ss *mcp.ServerSession, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(ss, uri)
}

func (s *Service) releaseLocked(ss *mcp.ServerSession, uri string) {
	ident, ok := s.subs[ss][uri]
	if !ok {
		return
	}
	delete(s.subs[ss], uri)
	if len(s.subs[ss]) == 0 {
		delete(s.subs, ss)
	}
	w := s.watches[ident]
	if w == nil {
		return
	}
	if w.refs--; w.refs > 0 {
		return
	}
	if w.obj != nil {
		s.stopInformer(w)
	}
	delete(s.watches, ident)
}

// dropSession forgets every subscription of a closed session.
func (s *Service) dropSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uri := range s.subs[ss] {
		s.releaseLocked(ss, uri)
	}
}

// invalidURI is -32602 for a URI that is not one of Sandbar's, with the URI in the
// error's data, as a resource that is not found has it.
func invalidURI(uri string, err error) error {
	data, merr := json.Marshal(map[string]string{"uri": uri})
	if merr != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error(), Data: data}
}

// parseForCaller is -32602 for a malformed URI and -32002 (not found) for anything the
// caller may not see, so that other namespaces do not show through.
func parseForCaller(uri string, acct *catalog.Account) (ResourceRef, error) {
	ref, err := ParseURI(uri)
	if err != nil {
		return ref, invalidURI(uri, err)
	}
	if ref.IsInstance() && !access.NamespaceAllowed(acct, ref.Namespace) {
		return ref, mcp.ResourceNotFoundError(uri)
	}
	return ref, nil
}

func (s *Service) readInstance(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	acct := access.AccountOf(req.GetExtra())
	ref, err := parseForCaller(uri, acct)
	if err != nil {
		return nil, err
	}
	if !s.guard.May(acct, access.InstancesVerb) {
		return nil, s.guard.Refusal("reading instances", access.InstancesVerb)
	}
	cl := s.store.Load().FindClass(ref.Prefix + "/" + ref.Kind)
	if cl == nil || !cl.Servable() {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	kc, err := s.ids.Client(acct)
	if err != nil {
		return nil, access.RPCError(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, access.RPCError(err)
	}
	view := verbs.EntityView(cl, u)
	format := cl.Codec.Format
	if ref.Format != "" {
		format = metav1alpha1.CodecFormat(ref.Format)
	}
	if format == metav1alpha1.CodecMarkdown {
		md, err := codec.EncodeMarkdown(cl, u.GetName(), view["attributes"].(map[string]any))
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: codec.MIMEType(format), Text: md}}}, nil
	}
	return jsonContents(uri, view)
}

func (s *Service) readMeta(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	acct := access.AccountOf(req.GetExtra())
	ref, err := parseForCaller(uri, acct)
	if err != nil {
		return nil, err
	}
	if !s.guard.May(acct, access.MetamodelVerb) {
		return nil, s.guard.Refusal("reading the metamodel", access.MetamodelVerb)
	}
	snap := s.store.Load()
	var v any
	switch ref.MetaKind {
	case MetaClass:
		if cl, ok := snap.Classes[ref.Name]; ok {
			v = verbs.ClassView(snap, cl)
		}
	case MetaProperty:
		if p, ok := snap.Properties[ref.Name]; ok {
			v = verbs.PropertyView(p)
		}
	case MetaWorkflow:
		if w, ok := snap.Workflows[ref.Name]; ok {
			v = verbs.WorkflowView(w)
		}
	}
	if v == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return jsonContents(uri, v)
}

func jsonContents(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mimeJSON, Text: string(b)}}}, nil
}

// Subscribe accepts subscriptions to resources the caller may read. A subscription
// to an instance watches its class (if no other subscription does) before it is
// answered.
func (s *Service) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	acct := access.AccountOf(req.GetExtra())
	if acct == nil {
		// subscriptions/listen (the stateless revision) subscribes without the
		// request's token info; its session knows the account.
		acct = s.sessions.Account(req.Session)
	}
	uri := req.Params.URI
	if err := s.mayFollow(ctx, acct, uri); err != nil {
		return err
	}
	ref, _ := ParseURI(uri)
	if !ref.IsInstance() || req.Session == nil {
		return nil
	}
	cl := s.store.Load().FindClass(ref.Prefix + "/" + ref.Kind)
	if cl == nil || !cl.Servable() {
		// Nothing to watch yet; a read says the resource is not found.
		return nil
	}
	return s.hold(ctx, req.Session, uri, cl)
}

// Unsubscribe forgets a subscription, and stops watching a class that no session
// subscribes to any more.
func (s *Service) Unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Session != nil {
		s.release(req.Session, req.Params.URI)
	}
	return nil
}

// Updates is a sending middleware: notifications/resources/updated reaches a session
// only while its account, as the newest catalog has it, may still read the resource.
// An account that loses a namespace, the tool that reads instances or its Kubernetes
// grant stops hearing of that namespace's changes on streams it opened before.
func (s *Service) Updates(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "notifications/resources/updated" {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		acct := s.sessions.Account(ss)
		if acct == nil || s.mayFollow(ctx, acct, req.GetParams().(*mcp.ResourceUpdatedNotificationParams).URI) != nil {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// mayFollow is nil when acct may read, and so follow, the resource at uri.
func (s *Service) mayFollow(ctx context.Context, acct *catalog.Account, uri string) error {
	ref, err := parseForCaller(uri, acct)
	switch {
	case err != nil:
		return err
	case !ref.IsInstance():
		if !s.guard.May(acct, access.MetamodelVerb) {
			return s.guard.Refusal("subscribing to the metamodel", access.MetamodelVerb)
		}
		return nil
	case !s.guard.May(acct, access.InstancesVerb):
		return s.guard.Refusal("subscribing to instances", access.InstancesVerb)
	}
	if cl := s.store.Load().FindClass(ref.Prefix + "/" + ref.Kind); cl != nil && cl.InstanceAPI != nil {
		return followError(s.mayGet(ctx, acct, cl, ref.Namespace, ref.Name))
	}
	return nil
}

// followError is the protocol's error for a refused subscription: the API server's
// Forbidden as -32600, and a request out of reviews as -32602 (fewer URIs at once).
func followError(err error) error {
	if identity.TooManyReviews(err) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return access.RPCError(err)
}

// mayGet is nil when the caller's identity may get the instance ns/name of cl: asked
// of the class at the cluster scope first for an account that may use every
// namespace, then in the namespace, and only then of the instance by name (a grant by
// resourceNames). Each answer is kept a few seconds, so the URIs of one class and
// namespace cost one review however many they are, and those of one class one review
// for an identity that may get it cluster-wide.
func (s *Service) mayGet(ctx context.Context, acct *catalog.Account, cl *catalog.Class, ns, name string) error {
	if slices.Contains(access.Namespaces(acct), "*") {
		if err := s.may(ctx, acct, "get", cl, "", ""); err == nil || !apierrors.IsForbidden(err) {
			return err
		}
	}
	if err := s.may(ctx, acct, "get", cl, ns, ""); err == nil || !apierrors.IsForbidden(err) {
		return err
	}
	return s.may(ctx, acct, "get", cl, ns, name)
}

// may asks whether the caller's Kubernetes identity may do verb on the instances of
// a class in a namespace.
func (s *Service) may(ctx context.Context, acct *catalog.Account, verb string, cl *catalog.Class, ns, name string) error {
	return s.ids.Can(ctx, acct, identity.Access{Verb: verb, Group: cl.InstanceAPI.Group, Resource: cl.InstanceAPI.Plural, Namespace: ns, Name: name})
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

// listKind is the kind of resources/list's cursor.
const listKind = "resources-list"

// cursorScope binds a cursor of resources/list to the account that listed.
func cursorScope(acct *catalog.Account) string {
	if acct == nil {
		return seal.Scope()
	}
	return seal.Scope(acct.Namespace, acct.Name, acct.User)
}

func (s *Service) encode(acct *catalog.Account, c listCursor) string {
	return s.tokens.Seal(listKind, cursorScope(acct), c)
}

// decodeCursor opens a cursor of resources/list that the server sealed for acct.
func (s *Service) decodeCursor(acct *catalog.Account, cursor string) (listCursor, error) {
	if cursor == "" {
		empty := ""
		return listCursor{Meta: &empty}, nil
	}
	var c listCursor
	if err := s.tokens.Open(listKind, cursorScope(acct), cursor, &c); err != nil || (c.Meta == nil && c.Class == "") {
		return c, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "invalid cursor: pass the nextCursor of the previous page, or none to start again"}
	}
	return c, nil
}

func (s *Service) list(ctx context.Context, next mcp.MethodHandler, req *mcp.ListResourcesRequest) (mcp.Result, error) {
	var params mcp.ListResourcesParams
	if req.Params != nil {
		params = *req.Params
	}
	acct := access.AccountOf(req.GetExtra())
	cur, err := s.decodeCursor(acct, params.Cursor)
	if err != nil {
		return nil, err
	}
	// The SDK's answer carries the metamodel's page and what every answer has (its
	// cache hints); on a page of instances only the latter is kept.
	sdkParams := params
	sdkParams.Cursor = ""
	if cur.Meta != nil {
		sdkParams.Cursor = *cur.Meta
	}
	res, err := next(ctx, "resources/list", &mcp.ListResourcesRequest{Session: req.Session, Params: &sdkParams, Extra: req.Extra})
	if err != nil {
		return res, err
	}
	sdk := res.(*mcp.ListResourcesResult)
	out := *sdk
	out.Resources, out.NextCursor = []*mcp.Resource{}, ""
	if cur.Meta != nil {
		out.Resources = s.metaOf(acct, sdk)
		if sdk.NextCursor != "" {
			out.NextCursor = s.encode(acct, listCursor{Meta: &sdk.NextCursor})
			return &out, nil
		}
		cur = listCursor{}
	}
	items, nextCur, err := s.listInstances(ctx, acct, cur)
	if err != nil {
		return nil, err
	}
	out.Resources = append(out.Resources, items...)
	if nextCur != nil {
		out.NextCursor = s.encode(acct, *nextCur)
	}
	return &out, nil
}

// metaOf are the metamodel objects of the SDK's page, if the caller may read the
// metamodel.
func (s *Service) metaOf(acct *catalog.Account, res *mcp.ListResourcesResult) []*mcp.Resource {
	out := []*mcp.Resource{}
	if !s.guard.May(acct, access.MetamodelVerb) {
		return out
	}
	for _, r := range res.Resources {
		if ref, err := ParseURI(r.URI); err == nil && !ref.IsInstance() {
			out = append(out, r)
		}
	}
	return out
}

// Complete offers values for the arguments of resource templates (namespace, name)
// and prompts (class, the subject instance, namespace), limited to what the caller may use:
// instance names only to an account that may read them as resources/list lists them
// (its tool permissions allow entity.find, the namespace is one of its own, and its
// Kubernetes identity may list the class there).
func (s *Service) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	acct := access.AccountOf(req.GetExtra())
	p := req.Params
	snap := s.store.Load()
	var values []string
	nsOf := func() string {
		if p.Context != nil && p.Context.Arguments["namespace"] != "" {
			return p.Context.Arguments["namespace"]
		}
		if acct != nil {
			return acct.Namespace
		}
		return ""
	}
	instancesOf := func(ident string) []string {
		cl := snap.FindClass(ident)
		if cl == nil || cl.InstanceAPI == nil || !s.guard.May(acct, access.InstancesVerb) || !access.NamespaceAllowed(acct, nsOf()) ||
			s.may(ctx, acct, "list", cl, nsOf(), "") != nil {
			return nil
		}
		return s.names(ctx, cl, nsOf(), p.Argument.Value)
	}
	switch {
	case p.Argument.Name == "namespace":
		values = access.Namespaces(acct)
	case p.Argument.Name == "class":
		values = classIdents(snap)
	case p.Ref != nil && p.Ref.Type == "ref/resource" && p.Argument.Name == "name":
		if rest, ok := strings.CutPrefix(p.Ref.URI, uriBase); ok {
			parts := strings.Split(rest, "/")
			if len(parts) >= 2 {
				values = instancesOf(parts[0] + "/" + parts[1])
			}
		}
	case p.Ref != nil && p.Ref.Type == "ref/prompt":
		workflow := s.promptWorkflow(p.Ref.Name)
		if w, ok := snap.Workflows[workflow]; ok && w.Spec.SubjectClass != "" {
			if cl, ok := snap.Classes[w.Spec.SubjectClass]; ok {
				values = instancesOf(cl.Ident())
			}
		}
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, p.Argument.Value) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	total := len(out)
	if len(out) > 100 {
		out = out[:100]
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: append([]string{}, out...), Total: total, HasMore: total > len(out)}}, nil
}

func classIdents(snap *catalog.Snapshot) []string {
	var out []string
	for _, name := range snap.ClassNames() {
		out = append(out, snap.Classes[name].Ident())
	}
	return out
}

// completionScan bounds how many instances a completion looks through.
const completionScan = 10000

// names are the names of a class's instances in a namespace that start with prefix,
// listed from the API server (metadata only, a page at a time).
func (s *Service) names(ctx context.Context, cl *catalog.Class, ns, prefix string) []string {
	var out []string
	token := ""
	for scanned := 0; scanned < completionScan; {
		page := &metav1.PartialObjectMetadataList{}
		page.SetGroupVersionKind(cl.GVK().GroupVersion().WithKind(cl.GVK().Kind + "List"))
		if err := s.reader.List(ctx, page, client.InNamespace(ns), client.Limit(instancePage), client.Continue(token)); err != nil {
			return out
		}
		for _, m := range page.Items {
			if strings.HasPrefix(m.Name, prefix) {
				out = append(out, m.Name)
			}
		}
		scanned += len(page.Items)
		if token = page.Continue; token == "" {
			break
		}
	}
	return out
}
