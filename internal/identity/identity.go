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

// Package identity is the Kubernetes identity an account acts as: a Kubernetes
// ServiceAccount in the account's own namespace, or, for a person signed in with
// OAuth, the user and groups their token maps to. What the operator does for an
// account against the API server goes through a client that impersonates that
// identity; what it serves from its own cache is first asked of the API server as a
// SubjectAccessReview. Either way Kubernetes RBAC decides, so
// `kubectl auth can-i --as=system:serviceaccount:<ns>:<sa>` predicts what an account
// may do. This is Flux's multi-tenancy model: impersonated tenant ServiceAccounts and
// no references across namespaces.
package identity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// verdictTTL is how long the answer of a SubjectAccessReview is reused: a new
// RoleBinding, or one removed, takes effect for cached reads within this time (for
// what goes through the impersonating client, at once).
const verdictTTL = 5 * time.Second

// Bounds of the caches; past them a cache starts over.
const (
	maxClients  = 1024
	maxVerdicts = 10000
)

// Access is one request to check: a verb on a resource, in a namespace ("" for
// cluster-scoped resources or all namespaces).
type Access struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
}

// Connection is how the manager reaches the API server.
type Connection struct {
	// Config and Options are the manager's (its scheme and REST mapper, so that an
	// impersonating client shares what the manager found; New puts a Mapper in front
	// of the REST mapper unless it is one).
	Config  *rest.Config
	Options client.Options
	// NewClient makes a client from them; nil is client.New.
	NewClient client.NewClientFunc
	// Manager is the manager's own client: it asks SubjectAccessReviews, and acts for
	// the trusted account.
	Manager client.Client
}

// ConnectionOf is a manager's connection: its config, scheme, REST mapper and
// client, and newClient (nil: client.New) for the clients that act as accounts.
func ConnectionOf(mgr manager.Manager, newClient client.NewClientFunc) Connection {
	return Connection{
		Config:    mgr.GetConfig(),
		Options:   client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()},
		NewClient: newClient,
		Manager:   mgr.GetClient(),
	}
}

// Identities hands out what acts as an account in the cluster.
type Identities struct {
	conn Connection
	// trusted acts with the manager's rights: the account of no-auth mode, which is
	// served on loopback only.
	trusted *catalog.Account

	// mapper finds the REST mappings of the clients here within each request's
	// deadline (nil: the clients find them themselves). manager is the manager's
	// client with it: it asks SubjectAccessReviews, and acts for the trusted account.
	mapper  *Mapper
	manager client.Client

	mu       sync.Mutex
	clients  map[string]client.Client
	verdicts map[verdictKey]verdict
}

type verdictKey struct {
	// subject is the user and its groups.
	subject string
	Access
}

type verdict struct {
	allowed bool
	at      time.Time
}

// New makes the identities of the accounts. trusted, if not nil, is the one account
// that acts with the manager's own rights.
func New(conn Connection, trusted *catalog.Account) *Identities {
	if conn.NewClient == nil {
		conn.NewClient = client.New
	}
	var mapper *Mapper
	if conn.Options.Mapper != nil {
		var ok bool
		if mapper, ok = conn.Options.Mapper.(*Mapper); !ok {
			mapper = NewMapper(conn.Options.Mapper)
			conn.Options.Mapper = mapper
		}
	}
	return &Identities{
		conn:     conn,
		trusted:  trusted,
		mapper:   mapper,
		manager:  boundedClient(conn.Manager, mapper),
		clients:  map[string]client.Client{},
		verdicts: map[verdictKey]verdict{},
	}
}

// User is the Kubernetes user name an account acts as, or "" when it has none: the
// user of an OAuth account, or its Kubernetes ServiceAccount.
func User(acct *catalog.Account) string {
	switch {
	case acct == nil:
		return ""
	case acct.User != "":
		return acct.User
	case acct.KubeServiceAccount == "":
		return ""
	}
	return "system:serviceaccount:" + acct.Namespace + ":" + acct.KubeServiceAccount
}

// Groups are the groups the API server gives the account's user: an OAuth account's
// own (and system:authenticated, which impersonation adds), or those of a
// ServiceAccount of a namespace.
func Groups(acct *catalog.Account) []string {
	if acct.User != "" {
		return append(slices.Clone(acct.Groups), "system:authenticated")
	}
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + acct.Namespace, "system:authenticated"}
}

// subject keys the caches: the user and the groups it is impersonated with.
func subject(acct *catalog.Account) string {
	if acct.User == "" {
		return User(acct)
	}
	return acct.User + "\x00" + strings.Join(acct.Groups, "\x00")
}

