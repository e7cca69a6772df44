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
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/access"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
)

const mimeJSON = "application/json"

// instanceWatch follows the instances of one class through a metadata-only informer
// (names and versions, not contents), to list them as resources and to tell
// subscribers when one changes.
type instanceWatch struct {
	class   string // ident, prefix/Kind
	format  metav1alpha1.CodecFormat
	obj     *metav1.PartialObjectMetadata
	handle  toolscache.ResourceEventHandlerRegistration
	inf     cache.Informer
	uris    map[string]bool
	byNS    map[string]map[string]bool // namespace -> names, for completion
	stopped bool
}

// Service serves the resources of one SDK server.
type Service struct {
	mcp   *mcp.Server
	store *catalog.Store
	// ids read instances as the caller's Kubernetes identity, and ask whether it may
	// list what the watches hold.
	ids *identity.Identities
	// guard applies the account's tool permissions: instances take entity.find,
	// metamodel objects schema.classes.
	guard *access.Guard
	// sessions tell the account of a session that a notification is for.
	sessions  *access.Sessions
	informers cache.Informers
	// promptWorkflow names the workflow of a served prompt, for completion.
	promptWorkflow func(prompt string) string

	mu            sync.Mutex
	metaResources map[string]*mcp.Resource
	watches       map[string]*instanceWatch
}

// New makes the service; Sync serves what a snapshot asks for. The server's
// subscription and completion handlers are the service's Subscribe and Complete.
func New(server *mcp.Server, store *catalog.Store, ids *identity.Identities, guard *access.Guard, sessions *access.Sessions, informers cache.Informers, promptWorkflow func(string) string) *Service {
	return &Service{mcp: server, store: store, ids: ids, guard: guard, sessions: sessions, informers: informers, promptWorkflow: promptWorkflow,
		metaResources: map[string]*mcp.Resource{}, watches: map[string]*instanceWatch{}}
}

// Sync keeps the served resources and templates equal to what a snapshot
// asks for: every metamodel object, a template per concrete class, and (through the
// watches) every instance.
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

	// One template and one watch per concrete class.
	want := map[string]*catalog.Class{}
	for _, n := range snap.ClassNames() {
		if c := snap.Classes[n]; c.Servable() {
			want[c.Ident()] = c
		}
	}
	for ident, c := range want {
		tmpl := classTemplate(c.Prefix, c.Kind)
		if old, ok := s.watches[ident]; ok && old.format != c.Codec.Format {
			// The codec changed: serve the instances again with the new MIME type.
			s.stopWatch(ident, old)
		}
		if _, ok := s.watches[ident]; ok {
			continue
		}
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: tmpl, Name: ident, Title: c.Ident() + " instances",
			Description: fmt.Sprintf("An instance of %s, by namespace and name; format (json or markdown) overrides the class's own.", c.Ident()),
			MIMEType:    codec.MIMEType(c.Codec.Format),
		}, s.readInstance)
		w, err := s.watchInstances(ctx, c)
		if err != nil {
			ctrl.LoggerFrom(ctx).WithName("mcp").Error(err, "watching instances", "class", ident)
			continue
		}
		s.watches[ident] = w
	}
	for ident, w := range s.watches {
		if _, ok := want[ident]; !ok {
			s.stopWatch(ident, w)
		}
	}
}

// classTemplate is the URI template of a class's instances.
func classTemplate(prefix, kind string) string {
	return uriBase + prefix + "/" + kind + "/{namespace}/{name}{?format}"
}

// stopWatch stops following a class's instances and withdraws their resources.
func (s *Service) stopWatch(ident string, w *instanceWatch) {
	w.stopped = true
	_ = w.inf.RemoveEventHandler(w.handle)
	var uris []string
	for uri := range w.uris {
		uris = append(uris, uri)
	}
	if len(uris) > 0 {
		s.mcp.RemoveResources(uris...)
	}
	prefix, kind, _ := strings.Cut(ident, "/")
	s.mcp.RemoveResourceTemplates(classTemplate(prefix, kind))
	delete(s.watches, ident)
}

