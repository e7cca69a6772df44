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

package controllers

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// ServiceAccountReconciler checks that each MCP ServiceAccount has a usable key hash
// and a service name of its own.
type ServiceAccountReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// ClientLimits, when set, counts the tools the account is served of the catalog in
	// Store against the most its clients take (the ClientLimits condition); accounts
	// are checked again whenever the catalog changes.
	ClientLimits          ClientLimits
	Store                 *catalog.Store
	DefaultServiceAccount string
}

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=serviceaccounts,verbs=get;list;watch
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=serviceaccounts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconcile checks one ServiceAccount and writes its status.
func (r *ServiceAccountReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sa metav1alpha1.ServiceAccount
	if err := r.Get(ctx, req.NamespacedName, &sa); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	secretProblem, err := r.checkSecret(ctx, &sa)
	if err != nil {
		return ctrl.Result{}, err
	}
	orig := sa.DeepCopy()
	sa.Status = serviceAccountStatus(&sa, secretProblem, r.serviceNameConflict(ctx, &sa))
	// Before the catalog's first build (a replica that has just started and leads)
	// the store holds no class: the condition keeps what it said, and the account is
	// checked again when the build is published.
	if r.ClientLimits != nil && r.Store != nil && built(r.Store) {
		// The account as its spec says now, against the classes the catalog serves.
		v := r.ClientLimits.Account(r.Store.Load(), catalog.AccountOf(&sa, r.DefaultServiceAccount))
		conds := newConditions(sa.Status.Conditions, sa.Generation)
		conds.set(metav1alpha1.ConditionClientLimits, v.Reason != metav1alpha1.ReasonTooManyTools, v.Reason, v.Message)
		sa.Status.Conditions = conds.list
	}
	return ctrl.Result{}, patchStatus(ctx, r.Client, r.Recorder, &sa, orig, orig.Status, sa.Status,
		orig.Status.Conditions, sa.Status.Conditions)
}

// built says whether the store holds a build of the catalog.
func built(st *catalog.Store) bool {
	_, ok := st.Built()
	return ok
}

// checkSecret finds the key hash. It never puts the hash, or any part of it, in a message.
func (r *ServiceAccountReconciler) checkSecret(ctx context.Context, sa *metav1alpha1.ServiceAccount) (*catalog.Problem, error) {
	ref := sa.Spec.APIKeySecretRef
	key := apikey.HashKey(sa)
	var secret corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: sa.Namespace, Name: ref.Name}, &secret); err != nil {
		if strings.Contains(err.Error(), "unknown namespace for the cache") {
			return &catalog.Problem{Reason: metav1alpha1.ReasonSecretNotFound, Message: fmt.Sprintf(
				"the operator reads no Secrets in namespace %q (see its --api-key-namespaces, or the chart's rbac.apiKeyNamespaces)",
				sa.Namespace)}, nil
		}
		if apierrors.IsNotFound(err) {
			return &catalog.Problem{Reason: metav1alpha1.ReasonSecretNotFound, Message: fmt.Sprintf(
				"Secret %q not found in namespace %q (the operator reads only Secrets labelled %s=true)",
				ref.Name, sa.Namespace, metav1alpha1.LabelAPIKey)}, nil
		}
		return nil, err
	}
	hash, ok := secret.Data[key]
	if !ok {
		return &catalog.Problem{Reason: metav1alpha1.ReasonKeyNotFound,
			Message: fmt.Sprintf("Secret %q has no key %q", ref.Name, key)}, nil
	}
	if _, err := bcrypt.Cost(hash); err != nil {
		return &catalog.Problem{Reason: metav1alpha1.ReasonInvalidHash, Message: fmt.Sprintf(
			"key %q of Secret %q is not a bcrypt hash; store the hash of the API key, never the key", key, ref.Name)}, nil
	}
	return nil, nil
}

// serviceNameConflict reports what else uses the account's service name. An older
// ServiceAccount of its namespace keeps it (DuplicateServiceName: this one is not
// ready). Accounts of other namespaces share it (ServiceNameShared): every one stays
// ready, and its namespaced token names it alone.
func (r *ServiceAccountReconciler) serviceNameConflict(ctx context.Context, sa *metav1alpha1.ServiceAccount) *catalog.Problem {
	var list metav1alpha1.ServiceAccountList
	if err := r.List(ctx, &list, client.MatchingFields{indexAccountService: sa.Spec.ServiceName}); err != nil {
		return nil
	}
	var others []string
	for i := range list.Items {
		other := &list.Items[i]
		switch {
		case other.Namespace == sa.Namespace && other.Name == sa.Name:
		case other.Namespace == sa.Namespace:
			if catalog.Older(other, sa) {
				return &catalog.Problem{Reason: metav1alpha1.ReasonDuplicateService, Message: fmt.Sprintf(
					"service name %q is already used by ServiceAccount %s/%s", sa.Spec.ServiceName, other.Namespace, other.Name)}
			}
		default:
			others = append(others, other.Namespace+"/"+other.Name)
		}
	}
	if len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	if len(others) > maxNamed {
		others = append(others[:maxNamed], fmt.Sprintf("%d more", len(others)-maxNamed))
	}
	return &catalog.Problem{Reason: metav1alpha1.ReasonServiceNameShared, Message: fmt.Sprintf(
		"service name %q is also used in other namespaces (ServiceAccount %s); the token %s:<key> names this account "+
			"alone, and %s:<key> is checked against the keys of the %d oldest accounts that use the name",
		sa.Spec.ServiceName, strings.Join(others, ", "), sa.Namespace+"/"+sa.Spec.ServiceName, sa.Spec.ServiceName, catalog.MaxClaimants)}
}

