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
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

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
			return authorize.RPCError(err)
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

// Subscribe accepts subscriptions to resources the caller may read. A subscription
// to an instance watches its class (if no other subscription does) before it is
// answered.
func (s *Service) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	acct := caller.Of(req.GetExtra())
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
		if !s.guard.May(acct, authorize.MetamodelVerb) {
			return s.guard.Refusal("subscribing to the metamodel", authorize.MetamodelVerb)
		}
		return nil
	case !s.guard.May(acct, authorize.InstancesVerb):
		return s.guard.Refusal("subscribing to instances", authorize.InstancesVerb)
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
	return authorize.RPCError(err)
}