func (s *Service) watchInstances(ctx context.Context, c *catalog.Class) (*instanceWatch, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(c.GVK())
	inf, err := s.informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, err
	}
	w := &instanceWatch{class: c.Ident(), format: c.Codec.Format, obj: obj, inf: inf, uris: map[string]bool{}, byNS: map[string]map[string]bool{}}
	prefix, kind := c.Prefix, c.Kind
	uriOf := func(o any) (string, string, string, bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, ok := o.(client.Object)
		if !ok {
			return "", "", "", false
		}
		return InstanceURI(prefix, kind, m.GetNamespace(), m.GetName()), m.GetNamespace(), m.GetName(), true
	}
	w.handle, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			uri, ns, name, ok := uriOf(o)
			if !ok {
				return
			}
			s.mu.Lock()
			if w.stopped {
				s.mu.Unlock()
				return
			}
			w.uris[uri] = true
			if w.byNS[ns] == nil {
				w.byNS[ns] = map[string]bool{}
			}
			w.byNS[ns][name] = true
			s.mu.Unlock()
			s.mcp.AddResource(&mcp.Resource{URI: uri, Name: name, Title: c.Ident() + " " + ns + "/" + name,
				MIMEType: codec.MIMEType(c.Codec.Format)}, s.readInstance)
		},
		UpdateFunc: func(old, o any) {
			uri, _, _, ok := uriOf(o)
			if !ok || old.(client.Object).GetResourceVersion() == o.(client.Object).GetResourceVersion() {
				return
			}
			_ = s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		},
		DeleteFunc: func(o any) {
			uri, ns, name, ok := uriOf(o)
			if !ok {
				return
			}
			s.mu.Lock()
			delete(w.uris, uri)
			delete(w.byNS[ns], name)
			s.mu.Unlock()
			s.mcp.RemoveResources(uri)
			_ = s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		},
	})
	return w, err
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

// Subscribe accepts subscriptions to resources the caller may read.
func (s *Service) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	acct := access.AccountOf(req.GetExtra())
	if acct == nil {
		// subscriptions/listen (the stateless revision) subscribes without the
		// request's token info; its session knows the account.
		acct = s.sessions.Account(req.Session)
	}
	return s.mayFollow(ctx, acct, req.Params.URI)
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
		return access.RPCError(s.may(ctx, acct, "get", cl, ref.Namespace, ref.Name))
	}
	return nil
}

// may asks whether the caller's Kubernetes identity may do verb on the instances of
// a class in a namespace.
func (s *Service) may(ctx context.Context, acct *catalog.Account, verb string, cl *catalog.Class, ns, name string) error {
	return s.ids.Can(ctx, acct, identity.Access{Verb: verb, Group: cl.InstanceAPI.Group, Resource: cl.InstanceAPI.Plural, Namespace: ns, Name: name})
}

// Middleware drops from resources/list the instances the caller may not list (in
// namespaces it may not use, or that its Kubernetes identity may not list), and
// answers a read of a malformed URI with -32602 (the SDK would say not found).
func (s *Service) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/read":
			uri := req.(*mcp.ReadResourceRequest).Params.URI
			if _, err := ParseURI(uri); err != nil {
				return nil, invalidURI(uri, err)
			}
		case "resources/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return s.filter(ctx, access.AccountOf(req.GetExtra()), res.(*mcp.ListResourcesResult)), nil
		}
		return next(ctx, method, req)
	}
}

func (s *Service) filter(ctx context.Context, acct *catalog.Account, res *mcp.ListResourcesResult) *mcp.ListResourcesResult {
	snap := s.store.Load()
	instances, metamodel := s.guard.May(acct, access.InstancesVerb), s.guard.May(acct, access.MetamodelVerb)
	listable := map[[2]string]bool{} // (class ident, namespace) -> may list
	out := *res
	out.Resources = res.Resources[:0:0]
	for _, r := range res.Resources {
		ref, err := ParseURI(r.URI)
		if err != nil || (ref.IsInstance() && !instances) || (!ref.IsInstance() && !metamodel) {
			continue
		}
		if ref.IsInstance() {
			key := [2]string{ref.Prefix + "/" + ref.Kind, ref.Namespace}
			ok, seen := listable[key]
			if !seen {
				cl := snap.FindClass(key[0])
				ok = access.NamespaceAllowed(acct, ref.Namespace) && cl != nil && cl.InstanceAPI != nil &&
					s.may(ctx, acct, "list", cl, ref.Namespace, "") == nil
				listable[key] = ok
			}
			if !ok {
				continue
			}
		}
		out.Resources = append(out.Resources, r)
	}
	return &out
}

// Complete offers values for the arguments of resource templates (namespace, name)
// and prompts (class, the subject instance, namespace), limited to what the caller may use.
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
		if cl == nil || cl.InstanceAPI == nil || !access.NamespaceAllowed(acct, nsOf()) ||
			s.may(ctx, acct, "list", cl, nsOf(), "") != nil {
			return nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []string
		if w, ok := s.watches[ident]; ok {
			for n := range w.byNS[nsOf()] {
				out = append(out, n)
			}
		}
		return out
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
