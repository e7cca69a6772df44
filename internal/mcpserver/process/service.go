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

// Package process is the one service through which the MCP server starts, reads,
// lists, moves, cancels and waits on WorkflowProcesses for an account: both the MCP
// Tasks methods and the workflow, validation and project verbs use it. A process
// belongs to the account that started it, lives in that account's namespace, and is
// named with 130 random bits, so that ids cannot be guessed; another account's
// process reads as unknown.
package process

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// IDPrefix starts every task id.
const IDPrefix = "task-"

// pageSize is how many processes one page of List holds.
const pageSize = 50

// UnknownError is a process id the account does not have: it never existed, it
// expired, or it is another account's.
type UnknownError struct{ ID string }

func (e *UnknownError) Error() string { return fmt.Sprintf("unknown task %q", e.ID) }

// ErrBadCursor is a List cursor this server did not give out for the account, or a
// stale one.
var ErrBadCursor = fmt.Errorf("invalid cursor: pass the nextCursor of the previous page, or none to start again")

// listKind is the kind of List's cursor.
const listKind = "tasks-list"

// listCursor is where a page of List ended: the last process's creation (Unix
// seconds) and name, its place in the oldest-first order.
type listCursor struct {
	Created int64  `json:"t"`
	Name    string `json:"n"`
}

// before says whether p comes before the place c in the oldest-first order.
func before(p *metav1alpha1.WorkflowProcess, c listCursor) bool {
	if t := p.CreationTimestamp.Unix(); t != c.Created {
		return t < c.Created
	}
	return p.Name < c.Name
}

// Service works on the processes of accounts.
type Service struct {
	store *catalog.Store
	// client reads from the informer cache and writes; apiReader reads past the
	// cache, for processes just created and for read-modify-write.
	client    client.Client
	apiReader client.Reader
	informers cache.Informers
	events    *events
	// ids ask whether an account's Kubernetes identity may do with a
	// WorkflowProcess what the service is about to do for it.
	ids *identity.Identities
	// quota keeps each account within the limits.
	quota *quota
	// announcer tells sessions of their processes' changes of state.
	announcer *announcer
	// tokens seal the cursors of List and the continue tokens of ResultPage.
	tokens *seal.Sealer
	// issuer seals the processes the service starts, and tells them from processes
	// made otherwise, which are no account's tasks.
	issuer *workflow.Issuer
}

// New makes the service, which keeps every account within limits. Call Watch before
// waiting on processes.
// tokens seal the cursors and continue tokens it hands out.
func New(store *catalog.Store, c client.Client, apiReader client.Reader, informers cache.Informers, ids *identity.Identities,
	limits Limits, tokens *seal.Sealer, issuer *workflow.Issuer) *Service {
	return &Service{store: store, client: c, apiReader: apiReader, informers: informers, ids: ids,
		events: &events{waiters: map[string][]chan struct{}{}}, quota: newQuota(limits),
		announcer: &announcer{sessions: map[string][]*mcp.ServerSession{}}, tokens: tokens, issuer: issuer}
}

// Issued says whether a manager sharing this server's key started the process as
// it is now.
func (s *Service) Issued(p *metav1alpha1.WorkflowProcess) bool { return s.issuer.Issued(p) }

// owns says whether a process is one the service started for the account: it
// names the account, and carries the seal of a manager (a process made with
// kubectl that names an account is no task of its).
func (s *Service) owns(acct *catalog.Account, p *metav1alpha1.WorkflowProcess) bool {
	return p.Spec.Owner == acct.Name && s.issuer.Issued(p)
}

// may asks whether the account's Kubernetes identity may do verb on the
// WorkflowProcesses (or their subresource) of its namespace.
//
// The people signed in with OAuth share one namespace for their processes (their
// tasks namespace, apart from any namespace people work in), and a grant there to
// read or change processes would reach everyone's. So a person is asked for the
// verb own in the OAuth namespace instead (the process-owner role grants only that,
// and lets no one read a process with kubectl), and the service serves them only
// the processes it started for them (spec.owner is theirs, and the seal of the
// manager says the server made the process as it is).
func (s *Service) may(ctx context.Context, acct *catalog.Account, verb, subresource, name string) error {
	if acct == nil {
		return identity.Refused("no account")
	}
	if acct.User != "" {
		verb, subresource, name = OwnVerb, "", ""
	}
	return s.ids.Can(ctx, acct, identity.Access{Verb: verb, Group: metav1alpha1.GroupVersion.Group,
		Resource: "workflowprocesses", Subresource: subresource, Namespace: acct.Namespace, Name: name})
}