// maxNamed bounds the accounts a condition's message names.
const maxNamed = 3

func serviceAccountStatus(sa *metav1alpha1.ServiceAccount, secret, conflict *catalog.Problem) metav1alpha1.ServiceAccountStatus {
	conds := newConditions(sa.Status.Conditions, sa.Generation)
	conds.setProblem(metav1alpha1.ConditionSecretResolved, secret, metav1alpha1.ReasonResolved, "the API key hash is readable")
	if conflict != nil {
		conds.set(metav1alpha1.ConditionNameConflict, true, conflict.Reason, conflict.Message)
	} else {
		conds.set(metav1alpha1.ConditionNameConflict, false, metav1alpha1.ReasonNoConflict, "")
	}
	ready := secret
	switch {
	case ready != nil:
	case conflict != nil && conflict.Reason != metav1alpha1.ReasonServiceNameShared:
		ready = conflict
	case badGlob(sa) != nil:
		ready = badGlob(sa)
	case sa.Spec.Active != nil && !*sa.Spec.Active:
		ready = &catalog.Problem{Reason: metav1alpha1.ReasonInactive, Message: "the account is deactivated (spec.active is false)"}
	}
	conds.setProblem(metav1alpha1.ConditionReady, ready, metav1alpha1.ReasonReady,
		fmt.Sprintf("clients can authenticate as %q", sa.Namespace+"/"+sa.Spec.ServiceName))
	return metav1alpha1.ServiceAccountStatus{ObservedGeneration: sa.Generation, Conditions: conds.list}
}

// badGlob reports the first of the account's tool permissions that is not a valid
// glob: it matches no tool, so the account would silently lack what it grants.
func badGlob(sa *metav1alpha1.ServiceAccount) *catalog.Problem {
	for _, g := range sa.Spec.Permissions.Tools {
		if _, err := path.Match(g, ""); err != nil {
			return &catalog.Problem{Reason: metav1alpha1.ReasonInvalid, Message: fmt.Sprintf(
				"spec.permissions.tools %q is not a valid glob (path.Match syntax: *, ?, [a-z], \\ escapes): %v; "+
					"it would match no tool, so the account is not served until it is fixed", g, err)}
		}
	}
	return nil
}

// SetupWithManager registers the reconciler: an account is reconciled again when its
// Secret changes or another account claims or frees its service name.
func (r *ServiceAccountReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr)
	if r.ClientLimits != nil && r.Store != nil {
		// The tools an account is served follow the catalog: every account is checked
		// again when a new snapshot is published.
		changes := make(chan crevent.GenericEvent, 1)
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return followCatalog(ctx, r.Store, changes)
		})); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(changes, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ client.Object) []reconcile.Request { return r.all(ctx) })))
	}
	return b.
		For(&metav1alpha1.ServiceAccount{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, o client.Object) []reconcile.Request {
				return requestsFor(ctx, r.Client, &metav1alpha1.ServiceAccountList{}, indexAccountSecret, o.GetName(),
					client.InNamespace(o.GetNamespace()))
			})).
		Watches(&metav1alpha1.ServiceAccount{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, o client.Object) []reconcile.Request {
				return requestsFor(ctx, r.Client, &metav1alpha1.ServiceAccountList{}, indexAccountService,
					o.(*metav1alpha1.ServiceAccount).Spec.ServiceName)
			})).
		Complete(r)
}

// all are requests for every ServiceAccount.
func (r *ServiceAccountReconciler) all(ctx context.Context) []reconcile.Request {
	var list metav1alpha1.ServiceAccountList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing ServiceAccounts")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, sa := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sa)})
	}
	return out
}

// accountRecheckInterval is the least time between two checks of every account
// against the catalog. A metamodel applied at once publishes a snapshot for about
// every Class, each with one tool more: checking (and writing the status of) every
// account for each would make as many status writes, and each makes the account's
// clients verify their key again on their next request.
const accountRecheckInterval = time.Second

// followCatalog sends an event on changes for each snapshot the store publishes, at
// most one per accountRecheckInterval (the first after a quiet one at once); one
// waiting event stands for any number of snapshots.
func followCatalog(ctx context.Context, store *catalog.Store, changes chan<- crevent.GenericEvent) error {
	var sent time.Time
	for {
		_, changed := store.Watch()
		select {
		case changes <- crevent.GenericEvent{Object: &metav1alpha1.ServiceAccount{}}:
		default:
		}
		sent = time.Now()
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		if wait := accountRecheckInterval - time.Since(sent); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
	}
}
