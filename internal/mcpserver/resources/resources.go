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
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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

// syncResources keeps the served resources and templates equal to what a snapshot
// asks for: every metamodel object, a template per concrete class, and (through the
// watches) every instance.
func (s *Server) syncResources(ctx context.Context, snap *catalog.Snapshot) {
	s.rmu.Lock()
	defer s.rmu.Unlock()

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
func (s *Server) stopWatch(ident string, w *instanceWatch) {
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

func (s *Server) watchInstances(ctx context.Context, c *catalog.Class) (*instanceWatch, error) {
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
			s.rmu.Lock()
			if w.stopped {
				s.rmu.Unlock()
				return
			}
			w.uris[uri] = true
			if w.byNS[ns] == nil {
				w.byNS[ns] = map[string]bool{}
			}
			w.byNS[ns][name] = true
			s.rmu.Unlock()
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
			s.rmu.Lock()
			delete(w.uris, uri)
			delete(w.byNS[ns], name)
			s.rmu.Unlock()
			s.mcp.RemoveResources(uri)
			_ = s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		},
	})
	return w, err
}

// resourceError is -32602 for a malformed URI and -32002 (not found) for anything the
// caller may not see, so that other namespaces do not show through.
func parseForCaller(s *Server, uri string, acct *catalog.Account) (ResourceRef, error) {
	ref, err := ParseURI(uri)
	if err != nil {
		return ref, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if ref.IsInstance() && !namespaceAllowed(acct, ref.Namespace) {
		return ref, mcp.ResourceNotFoundError(uri)
	}
	return ref, nil
}

func namespaceAllowed(acct *catalog.Account, ns string) bool {
	if acct == nil {
		return false
	}
	if ns == acct.Namespace {
		return true
	}
	for _, n := range acct.Permissions.Namespaces {
		if n == ns || n == "*" {
			return true
		}
	}
	return false
}

func (s *Server) readInstance(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	ref, err := parseForCaller(s, uri, accountOf(req.GetExtra()))
	if err != nil {
		return nil, err
	}
	cl := s.store.Load().FindClass(ref.Prefix + "/" + ref.Kind)
	if cl == nil || !cl.Servable() {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, err
	}
	view := entityView(cl, u)
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

func (s *Server) readMeta(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	ref, err := parseForCaller(s, uri, accountOf(req.GetExtra()))
	if err != nil {
		return nil, err
	}
	snap := s.store.Load()
	c := &call{s: s, snap: snap, acct: accountOf(req.GetExtra())}
	var v any
	switch ref.MetaKind {
	case MetaClass:
		if cl, ok := snap.Classes[ref.Name]; ok {
			v = c.describeClass(cl)
		}
	case MetaProperty:
		if p, ok := snap.Properties[ref.Name]; ok {
			view := slotView(p.Slot)
			delete(view, "required")
			v = view
		}
	case MetaWorkflow:
		if w, ok := snap.Workflows[ref.Name]; ok {
			v = workflowView(w)
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

func workflowView(w *catalog.Workflow) map[string]any {
	v := map[string]any{
		"name":            w.Name,
		"description":     w.Spec.Description,
		"initial":         w.Spec.Initial,
		"states":          w.Spec.States,
		"transitions":     w.Spec.Transitions,
		"terminalStates":  nonNil(w.TerminalStates),
		"cancellableFrom": nonNil(w.CancellableFrom),
	}
	if w.Spec.SubjectClass != "" {
		v["subjectClass"] = w.Spec.SubjectClass
	}
	if w.Problem != nil {
		v["problem"] = w.Problem.Message
	}
	return v
}

// subscribe accepts subscriptions to resources the caller may read.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	_, err := parseForCaller(s, req.Params.URI, accountOf(req.GetExtra()))
	return err
}

// filterResources drops from resources/list the instances of namespaces the caller
// may not use.
func filterResources(acct *catalog.Account, res *mcp.ListResourcesResult) *mcp.ListResourcesResult {
	out := *res
	out.Resources = res.Resources[:0:0]
	for _, r := range res.Resources {
		if ref, err := ParseURI(r.URI); err == nil && ref.IsInstance() && !namespaceAllowed(acct, ref.Namespace) {
			continue
		}
		out.Resources = append(out.Resources, r)
	}
	return &out
}

// complete offers values for the arguments of resource templates (namespace, name)
// and prompts (class, the subject instance, namespace), limited to what the caller may use.
func (s *Server) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	acct := accountOf(req.GetExtra())
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
		s.rmu.Lock()
		defer s.rmu.Unlock()
		var out []string
		if w, ok := s.watches[ident]; ok && namespaceAllowed(acct, nsOf()) {
			for n := range w.byNS[nsOf()] {
				out = append(out, n)
			}
		}
		return out
	}
	switch {
	case p.Argument.Name == "namespace":
		if acct != nil {
			values = append([]string{acct.Namespace}, acct.Permissions.Namespaces...)
		}
	case p.Argument.Name == "class":
		values = classIdents(snap, false)
	case p.Ref != nil && p.Ref.Type == "ref/resource" && p.Argument.Name == "name":
		if rest, ok := strings.CutPrefix(p.Ref.URI, uriBase); ok {
			parts := strings.Split(rest, "/")
			if len(parts) >= 2 {
				values = instancesOf(parts[0] + "/" + parts[1])
			}
		}
	case p.Ref != nil && p.Ref.Type == "ref/prompt":
		s.rmu.Lock()
		workflow := s.promptWorkflow[p.Ref.Name]
		s.rmu.Unlock()
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
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: nonNil(out), Total: total, HasMore: total > len(out)}}, nil
}
