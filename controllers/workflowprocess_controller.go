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
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// WorkflowProcessReconciler drives WorkflowProcesses: it starts them in their
// workflow's initial state, applies cancel requests through the cancellation guard,
// carries out the built-in long-running workflows in chunks, and deletes finished
// processes after their TTL. Transitions of other workflows come from clients
// (the MCP workflow tools), which write them through the same engine.
type WorkflowProcessReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Store    *catalog.Store
	// Identities act as the account that started a built-in process: its jobs read and
	// write instances with that account's Kubernetes rights, not the manager's.
	Identities *identity.Identities
	// FinishedTTL deletes a finished process this long after it ends, unless its
	// spec.ttlSecondsAfterFinished says otherwise. Zero keeps such processes.
	FinishedTTL time.Duration
	// Results keeps the items of exports in chunks owned by their processes.
	Results *builtin.ResultStore
	// Issuer tells the processes the MCP server started (sealed) from others: only
	// those of a built-in workflow run.
	Issuer *workflow.Issuer

	// written maps a process to the resourceVersion its last status write replaced,
	// until the cache shows a newer one: a reconcile that meets that version in the
	// cache would start from before the write. The write's watch event brings the
	// reconcile that sees it.
	written sync.Map
}

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=workflowprocesses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=workflowprocesses/status,verbs=get;update;patch
// start-builtin is no API verb: the admission policy on built-in processes admits who holds it.
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=workflowprocesses,verbs=start-builtin
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=workflowdefinitions,verbs=get;list;watch;create;update
// Exports store their items in Secrets of their process's namespace, owned by the process.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create

// Reconcile advances one process. Its status is written on every exit, so that a
// chunk that fails keeps what the chunks before it did.
func (r *WorkflowProcessReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	var p metav1alpha1.WorkflowProcess
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		r.written.Delete(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if before, ok := r.written.Load(req.NamespacedName); ok {
		if before == p.ResourceVersion {
			return ctrl.Result{}, nil // the cache has not seen this replica's last write yet
		}
		r.written.Delete(req.NamespacedName)
	}
	if workflow.Terminal(&p.Status) {
		return r.expire(ctx, &p)
	}
	orig, conds := p.DeepCopy(), newConditions(p.Status.Conditions, p.Generation)
	defer func() {
		if err := r.write(ctx, &p, orig, conds, reterr == nil); err != nil {
			res, reterr = ctrl.Result{}, errors.Join(reterr, err)
		} else if reterr == nil && workflow.Terminal(&p.Status) {
			res, reterr = r.expire(ctx, &p)
		}
	}()
	return r.advance(ctx, &p, conds, metav1.Now())
}

// advance takes a process as far as one reconcile goes: its workflow found, the
// process started, a cancel request applied, a built-in workflow's chunks done.
func (r *WorkflowProcessReconciler) advance(ctx context.Context, p *metav1alpha1.WorkflowProcess, conds *conditions, now metav1.Time) (ctrl.Result, error) {
	w, err := r.workflowOf(ctx, p, conds)
	if w == nil {
		return ctrl.Result{}, err
	}
	if p.Status.Phase == "" {
		workflow.Start(w, &p.Status, actorOf(p), now)
	}
	applyCancelRequest(p, w, now)
	res, err := r.runJob(ctx, p, w, now)
	conds.set(metav1alpha1.ConditionReady, true, metav1alpha1.ReasonReady, p.Status.StatusMessage)
	return res, err
}

// workflowOf is the process's workflow. Without one (its definition missing or not
// valid) Ready says why, and the process waits for its definition.
func (r *WorkflowProcessReconciler) workflowOf(ctx context.Context, p *metav1alpha1.WorkflowProcess, conds *conditions) (*catalog.Workflow, error) {
	var wd metav1alpha1.WorkflowDefinition
	if err := r.Get(ctx, client.ObjectKey{Name: p.Spec.Definition}, &wd); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		conds.set(metav1alpha1.ConditionReady, false, metav1alpha1.ReasonUnknownDefinition,
			fmt.Sprintf("WorkflowDefinition %q does not exist", p.Spec.Definition))
		return nil, nil
	}
	w := catalog.ValidateWorkflow(&wd, cacheLookup{ctx, r.Client})
	if w.Problem != nil && w.Problem.Reason != metav1alpha1.ReasonUnknownClass {
		conds.set(metav1alpha1.ConditionReady, false, metav1alpha1.ReasonDependencyFailed,
			fmt.Sprintf("WorkflowDefinition %q is not valid: %s", wd.Name, w.Problem.Message))
		return nil, nil
	}
	return w, nil
}

