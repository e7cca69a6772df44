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

// Package sessions controls what clients hold open: the session registry (the account
// each MCP session acts for, and the end of the sessions, and so the streams, of an
// account that is locked out) and Holds (the sessions and streams each account, OAuth
// person and replica may hold open). It does not authenticate requests (packages keys
// and oauth) or decide what an account may call (package authorize).
package sessions

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
)

// Registry knows the account each MCP session acts for and ends the sessions of an
// account that is locked out. Requests are authenticated one by one, but an open GET
// stream makes none: without this, a deactivated account, or one whose key was
// replaced, would go on receiving notifications on the stream it opened before.
//
// A session is locked out when its account is gone from the catalog, inactive or
// not ready, or when the key Secret it authenticated against has changed since its
// last request. Registry follows the catalog and the informers of accounts and
// Secrets, so a lock-out closes the session (and so its stream) as soon as the
// manager's cache sees the change; until then, Notifications drops what would still
// be sent to it.
type Registry struct {
	store  *catalog.Store
	reader client.Reader
	// anonymous, when set, is the account of every session (no-auth mode).
	anonymous *catalog.Account

	mu   sync.Mutex
	byID map[*mcp.ServerSession]*sessionEntry
	// live are the sessions of the session-based revisions by id, from their first
	// request through Middleware until they end.
	live map[string]*mcp.ServerSession
	// ends are what runs when a live session ends (OnEnd), by its id.
	ends map[string]func()
	// wake coalesces the changes that call for a sweep.
	wake chan struct{}
}

// sessionEntry is what a session's last authenticated request saw.
type sessionEntry struct {
	service, namespace, name string
	// secret and secretRV are the key Secret's name and resource version.
	secret, secretRV string
	// locked is set once, by the sweep that closes the session.
	locked atomic.Bool
	// oauth is the account of an OAuth user's session (not in the catalog), valid
	// until its last token expires.
	oauth   *catalog.Account
	expires time.Time
}

// NewRegistry follows the sessions of accounts read from store, reading accounts and
// their Secrets through reader (the manager's cache). With anonymous set (no-auth
// mode), every session is that account's and nothing locks it out.
func NewRegistry(store *catalog.Store, reader client.Reader, anonymous *catalog.Account) *Registry {
	return &Registry{store: store, reader: reader, anonymous: anonymous, byID: map[*mcp.ServerSession]*sessionEntry{},
		live: map[string]*mcp.ServerSession{}, ends: map[string]func(){}, wake: make(chan struct{}, 1)}
}

// Middleware records, on every request of a session, the account and the key Secret
// it was authenticated with. It is a receiving middleware.
func (s *Registry) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if ok && ss.ID() != "" {
			s.follow(ss)
		}
		// subscriptions/listen is the stateless revision's: a session of another (which
		// the SDK would serve it in) has its GET stream instead, and its listen would be
		// a stream that nothing counts (Holds counts the stateless revision's).
		if method == methodListen && ok && !transport.StatelessSession(ss) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: methodListen + " is a method of revision " + transport.Stateless + " and later; a session has its GET stream instead"}
		}
		if ok && s.anonymous == nil {
			if acct := caller.Of(req.GetExtra()); acct != nil && acct.User != "" {
				s.recordOAuth(ss, acct, req.GetExtra().TokenInfo.Expiration)
			} else if acct != nil {
				s.record(ctx, ss, acct, req.GetExtra())
			}
		}
		return next(ctx, method, req)
	}
}

// follow keeps a session of the session-based revisions under its id until it ends.
func (s *Registry) follow(ss *mcp.ServerSession) {
	id := ss.ID()
	s.mu.Lock()
	known := s.live[id] == ss
	if !known {
		s.live[id] = ss
	}
	s.mu.Unlock()
	if known {
		return
	}
	contain.Go("session-end", func() {
		_ = ss.Wait()
		s.mu.Lock()
		var end func()
		if s.live[id] == ss {
			delete(s.live, id)
			end = s.ends[id]
			delete(s.ends, id)
		}
		s.mu.Unlock()
		if end != nil {
			end()
		}
	})
}

