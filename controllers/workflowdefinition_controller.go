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

// WorkflowDefinitionReconciler validates WorkflowDefinitions.
type WorkflowDefinitionReconciler struct {
	client.Client
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=workflowdefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=workflowdefinitions/status,verbs=get;update;patch

// Reconcile validates one WorkflowDefinition and writes its status.
func (r *WorkflowDefinitionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var wd metav1alpha1.WorkflowDefinition
	if err := r.Get(ctx, req.NamespacedName, &wd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := wd.DeepCopy()
	wd.Status = workflowStatus(&wd, catalog.ValidateWorkflow(&wd, cacheLookup{ctx, r.Client}))
	return ctrl.Result{}, patchStatus(ctx, r.Client, r.Recorder, &wd, orig, orig.Status, wd.Status,
		orig.Status.Conditions, wd.Status.Conditions)
}

func workflowStatus(wd *metav1alpha1.WorkflowDefinition, w *catalog.Workflow) metav1alpha1.WorkflowDefinitionStatus {
	conds := newConditions(wd.Status.Conditions, wd.Generation)
	invalid, unresolved := w.Problem, w.Problem
	if w.Problem != nil && w.Problem.Reason == metav1alpha1.ReasonUnknownClass {
		invalid = nil
	} else {
		unresolved = nil
	}
	conds.setProblem(metav1alpha1.ConditionValid, invalid, metav1alpha1.ReasonValid,
		fmt.Sprintf("%d states, %d transitions", len(wd.Spec.States), len(wd.Spec.Transitions)))
	if wd.Spec.SubjectClass != "" {
		conds.setProblem(metav1alpha1.ConditionReferencesResolved, unresolved, metav1alpha1.ReasonResolved,
			fmt.Sprintf("subject Class %q exists", wd.Spec.SubjectClass))
	} else {
		conds.remove(metav1alpha1.ConditionReferencesResolved)
	}
	conds.setProblem(metav1alpha1.ConditionReady, w.Problem, metav1alpha1.ReasonReady, "processes can run this workflow")
	return metav1alpha1.WorkflowDefinitionStatus{
		ObservedGeneration: wd.Generation,
		TerminalStates:     w.TerminalStates,
		CancellableFrom:    w.CancellableFrom,
		StateCount:         int32(len(wd.Spec.States)),
		Conditions:         conds.list,
	}
}

// SetupWithManager registers the reconciler: a definition is reconciled again when
// its subject Class comes or goes.
func (r *WorkflowDefinitionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&metav1alpha1.WorkflowDefinition{}).
		Watches(&metav1alpha1.Class{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, o client.Object) []reconcile.Request {
				return requestsFor(ctx, r.Client, &metav1alpha1.WorkflowDefinitionList{}, indexWorkflowSubject, o.GetName())
			})).
		Complete(r)
}