// Client is a client that acts as the account: the API server authorizes (and
// admission sees) each request as the account's Kubernetes ServiceAccount. Making
// it asks the API server nothing; each of its requests, the REST mapping of its
// object included, ends with the request's context (or after backstop, for a
// context without a deadline).
func (ids *Identities) Client(acct *catalog.Account) (client.Client, error) {
	if acct != nil && acct == ids.trusted {
		return ids.manager, nil
	}
	user := User(acct)
	if user == "" {
		return nil, noIdentity(acct)
	}
	key := subject(acct)
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if c, ok := ids.clients[key]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(ids.conn.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	if cfg.Timeout == 0 {
		cfg.Timeout = backstop
	}
	if acct.User != "" {
		// The groups of an OAuth account are its token's; a ServiceAccount's come
		// from the API server.
		cfg.Impersonate.Groups = slices.Clone(acct.Groups)
	}
	c, err := ids.conn.NewClient(cfg, ids.conn.Options)
	if err != nil {
		return nil, fmt.Errorf("a client acting as %s: %w", user, err)
	}
	c = boundedClient(c, ids.mapper)
	if len(ids.clients) >= maxClients {
		clear(ids.clients)
	}
	ids.clients[key] = c
	return c, nil
}

// Can asks the API server whether the account's identity may do a, and answers a
// Forbidden error in the API server's words when it may not. It is for what the
// operator serves from its own cache; a request made through Client needs no check.
// The review ends with ctx (or after backstop, for a context without a deadline). An
// answer is reused for verdictTTL; a review past the limit of ctx's count
// (WithReviews) is not asked, and the error says so (TooManyReviews).
func (ids *Identities) Can(ctx context.Context, acct *catalog.Account, a Access) error {
	if acct != nil && acct == ids.trusted {
		return nil
	}
	user := User(acct)
	if user == "" {
		return noIdentity(acct)
	}
	key := verdictKey{subject: subject(acct), Access: a}
	now := time.Now()
	ids.mu.Lock()
	v, ok := ids.verdicts[key]
	ids.mu.Unlock()
	if !ok || now.Sub(v.at) > verdictTTL {
		if over := reviewsOf(ctx).take(); over != nil {
			return tooMany(a, over.limit)
		}
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: Groups(acct),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: a.Namespace, Verb: a.Verb, Group: a.Group,
				Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
			},
		}}
		if err := ids.review(ctx, review); err != nil {
			reviewsAsked.WithLabelValues("error").Inc()
			return fmt.Errorf("asking the API server whether %s may %s %s: %w", user, a.Verb, a.resource(), err)
		}
		v = verdict{allowed: review.Status.Allowed && !review.Status.Denied, at: now}
		if v.allowed {
			reviewsAsked.WithLabelValues("allowed").Inc()
		} else {
			reviewsAsked.WithLabelValues("denied").Inc()
		}
		ids.mu.Lock()
		if len(ids.verdicts) >= maxVerdicts {
			clear(ids.verdicts)
		}
		ids.verdicts[key] = v
		ids.mu.Unlock()
	}
	if !v.allowed {
		return Forbidden(user, a)
	}
	return nil
}

// review asks the API server a SubjectAccessReview before ctx ends.
func (ids *Identities) review(ctx context.Context, review *authorizationv1.SubjectAccessReview) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, backstop)
		defer cancel()
	}
	return ids.manager.Create(ctx, review)
}

// Forbidden is the error the API server would answer when user may not do a.
func Forbidden(user string, a Access) error {
	msg := fmt.Sprintf("User %q cannot %s resource %q", user, a.Verb, a.Resource)
	if a.Subresource != "" {
		msg = fmt.Sprintf("User %q cannot %s resource \"%s/%s\"", user, a.Verb, a.Resource, a.Subresource)
	}
	msg += fmt.Sprintf(" in API group %q", a.Group)
	if a.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.Group, Resource: a.Resource}, a.Name, fmt.Errorf("%s", msg))
}

func (a Access) resource() string {
	gr := schema.GroupResource{Group: a.Group, Resource: a.Resource}.String()
	if a.Namespace != "" {
		return gr + " in namespace " + a.Namespace
	}
	return gr
}

// Refused is a Forbidden error with a message of the operator's own, for what the
// account's Sandbar permissions (which only narrow RBAC) refuse.
func Refused(message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: message,
	}}
}

// noIdentity is the refusal for an account that names no Kubernetes ServiceAccount
// while the manager has no default.
func noIdentity(acct *catalog.Account) error {
	name := "(none)"
	if acct != nil {
		name = acct.Namespace + "/" + acct.Name
	}
	return Refused(fmt.Sprintf("account %s has no Kubernetes identity: set spec.serviceAccountName on its "+
		"ServiceAccount, or start the manager with --default-service-account (chart value defaultServiceAccount)", name))
}