// OnEnd runs end once the live session with id ends; at once when none is live
// (there never was one, it never passed Middleware, or it has ended already).
func (s *Registry) OnEnd(id string, end func()) {
	s.mu.Lock()
	if id != "" && s.live[id] != nil {
		if prev := s.ends[id]; prev != nil {
			s.ends[id] = func() { prev(); end() }
		} else {
			s.ends[id] = end
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	end()
}

// Live is the session of the session-based revisions with an id, from its first
// request until it ends (nil: none).
func (s *Registry) Live(id string) *mcp.ServerSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id]
}

// record keeps the account of a session and the key Secret its request was
// authenticated against: as the authentication read it (the token info carries
// it), else read again.
func (s *Registry) record(ctx context.Context, ss *mcp.ServerSession, acct *catalog.Account, extra *mcp.RequestExtra) {
	if !s.known(acct) {
		return
	}
	key, ok := caller.KeyOf(extra.TokenInfo)
	s.mu.Lock()
	old := s.byID[ss]
	if ok && old != nil && old.oauth == nil && old.service == acct.ServiceName && old.namespace == acct.Namespace &&
		old.name == acct.Name && old.secret == key.Name && old.secretRV == key.ResourceVersion {
		// As the session's last request found it: nothing to record.
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	e := &sessionEntry{service: acct.ServiceName, namespace: acct.Namespace, name: acct.Name}
	if ok {
		e.secret, e.secretRV = key.Name, key.ResourceVersion
	} else {
		var sa metav1alpha1.ServiceAccount
		if err := s.reader.Get(ctx, client.ObjectKey{Namespace: acct.Namespace, Name: acct.Name}, &sa); err == nil {
			e.secret = sa.Spec.APIKeySecretRef.Name
			var secret corev1.Secret
			if err := s.reader.Get(ctx, client.ObjectKey{Namespace: acct.Namespace, Name: e.secret}, &secret); err == nil {
				e.secretRV = secret.ResourceVersion
			}
		}
	}
	s.keep(ss, e)
}

// keep records e as the entry of ss, unless a sweep has locked ss out. The entry of
// a session without an id goes when the session ends: a stateless request's session
// ends with the request (subscriptions/listen with its stream), a legacy SSE
// session's with its stream. Not what revision its requests claim: a legacy
// session's may carry the stateless revision's _meta, or its initialize ask for
// that revision, and its entry must stay for the sweep to close it.
func (s *Registry) keep(ss *mcp.ServerSession, e *sessionEntry) {
	s.mu.Lock()
	old := s.byID[ss]
	if old == nil || !old.locked.Load() {
		s.byID[ss] = e
	}
	s.mu.Unlock()
	if old == nil && ss.ID() == "" {
		contain.Go("session-end", func() {
			_ = ss.Wait()
			s.forget(ss)
		})
	}
}

func (s *Registry) forget(ss *mcp.ServerSession) {
	s.mu.Lock()
	delete(s.byID, ss)
	s.mu.Unlock()
}

// recordOAuth records the account of an OAuth user's session until its token
// expires. The SDK refuses the session to any other user's token (TokenInfo.UserID).
func (s *Registry) recordOAuth(ss *mcp.ServerSession, acct *catalog.Account, expires time.Time) {
	s.keep(ss, &sessionEntry{namespace: acct.Namespace, name: acct.Name, oauth: acct, expires: expires})
}

// known is true for an account of the catalog (an older snapshot's copy of it).
func (s *Registry) known(acct *catalog.Account) bool {
	cur := s.store.Load().Account(acct.Namespace, acct.ServiceName)
	return cur != nil && cur.Namespace == acct.Namespace && cur.Name == acct.Name
}

// Notifications is a sending middleware: a session that is locked out receives no
// more notifications, even before its close has gone through.
func (s *Registry) Notifications(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && strings.HasPrefix(method, "notifications/") && s.Locked(ss) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// Locked is true for a session whose account is locked out: as the newest catalog
// has it, or as the last sweep found its key.
func (s *Registry) Locked(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	e := s.byID[ss]
	s.mu.Unlock()
	return e != nil && s.current(e) == nil
}

// Account is the account a session acts for as the newest catalog has it; nil when
// the session is unknown or locked out.
func (s *Registry) Account(ss *mcp.ServerSession) *catalog.Account {
	if s.anonymous != nil {
		return s.anonymous
	}
	s.mu.Lock()
	e := s.byID[ss]
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	return s.current(e)
}

// current is e's account in the newest catalog, or nil if it is locked out there or
// by a sweep.
func (s *Registry) current(e *sessionEntry) *catalog.Account {
	if e.oauth != nil {
		if e.locked.Load() || !time.Now().Before(e.expires) {
			return nil
		}
		return e.oauth
	}
	acct := s.store.Load().Account(e.namespace, e.service)
	if e.locked.Load() || acct == nil || acct.Namespace != e.namespace || acct.Name != e.name || !acct.Active || !acct.Ready {
		return nil
	}
	return acct
}

// lockedOut reads whether the account of e, or its key, has changed for the worse.
func (s *Registry) lockedOut(ctx context.Context, e *sessionEntry) bool {
	if s.current(e) == nil {
		return true
	}
	if e.oauth != nil {
		return false
	}
	var sa metav1alpha1.ServiceAccount
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: e.name}, &sa); err != nil {
		return true
	}
	if (sa.Spec.Active != nil && !*sa.Spec.Active) || sa.Spec.APIKeySecretRef.Name != e.secret {
		return true
	}
	var secret corev1.Secret
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: e.secret}, &secret); err != nil {
		return true
	}
	return secret.ResourceVersion != e.secretRV
}

