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

package resources

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/apps"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/verbs"
)

// invalidURI is -32602 for a URI that is not one of Sandbar's, with the URI in the
// error's data, as a resource that is not found has it.
func invalidURI(uri string, err error) error {
	data, _ := json.Marshal(map[string]string{"uri": uri}) // a map of strings always encodes
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error(), Data: data}
}

// parseForCaller is -32602 for a malformed URI and -32002 (not found) for anything the
// caller may not see, so that other namespaces do not show through.
func parseForCaller(uri string, acct *catalog.Account) (ResourceRef, error) {
	ref, err := ParseURI(uri)
	if err != nil {
		return ref, invalidURI(uri, err)
	}
	if ref.IsInstance() && !authorize.NamespaceAllowed(acct, ref.Namespace) {
		return ref, mcp.ResourceNotFoundError(uri)
	}
	return ref, nil
}

func (s *Service) readInstance(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	acct := caller.Of(req.GetExtra())
	ref, err := parseForCaller(uri, acct)
	if err != nil {
		return nil, err
	}
	if !s.guard.May(acct, authorize.InstancesVerb) {
		return nil, s.guard.Refusal("reading instances", authorize.InstancesVerb)
	}
	snap := s.store.Load()
	cl := snap.FindClass(ref.Prefix + "/" + ref.Kind)
	if cl == nil || !cl.Servable() {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if s.Reads != nil {
		if err := s.Reads(ctx, req, "resources/read", snap, cl, ref.Namespace, ref.Name); err != nil {
			return nil, err
		}
	}
	kc, err := s.ids.Client(acct)
	if err != nil {
		return nil, authorize.RPCError(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, authorize.RPCError(err)
	}
	view := verbs.EntityView(cl, u)
	format := cl.Codec.Format
	if ref.Format != "" {
		format = metav1alpha1.CodecFormat(ref.Format)
	}
	if format == metav1alpha1.CodecMarkdown {
		md, err := codec.EncodeMarkdown(cl, u.GetName(), view.Attributes)
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: codec.MIMEType(format), Text: md}}}, nil
	}
	return jsonContents(uri, view)
}

func (s *Service) readMeta(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	acct := caller.Of(req.GetExtra())
	ref, err := parseForCaller(uri, acct)
	if err != nil {
		return nil, err
	}
	if !s.guard.May(acct, authorize.MetamodelVerb) {
		return nil, s.guard.Refusal("reading the metamodel", authorize.MetamodelVerb)
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

// BoardTools are the tools (canonical names) whose calls clients that render MCP Apps
// show with the workflows' board.
var BoardTools = []string{
	tool.CanonicalVerb("workflow", "start-process"),
	tool.CanonicalVerb("workflow", "active-processes"),
	tool.CanonicalVerb("workflow", "transition"),
	tool.CanonicalVerb("workflow", "process-state"),
}

// readApp answers an MCP Apps view (package apps) to a caller that may read the
// metamodel, which a view shows, or that is served a tool that names the view. A
// class's view is made once per class as synced and kept until the class changes;
// the board once per snapshot.
func (s *Service) readApp(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	acct := caller.Of(req.GetExtra())
	ref, err := parseForCaller(uri, acct)
	if err != nil {
		return nil, err
	}
	if !s.mayReadApp(acct, ref) {
		return nil, s.guard.Refusal("reading the metamodel", authorize.MetamodelVerb)
	}
	snap := s.store.Load()
	var page []byte
	switch ref.App {
	case AppClass:
		cl := snap.FindClass(ref.Prefix + "/" + ref.Kind)
		if cl == nil || !cl.Servable() {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		page, err = s.classApp(snap, cl)
	case AppBoard:
		if len(snap.Workflows) == 0 {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		page, err = s.boardApp(snap)
	default:
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: appMIME, Text: string(page), Meta: appMeta}}}, nil
}

// mayReadApp: the metamodel's readers may read every view; others the views of the
// tools they are served.
func (s *Service) mayReadApp(acct *catalog.Account, ref ResourceRef) bool {
	if s.guard.May(acct, authorize.MetamodelVerb) {
		return true
	}
	switch ref.App {
	case AppClass:
		return s.guard.May(acct, tool.CanonicalClassTool(ref.Prefix, ref.Kind))
	case AppBoard:
		return slices.ContainsFunc(BoardTools, func(t string) bool { return s.guard.May(acct, t) })
	}
	return false
}

func (s *Service) classApp(snap *catalog.Snapshot, cl *catalog.Class) ([]byte, error) {
	s.mu.Lock()
	page, ok := s.apps[cl]
	s.mu.Unlock()
	if ok {
		return page, nil
	}
	page, err := apps.Class(snap, cl, apps.Tools{
		Create:    tool.Encode(s.NameStyle, tool.CanonicalClassTool(cl.Prefix, cl.Kind)),
		CreateAny: tool.Encode(s.NameStyle, tool.CanonicalVerb("entity", "create")),
		Find:      tool.Encode(s.NameStyle, tool.CanonicalVerb("entity", "find")),
		Update:    tool.Encode(s.NameStyle, tool.CanonicalVerb("entity", "update")),
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if snap == s.store.Load() { // Sync keeps the current snapshot's classes' only
		s.apps[cl] = page
	}
	s.mu.Unlock()
	return page, nil
}

func (s *Service) boardApp(snap *catalog.Snapshot) ([]byte, error) {
	s.mu.Lock()
	page, of := s.board, s.boardOf
	s.mu.Unlock()
	if page != nil && of == snap.Version {
		return page, nil
	}
	page, err := apps.Board(snap, apps.BoardTools{
		Active:     tool.Encode(s.NameStyle, tool.CanonicalVerb("workflow", "active-processes")),
		Transition: tool.Encode(s.NameStyle, tool.CanonicalVerb("workflow", "transition")),
		History:    tool.Encode(s.NameStyle, tool.CanonicalVerb("workflow", "process-history")),
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if snap == s.store.Load() {
		s.board, s.boardOf = page, snap.Version
	}
	s.mu.Unlock()
	return page, nil
}

func jsonContents(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mimeJSON, Text: string(b)}}}, nil
}

// mayGet is nil when the caller's identity may get the instance ns/name of cl: asked
// of the class at the cluster scope first for an account that may use every
// namespace, then in the namespace, and only then of the instance by name (a grant by
// resourceNames). Each answer is kept a few seconds, so the URIs of one class and
// namespace cost one review however many they are, and those of one class one review
// for an identity that may get it cluster-wide.
func (s *Service) mayGet(ctx context.Context, acct *catalog.Account, cl *catalog.Class, ns, name string) error {
	if slices.Contains(authorize.Namespaces(acct), "*") {
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
