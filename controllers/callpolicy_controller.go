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
	"sync"

	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/policy"
)

// policiesKey is the one request of the policy reconciler: a change of any policy
// compiles the set again (what did not change is taken from the last set).
var policiesKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "policies"}}

// CallPolicyReconciler compiles the CallPolicies and ClusterCallPolicies into the
// set the MCP server decides with. It runs on every replica, as the catalog's does:
// every replica decides on the calls it serves. The leader writes each policy's
// Ready and Compiled conditions.
type CallPolicyReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Store    *policy.Store
	// Elected is closed once this replica leads (mgr.Elected()).
	Elected <-chan struct{}

	mu sync.Mutex
	// compiled are the policies of the last set by key, kept while their
	// generation does not change.
	compiled map[string]*policy.Policy
}

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=callpolicies;clustercallpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=callpolicies/status;clustercallpolicies/status,verbs=get;update;patch

// Reconcile compiles every policy and publishes the set; on the leader it writes
// their conditions.
func (r *CallPolicyReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var namespaced metav1alpha1.CallPolicyList
	var cluster metav1alpha1.ClusterCallPolicyList
	if err := r.List(ctx, &namespaced); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.List(ctx, &cluster); err != nil {
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := make(map[string]*policy.Policy, len(namespaced.Items)+len(cluster.Items))
	compile := func(namespace, name string, generation int64, spec metav1alpha1.CallPolicySpec) *policy.Policy {
		p := &policy.Policy{Namespace: namespace, Name: name}
		if last := r.compiled[p.Key()]; last != nil && last.Generation == generation {
			p = last
		} else {
			p = policy.Compile(namespace, name, generation, spec)
		}
		next[p.Key()] = p
		return p
	}
	var status []func() error
	for i := range namespaced.Items {
		o := &namespaced.Items[i]
		p := compile(o.Namespace, o.Name, o.Generation, o.Spec)
		status = append(status, func() error { return r.writeConditions(ctx, o, &o.Status, p) })
	}
	for i := range cluster.Items {
		o := &cluster.Items[i]
		p := compile("", o.Name, o.Generation, o.Spec)
		status = append(status, func() error { return r.writeConditions(ctx, o, &o.Status, p) })
	}
	set := make([]*policy.Policy, 0, len(next))
	for _, p := range next {
		set = append(set, p)
	}
	r.compiled = next
	r.Store.Publish(policy.NewSet(set))
	select {
	case <-r.Elected:
	default:
		return ctrl.Result{}, nil
	}
	for _, write := range status {
		if err := write(); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// writeConditions sets a policy's Ready and Compiled conditions.
func (r *CallPolicyReconciler) writeConditions(ctx context.Context, obj client.Object, st *metav1alpha1.CallPolicyStatus, p *policy.Policy) error {
	orig := obj.DeepCopyObject().(client.Object)
	before := *st
	conds := newConditions(st.Conditions, obj.GetGeneration())
	if p.Err != nil {
		conds.set(metav1alpha1.ConditionCompiled, false, p.Reason, p.Err.Error())
		conds.set(metav1alpha1.ConditionReady, false, p.Reason, "no rule of the policy applies: "+p.Err.Error()+
			"; the calls it matches are "+map[bool]string{true: "let through (failurePolicy Ignore)", false: "refused (failurePolicy Fail)"}[p.FailOpen()])
	} else {
		conds.set(metav1alpha1.ConditionCompiled, true, metav1alpha1.ReasonCompiled, "every rule compiled within the cost limits")
		conds.set(metav1alpha1.ConditionReady, true, metav1alpha1.ReasonReady, "the policy governs the calls it matches ("+cmp.Or(p.Spec.Enforcement, metav1alpha1.EnforcementEnforce)+")")
	}
	st.Conditions, st.ObservedGeneration = conds.list, obj.GetGeneration()
	return patchStatus(ctx, r.Client, r.Recorder, obj, orig, before, *st, before.Conditions, st.Conditions)
}

// SetupWithManager registers the reconciler.
func (r *CallPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{policiesKey}
	})
	// The counts in status change often; only a change of spec (or a new leader,
	// below) compiles the set again.
	spec := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	needLeader := false
	return ctrl.NewControllerManagedBy(mgr).
		Named("callpolicies").
		WithOptions(controller.Options{NeedLeaderElection: &needLeader, MaxConcurrentReconciles: 1}).
		Watches(&metav1alpha1.CallPolicy{}, all, spec).
		Watches(&metav1alpha1.ClusterCallPolicy{}, all, spec).
		WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(policiesKey)
			// Once this replica leads, it writes the conditions the last leader may
			// not have.
			go func() {
				select {
				case <-r.Elected:
					q.Add(policiesKey)
				case <-ctx.Done():
				}
			}()
			return nil
		})).
		Complete(r)
}