// Follow closes the sessions of locked-out accounts until ctx ends: after every
// catalog change and every change to an account or a Secret in the cache.
func (s *Registry) Follow(ctx context.Context, server *mcp.Server, informers cache.Informers) error {
	poke := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		UpdateFunc: func(any, any) { s.poke() },
		DeleteFunc: func(any) { s.poke() },
	}
	for _, obj := range []client.Object{&metav1alpha1.ServiceAccount{}, &corev1.Secret{}} {
		inf, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(contain.Handler("informer", poke)); err != nil {
			return err
		}
	}
	contain.Loop(ctx, "session-catalog", func(ctx context.Context) {
		for {
			_, changed := s.store.Watch()
			select {
			case <-ctx.Done():
				return
			case <-changed:
				s.poke()
			}
		}
	})
	contain.Loop(ctx, "session-sweep", func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
				s.sweep(ctx, server)
			}
		}
	})
	return nil
}

func (s *Registry) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sweep forgets sessions that ended and closes those whose account is locked out.
func (s *Registry) sweep(ctx context.Context, server *mcp.Server) {
	live := map[*mcp.ServerSession]bool{}
	for ss := range server.Sessions() {
		live[ss] = true
	}
	s.mu.Lock()
	entries := make(map[*mcp.ServerSession]*sessionEntry, len(s.byID))
	for ss, e := range s.byID {
		if !live[ss] {
			delete(s.byID, ss)
			continue
		}
		entries[ss] = e
	}
	s.mu.Unlock()
	for ss, e := range entries {
		if e.locked.Load() || !s.lockedOut(ctx, e) {
			continue
		}
		e.locked.Store(true)
		ctrl.LoggerFrom(ctx).WithName("mcp").Info("closing the session of a locked-out account",
			"account", e.namespace+"/"+e.name, "session", ss.ID())
		_ = ss.Close()
	}
}