// OwnVerb is what a person signed in with OAuth needs on the WorkflowProcesses of
// the OAuth namespace to keep processes through MCP.
const OwnVerb = "own"

// Request is a task-augmented call in progress: the ttl its client asked for, and
// the process the tool started (which the Tasks adapter answers with).
type Request struct {
	TTLMillis *int64
	Started   *metav1alpha1.WorkflowProcess
}

type requestKey struct{}

// WithRequest marks ctx as a task-augmented call.
func WithRequest(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// Adopt answers a task-augmented call with a process started before (the same call
// made again, which waits for the same approval).
func Adopt(ctx context.Context, p *metav1alpha1.WorkflowProcess) {
	if r := requestOf(ctx); r != nil {
		r.Started = p
	}
}

func requestOf(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// newID is an unguessable name for a process.
func newID() string {
	b := make([]byte, 17)
	_, _ = rand.Read(b)
	return IDPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Actor is how an account appears in a process's history.
func Actor(acct *catalog.Account) string { return acct.Namespace + "/" + acct.Name }

// Start creates a process of a workflow in the account's namespace, owned by it. An
// account that holds as many processes, or bytes of them, as its limits allow is
// refused before anything is created. The process is deleted Limits.FinishedTTL
// after it ends (or sooner, if the client asked for a shorter ttl).
func (s *Service) Start(ctx context.Context, acct *catalog.Account, definition string, input any, subject *metav1alpha1.SubjectRef) (*metav1alpha1.WorkflowProcess, error) {
	if subject != nil && subject.Namespace == "" && acct.Home() != acct.Namespace {
		subject = &metav1alpha1.SubjectRef{Class: subject.Class, Name: subject.Name, Namespace: acct.Namespace}
	}
	p := &metav1alpha1.WorkflowProcess{
		ObjectMeta: metav1.ObjectMeta{Namespace: acct.Home(), Name: newID()},
		Spec:       metav1alpha1.WorkflowProcessSpec{Definition: definition, Owner: acct.Name, Subject: subject},
	}
	if input != nil {
		raw, err := json.Marshal(input)
		if err != nil {
			return nil, err
		}
		p.Spec.Input = &apiextensionsv1.JSON{Raw: raw}
	}
	if _, job := builtin.Lookup(definition); acct.User != "" && job {
		// The controller runs a built-in job as the account its process names, which
		// it finds among the ServiceAccounts; a process names no token's identity.
		return nil, identity.Refused(fmt.Sprintf("the built-in workflow %s runs in the cluster as a Sandbar ServiceAccount, "+
			"and %s signed in with OAuth: start it with a ServiceAccount's bearer token on /mcp", definition, acct.User))
	}
	if err := s.may(ctx, acct, "create", "", ""); err != nil {
		return nil, err
	}
	r := requestOf(ctx)
	if r != nil && r.TTLMillis != nil {
		secs := (*r.TTLMillis + 999) / 1000
		p.Spec.TTLSecondsAfterFinished = &secs
	}
	if ttl := int64(s.quota.limits.FinishedTTL / time.Second); ttl > 0 &&
		(p.Spec.TTLSecondsAfterFinished == nil || *p.Spec.TTLSecondsAfterFinished > ttl) {
		p.Spec.TTLSecondsAfterFinished = &ttl
	}
	if err := s.admit(ctx, acct, p); err != nil {
		return nil, err
	}
	s.issuer.Issue(p)
	if err := s.client.Create(ctx, p); err != nil {
		s.settle(ctx, acct, p.Name, false)
		return nil, err
	}
	s.settle(ctx, acct, p.Name, true)
	tool.NoteStarted(ctx, p.Namespace, p.Name)
	if r != nil {
		r.Started = p
	}
	return p, nil
}

// Get reads a process of the account from the cache, or from the API server when
// the cache has not seen it yet.
func (s *Service) Get(ctx context.Context, acct *catalog.Account, id string) (*metav1alpha1.WorkflowProcess, error) {
	return s.read(ctx, acct, id, false)
}

// GetFresh reads a process from the API server, for read-modify-write.
func (s *Service) GetFresh(ctx context.Context, acct *catalog.Account, id string) (*metav1alpha1.WorkflowProcess, error) {
	return s.read(ctx, acct, id, true)
}

func (s *Service) read(ctx context.Context, acct *catalog.Account, id string, fresh bool) (*metav1alpha1.WorkflowProcess, error) {
	if acct == nil || !strings.HasPrefix(id, IDPrefix) {
		return nil, &UnknownError{ID: id}
	}
	tool.NoteProcess(ctx, acct.Home(), id)
	if err := s.may(ctx, acct, "get", "", id); err != nil {
		return nil, err
	}
	var p metav1alpha1.WorkflowProcess
	key := client.ObjectKey{Namespace: acct.Home(), Name: id}
	var err error
	if fresh {
		err = s.apiReader.Get(ctx, key, &p)
	} else if err = s.client.Get(ctx, key, &p); apierrors.IsNotFound(err) {
		err = s.apiReader.Get(ctx, key, &p)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &UnknownError{ID: id}
		}
		return nil, err
	}
	if !s.owns(acct, &p) {
		return nil, &UnknownError{ID: id}
	}
	return &p, nil
}

// mine lists the account's processes, oldest first.
func (s *Service) mine(ctx context.Context, acct *catalog.Account) ([]*metav1alpha1.WorkflowProcess, error) {
	if err := s.may(ctx, acct, "list", "", ""); err != nil {
		return nil, err
	}
	var list metav1alpha1.WorkflowProcessList
	if err := s.client.List(ctx, &list, client.InNamespace(acct.Home())); err != nil {
		return nil, err
	}
	var out []*metav1alpha1.WorkflowProcess
	for i := range list.Items {
		if s.owns(acct, &list.Items[i]) {
			out = append(out, &list.Items[i])
		}
	}
	sortOldestFirst(out)
	return out, nil
}

func sortOldestFirst(procs []*metav1alpha1.WorkflowProcess) {
	slices.SortFunc(procs, func(a, b *metav1alpha1.WorkflowProcess) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
}

// List is one page of the account's processes, oldest first, and the cursor of the
// next page ("" for the last).
func (s *Service) List(ctx context.Context, acct *catalog.Account, cursor string) ([]*metav1alpha1.WorkflowProcess, string, error) {
	all, err := s.mine(ctx, acct)
	if err != nil {
		return nil, "", err
	}
	// The cursor is the last process of the page before, sealed for the account: a
	// process gone since ends nothing, the next page starts after where it stood.
	scope := seal.Scope(acct.Namespace, acct.Name, acct.User)
	start := 0
	if cursor != "" {
		var after listCursor
		if s.tokens.Open(listKind, scope, cursor, &after) != nil {
			return nil, "", ErrBadCursor
		}
		start = sort.Search(len(all), func(i int) bool { return !before(all[i], after) })
		if start < len(all) && all[start].Name == after.Name {
			start++
		}
	}
	end := min(start+pageSize, len(all))
	next := ""
	if end < len(all) {
		last := all[end-1]
		next = s.tokens.Seal(listKind, scope, listCursor{Created: last.CreationTimestamp.Unix(), Name: last.Name})
	}
	return all[start:end], next, nil
}

// Select is up to 100 of the account's processes that keep says to, oldest or newest first.
func (s *Service) Select(ctx context.Context, acct *catalog.Account, keep func(*metav1alpha1.WorkflowProcess) bool, newestFirst bool) ([]*metav1alpha1.WorkflowProcess, error) {
	all, err := s.mine(ctx, acct)
	if err != nil {
		return nil, err
	}
	if newestFirst {
		slices.Reverse(all)
	}
	var out []*metav1alpha1.WorkflowProcess
	for _, p := range all {
		if len(out) < 100 && keep(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Cancel cancels a process through its workflow's cancellation guard, at once: the
// answer is the process, already cancelled, or a *workflow.Error with the guard's
// reason. It takes the right to update the process (as setting spec.cancelRequest
// with kubectl does).
func (s *Service) Cancel(ctx context.Context, acct *catalog.Account, id string) (*metav1alpha1.WorkflowProcess, error) {
	if acct != nil && strings.HasPrefix(id, IDPrefix) {
		tool.NoteProcess(ctx, acct.Home(), id)
	}
	if acct != nil && acct.Permissions.ReadOnly {
		return nil, identity.Refused("this account is read-only: it cannot cancel processes")
	}
	if err := s.may(ctx, acct, "update", "", id); err != nil {
		return nil, err
	}
	return s.update(ctx, acct, id, func(p *metav1alpha1.WorkflowProcess, w *catalog.Workflow) error {
		// A refusal is answered, not written: the process stays as it was.
		return workflow.CancelProcess(w, p, Actor(acct), "cancelled by "+acct.Name, metav1.Now())
	})
}

// Transition moves a process by a named transition of its workflow. Built-in
// workflows are moved by the server only. It takes the right to update the
// process's status.
func (s *Service) Transition(ctx context.Context, acct *catalog.Account, id, transition, reason string) (*metav1alpha1.WorkflowProcess, error) {
	if err := s.may(ctx, acct, "update", "status", id); err != nil {
		return nil, err
	}
	return s.update(ctx, acct, id, func(p *metav1alpha1.WorkflowProcess, w *catalog.Workflow) error {
		if builtin.IsBuiltin(p.Spec.Definition) {
			return &workflow.Error{Reason: "builtin", Message: fmt.Sprintf("%s is run by the server; it can only be cancelled", p.Spec.Definition)}
		}
		return workflow.Transition(w, &p.Status, transition, Actor(acct), reason, metav1.Now())
	})
}

// Waiting is what a process of a user workflow waits for: the transitions of its
// workflow that can take it on from its current state. It is nil for a built-in
// job, which the server moves, and for a process that has ended. (A user
// workflow's process moves only when someone takes one of them.)
func (s *Service) Waiting(p *metav1alpha1.WorkflowProcess) []metav1alpha1.WorkflowTransition {
	if builtin.IsBuiltin(p.Spec.Definition) || Status(p) != Working {
		return nil
	}
	w := s.store.Load().Workflows[p.Spec.Definition]
	if w == nil {
		return nil
	}
	state := p.Status.State
	if state == "" {
		state = w.Spec.Initial // not started by the controller yet
	}
	var next []metav1alpha1.WorkflowTransition
	for _, t := range w.Spec.Transitions {
		if slices.Contains(t.From, state) {
			next = append(next, t)
		}
	}
	return next
}

// update applies a step of the engine to a fresh read of a process and writes its
// status, again on a conflict (the controller writes status too).
func (s *Service) update(ctx context.Context, acct *catalog.Account, id string, step func(*metav1alpha1.WorkflowProcess, *catalog.Workflow) error) (*metav1alpha1.WorkflowProcess, error) {
	for attempt := 0; ; attempt++ {
		p, err := s.GetFresh(ctx, acct, id)
		if err != nil {
			return nil, err
		}
		w := s.store.Load().Workflows[p.Spec.Definition]
		if w == nil {
			return nil, &workflow.Error{Reason: "unknown-definition", Message: fmt.Sprintf("workflow %q does not exist", p.Spec.Definition)}
		}
		if p.Status.Phase == "" {
			workflow.Start(w, &p.Status, Actor(acct), metav1.Now())
		}
		if err := step(p, w); err != nil {
			return nil, err
		}
		if err := s.client.Status().Update(ctx, p); err != nil {
			if apierrors.IsConflict(err) && attempt < 5 {
				continue
			}
			return nil, err
		}
		return p, nil
	}
}

// Wait blocks until a process ends, or ctx does. A wait takes a follower's place: an
// account (or the server) with none left is answered at once with a
// *TooManyFollowersError, unless the process has already ended.
func (s *Service) Wait(ctx context.Context, acct *catalog.Account, id string) (*metav1alpha1.WorkflowProcess, error) {
	if p, err := s.Get(ctx, acct, id); err != nil || workflow.Terminal(&p.Status) {
		return p, err
	}
	if !s.follow(acct) {
		return nil, &TooManyFollowersError{ID: id}
	}
	defer s.unfollow(acct)
	return s.watch(ctx, acct, id, func(p *metav1alpha1.WorkflowProcess) bool { return !workflow.Terminal(&p.Status) })
}

// watch reads a process of the account, and again each time it changes (or every
// 30 seconds, should an event be missed), for as long as more answers true of it:
// the process it read last, or why it could not read it, or ctx's end.
func (s *Service) watch(ctx context.Context, acct *catalog.Account, id string, more func(*metav1alpha1.WorkflowProcess) bool) (*metav1alpha1.WorkflowProcess, error) {
	key := acct.Home() + "/" + id
	for {
		changed := s.events.wait(key)
		p, err := s.Get(ctx, acct, id)
		if err != nil || !more(p) {
			s.events.forget(key, changed)
			return p, err
		}
		select {
		case <-ctx.Done():
			s.events.forget(key, changed)
			return nil, ctx.Err()
		case <-changed:
		case <-time.After(30 * time.Second):
			s.events.forget(key, changed)
		}
	}
}

// WaitFor is Wait for at most d; a process still running then, or one the account
// may not wait on now (see Wait), is returned as it is.
func (s *Service) WaitFor(ctx context.Context, acct *catalog.Account, p *metav1alpha1.WorkflowProcess, d time.Duration) *metav1alpha1.WorkflowProcess {
	if workflow.Terminal(&p.Status) || d <= 0 {
		return p
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if done, err := s.Wait(wctx, acct, p.Name); err == nil {
		return done
	}
	return p
}
