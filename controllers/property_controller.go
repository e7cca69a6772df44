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

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// PropertyReconciler validates Properties.
type PropertyReconciler struct {
	client.Client
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=properties,verbs=get;list;watch
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=properties/status,verbs=get;update;patch

// Reconcile validates one Property and writes its status.
func (r *PropertyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p metav1alpha1.Property
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := p.DeepCopy()
	p.Status = propertyStatus(&p, catalog.ValidateProperty(&p, cacheLookup{ctx, r.Client}))
	return ctrl.Result{}, patchStatus(ctx, r.Client, r.Recorder, &p, orig, orig.Status, p.Status,
		orig.Status.Conditions, p.Status.Conditions)
}

func propertyStatus(p *metav1alpha1.Property, problem *catalog.Problem) metav1alpha1.PropertyStatus {
	conds := newConditions(p.Status.Conditions, p.Generation)
	invalid, unresolved := problem, problem
	if problem != nil && problem.Reason == metav1alpha1.ReasonUnknownClass {
		invalid = nil
	} else {
		unresolved = nil
	}
	conds.setProblem(metav1alpha1.ConditionValid, invalid, metav1alpha1.ReasonValid, "")
	if p.Spec.Range == metav1alpha1.RangeRef {
		conds.setProblem(metav1alpha1.ConditionReferencesResolved, unresolved, metav1alpha1.ReasonResolved,
			fmt.Sprintf("target Class %q exists", p.Spec.Target))
	} else {
		conds.remove(metav1alpha1.ConditionReferencesResolved)
	}
	conds.setProblem(metav1alpha1.ConditionReady, problem, metav1alpha1.ReasonReady, "the Property can be used as a slot")
	return metav1alpha1.PropertyStatus{
		ObservedGeneration: p.Generation,
		Field:              catalog.FieldName(p),
		Conditions:         conds.list,
	}
}

// SetupWithManager registers the reconciler: a ref Property is reconciled again when
// its target Class comes or goes.
func (r *PropertyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&metav1alpha1.Property{}).
		Watches(&metav1alpha1.Class{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, o client.Object) []reconcile.Request {
				return requestsFor(ctx, r.Client, &metav1alpha1.PropertyList{}, indexPropertyTarget, o.GetName())
			})).
		Complete(r)
}
