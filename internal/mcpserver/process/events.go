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

package process

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// followFor bounds how long progress notifications follow one process.
const followFor = time.Hour

// events wakes whoever waits on a process (a task's result, progress) when the
// informer sees it change.
type events struct {
	mu      sync.Mutex
	waiters map[string][]chan struct{}
}

func (e *events) wait(key string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := make(chan struct{})
	e.waiters[key] = append(e.waiters[key], ch)
	return ch
}

// forget drops a waiter that stopped waiting before its process changed.
func (e *events) forget(key string, ch chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waiters[key] = slices.DeleteFunc(e.waiters[key], func(c chan struct{}) bool { return c == ch })
	if len(e.waiters[key]) == 0 {
		delete(e.waiters, key)
	}
}

func (e *events) notify(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, ok := o.(client.Object)
	if !ok {
		return
	}
	key := m.GetNamespace() + "/" + m.GetName()
	e.mu.Lock()
	chans := e.waiters[key]
	delete(e.waiters, key)
	e.mu.Unlock()
	for _, ch := range chans {
		close(ch)
	}
}

// Watch starts waking waiters when processes change.
func (s *Service) Watch(ctx context.Context) error {
	inf, err := s.informers.GetInformer(ctx, &metav1alpha1.WorkflowProcess{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(contain.Handler("informer", toolscache.ResourceEventHandlerFuncs{
		AddFunc: s.events.notify,
		UpdateFunc: func(old, o any) {
			s.events.notify(o)
			s.announcer.changed(old, o)
		},
		DeleteFunc: func(o any) {
			s.events.notify(o)
			s.announcer.gone(o)
		},
	}))
	return err
}

// Follow follows a process the session just started, in the request ctx: it tells
// the session of the process's changes of state by notifications/message (see
// announcer), and, with a progress token, sends notifications/progress until the
// process ends, the session closes, or an hour passes. It reports false when it
// cannot send progress: the account, or the server, follows as many processes as
// Limits allow; the client can poll the task instead.
//
// A request of the stateless revision is a session of its own, which ends with it:
// it hears of the process only while the request lasts (a call that waits for it),
// on the request's own stream.
func (s *Service) Follow(ctx context.Context, session *mcp.ServerSession, token any, acct *catalog.Account, id string) bool {
	if session != nil && !transport.StatelessSession(session) && acct != nil {
		s.announcer.add(session, acct.Home()+"/"+id)
	}
	return s.FollowFor(ctx, session, token, acct, id, followFor)
}

// FollowFor sends notifications/progress on a session for a process, as Follow, for
// at most d.
func (s *Service) FollowFor(ctx context.Context, session *mcp.ServerSession, token any, acct *catalog.Account, id string, d time.Duration) bool {
	if session == nil || token == nil {
		return true
	}
	if !s.follow(acct) {
		return false
	}
	// Not the request's context for a session: the request is answered and its
	// stream closed long before the process ends, and the notifications go on the
	// session's standalone stream. The stateless revision has no such stream.
	parent := context.Background()
	if transport.StatelessSession(session) {
		parent = ctx
	}
	contain.Go("task-progress", func() {
		defer s.unfollow(acct)
		ctx, cancel := context.WithTimeout(parent, min(d, followFor))
		defer cancel()
		last := ""
		_, _ = s.watch(ctx, acct, id, func(cur *metav1alpha1.WorkflowProcess) bool {
			params := &mcp.ProgressNotificationParams{ProgressToken: token, Message: TaskOf(cur).StatusMessage}
			if pr := cur.Status.Progress; pr != nil {
				params.Progress, params.Total = float64(pr.Done), float64(pr.Total)
			}
			if sent := fmt.Sprintf("%v/%v/%s", params.Progress, params.Total, params.Message); sent != last {
				last = sent
				if err := session.NotifyProgress(ctx, params); err != nil {
					return false
				}
			}
			return !workflow.Terminal(&cur.Status)
		})
	})
	return true
}
