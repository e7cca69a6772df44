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

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// catalogKey is the one request of the catalog reconciler: every change of the
// metamodel enqueues it, and the work queue folds bursts of changes into one rebuild.
var catalogKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "catalog"}}

// CatalogReconciler publishes the resolved metamodel into the catalog. It runs on
// every replica, not only the leader: every replica serves MCP from its own catalog.
type CatalogReconciler struct {
	client.Reader
	Store *catalog.Store
	// DefaultServiceAccount is the Kubernetes ServiceAccount of accounts that name none.
	DefaultServiceAccount string
	// builder resolves again only what changed since the previous reconcile.
	builder catalog.Builder
}

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=classes;properties;workflowdefinitions;serviceaccounts,verbs=get;list;watch

// Reconcile rebuilds the snapshot from the cache (what changed) and publishes it if
// it changed.
func (r *CatalogReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var in struct {
		classes    metav1alpha1.ClassList
		properties metav1alpha1.PropertyList
		workflows  metav1alpha1.WorkflowDefinitionList
		accounts   metav1alpha1.ServiceAccountList
	}
	// The cache's own objects, not copies: the build only reads them (a copy of
	// every Class on every change was most of a burst's reconciles).
	for _, l := range []client.ObjectList{&in.classes, &in.properties, &in.workflows, &in.accounts} {
		if err := r.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return ctrl.Result{}, err
		}
	}
	snap := r.builder.Build(catalog.Inputs{
		Classes:         in.classes.Items,
		Properties:      in.properties.Items,
		Workflows:       in.workflows.Items,
		ServiceAccounts: in.accounts.Items,

		DefaultServiceAccount: r.DefaultServiceAccount,
	})
	if r.Store.Publish(snap) {
		ctrl.LoggerFrom(ctx).V(1).Info("catalog published", "version", snap.Version,
			"classes", len(snap.Classes), "properties", len(snap.Properties), "workflows", len(snap.Workflows))
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler.
func (r *CatalogReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{catalogKey}
	})
	needLeader := false
	return ctrl.NewControllerManagedBy(mgr).
		Named("catalog").
		WithOptions(controller.Options{NeedLeaderElection: &needLeader, MaxConcurrentReconciles: 1}).
		Watches(&metav1alpha1.Class{}, all).
		Watches(&metav1alpha1.Property{}, all).
		Watches(&metav1alpha1.WorkflowDefinition{}, all).
		Watches(&metav1alpha1.ServiceAccount{}, all).
		// One build once the caches have synced, also when the cluster holds nothing
		// to watch: the store is then built (empty), and the MCP server ready.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(catalogKey)
			return nil
		})).
		Complete(r)
}