// applyCancelRequest applies spec.cancelRequest, once, through the cancellation
// guard. A refusal is recorded in status.cancellation: there is nobody to answer.
func applyCancelRequest(p *metav1alpha1.WorkflowProcess, w *catalog.Workflow, now metav1.Time) {
	c := p.Spec.CancelRequest
	if c == nil || p.Status.Cancellation != nil {
		return
	}
	_ = workflow.CancelProcess(w, p, cmp.Or(c.RequestedBy, actorOf(p)), c.Reason, now)
}

func actorOf(p *metav1alpha1.WorkflowProcess) string {
	if p.Spec.Owner != "" {
		return p.Namespace + "/" + p.Spec.Owner
	}
	return "sandbar"
}

// write updates the status when it changed, with optimistic concurrency: clients
// write transitions too, and a conflict leaves theirs in place for the next
// reconcile to build on. It records an Event when the phase changes.
// observedGeneration moves only when the reconcile succeeded.
func (r *WorkflowProcessReconciler) write(ctx context.Context, p, orig *metav1alpha1.WorkflowProcess, conds *conditions, succeeded bool) error {
	p.Status.Conditions = conds.list
	if succeeded {
		p.Status.ObservedGeneration = p.Generation
	}
	if equality.Semantic.DeepEqual(orig.Status, p.Status) {
		return nil
	}
	if err := r.Status().Update(ctx, p); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.written.Store(client.ObjectKeyFromObject(p), orig.ResourceVersion)
	if orig.Status.Phase != p.Status.Phase {
		typ := corev1.EventTypeNormal
		if p.Status.Phase == metav1alpha1.PhaseFailed {
			typ = corev1.EventTypeWarning
		}
		event(r.Recorder, p, nil, typ, string(p.Status.Phase), actionReconcile, p.Status.StatusMessage)
	}
	return nil
}

// expire deletes a finished process once its TTL has passed: its own
// spec.ttlSecondsAfterFinished, or the default FinishedTTL. Until then it is
// reconciled again when the TTL ends, with no polling.
func (r *WorkflowProcessReconciler) expire(ctx context.Context, p *metav1alpha1.WorkflowProcess) (ctrl.Result, error) {
	ttl, set := r.FinishedTTL, r.FinishedTTL > 0
	if s := p.Spec.TTLSecondsAfterFinished; s != nil {
		ttl, set = time.Duration(*s)*time.Second, true
	}
	if !set || p.Status.CompletionTime == nil {
		return ctrl.Result{}, nil
	}
	left := time.Until(p.Status.CompletionTime.Add(ttl))
	if left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, p))
}

// SetupWithManager registers the reconciler; a process is reconciled again when its
// definition changes.
func (r *WorkflowProcessReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&metav1alpha1.WorkflowProcess{}).
		// Processes are independent, and a built-in one waits on the API server (a
		// consistent list waits up to ~100 ms for the watch cache): run several at once.
		WithOptions(controller.Options{MaxConcurrentReconciles: 8}).
		Watches(&metav1alpha1.WorkflowDefinition{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, o client.Object) []reconcile.Request {
				return requestsFor(ctx, r.Client, &metav1alpha1.WorkflowProcessList{}, indexProcessDefinition, o.GetName())
			})).
		Complete(r)
}
