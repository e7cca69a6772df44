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
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// ClassReconciler resolves Classes (parents, effective slots) and keeps the generated
// CRD of every concrete Class.
type ClassReconciler struct {
	client.Client
	// APIReader reads past the cache, which holds only the CRDs Sandbar generated.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// ClientLimits, when set, measures the class's own tool (the ClientLimits condition).
	ClientLimits ClientLimits

	// created are the Classes whose CRD this reconciler created and has not yet
	// seen established, with when it created it (see establishGrace).
	created sync.Map
}

// establishGrace is how long after creating a Class's CRD the reconciler waits for
// the API server to establish it before the Class's status says Establishing. The
// CRD's watch reconciles the Class again as soon as it is established, usually
// within a moment: its status is then written once, Ready, not first Establishing
// and then Ready (a status write and an Event fewer for each new Class, which a
// metamodel of hundreds applied at once waits on).
const establishGrace = 5 * time.Second

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=classes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=classes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=classes/finalizers,verbs=update
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=properties,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile resolves one Class, applies its instance API and writes its status.
func (r *ClassReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var class metav1alpha1.Class
	if err := r.Get(ctx, req.NamespacedName, &class); err != nil {
		r.created.Delete(req.Name)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !class.DeletionTimestamp.IsZero() {
		r.created.Delete(req.Name)
		return ctrl.Result{}, r.finalize(ctx, &class)
	}
	if err := r.syncFinalizer(ctx, &class); err != nil {
		// Deleted since the cache was read: its delete event ends it.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	resolved := catalog.ResolveClass(&class, cacheLookup{ctx, r.Client})
	api, applyErr := r.reconcileInstanceAPI(ctx, &class, resolved)
	if wait := r.establishing(&class, api, applyErr); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.writeStatus(ctx, &class, resolved, api); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, applyErr
}

// establishing is how much longer the status of a Class whose CRD this reconciler
// just created waits for the CRD to be established (0: write it now).
func (r *ClassReconciler) establishing(class *metav1alpha1.Class, api instanceAPIOutcome, applyErr error) time.Duration {
	at, ok := r.created.Load(class.Name)
	if !ok {
		return 0
	}
	if applyErr == nil && api.conflict == nil && api.problem != nil && api.problem.Reason == metav1alpha1.ReasonEstablishing {
		if wait := establishGrace - time.Since(at.(time.Time)); wait > 0 {
			return wait
		}
	}
	r.created.Delete(class.Name)
	return 0
}

// syncFinalizer keeps the finalizer on exactly the Classes whose CRD is deleted with them.
func (r *ClassReconciler) syncFinalizer(ctx context.Context, class *metav1alpha1.Class) error {
	want := class.Spec.InstanceAPI.DeletionPolicy == metav1alpha1.DeletionPolicyDelete
	if want == controllerutil.ContainsFinalizer(class, metav1alpha1.FinalizerInstanceAPI) {
		return nil
	}
	orig := class.DeepCopy()
	if want {
		controllerutil.AddFinalizer(class, metav1alpha1.FinalizerInstanceAPI)
	} else {
		controllerutil.RemoveFinalizer(class, metav1alpha1.FinalizerInstanceAPI)
	}
	return r.Patch(ctx, class, client.MergeFrom(orig))
}

// classWorkers is how many Classes are reconciled at once. A reconcile spends most
// of its time waiting on the API server (the CRD's create, the status patch), so a
// metamodel applied at once is served in the time of its slowest Classes rather
// than the sum of them all. One Class is never reconciled twice at once.
const classWorkers = 8

// SetupWithManager registers the reconciler: a Class is reconciled again when one of
// its ancestors, one of its Properties or its generated CRD changes.
func (r *ClassReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		WithOptions(controller.Options{MaxConcurrentReconciles: classWorkers}).
		For(&metav1alpha1.Class{}).
		Watches(&metav1alpha1.Class{}, handler.EnqueueRequestsFromMapFunc(r.dependentsOfClass)).
		Watches(&metav1alpha1.Property{}, handler.EnqueueRequestsFromMapFunc(r.classesUsingProperty)).
		Watches(&apiextensionsv1.CustomResourceDefinition{},
			handler.EnqueueRequestsFromMapFunc(classOfCRD),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetLabels()[metav1alpha1.LabelClass] != ""
			}))).
		Complete(r)
}

// dependentsOfClass are the descendants of a Class and the Classes that claim the same
// instance API: their resolution depends on it.
func (r *ClassReconciler) dependentsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	class := o.(*metav1alpha1.Class)
	out := r.descendants(ctx, class.Name)
	for _, index := range []struct{ name, value string }{{indexClassCRD, crdNameOf(class)}, {indexClassIdent, identOf(class)}} {
		for _, req := range requestsFor(ctx, r.Client, &metav1alpha1.ClassList{}, index.name, index.value) {
			if req.Name != class.Name {
				out = append(out, req)
			}
		}
	}
	return out
}

func (r *ClassReconciler) classesUsingProperty(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, req := range requestsFor(ctx, r.Client, &metav1alpha1.ClassList{}, indexClassProperty, o.GetName()) {
		out = append(out, req)
		out = append(out, r.descendants(ctx, req.Name)...)
	}
	return out
}

// descendants lists every Class that inherits, directly or not, from name.
func (r *ClassReconciler) descendants(ctx context.Context, name string) []reconcile.Request {
	seen := map[string]bool{name: true}
	var out []reconcile.Request
	queue := []string{name}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, req := range requestsFor(ctx, r.Client, &metav1alpha1.ClassList{}, indexClassParent, next) {
			if !seen[req.Name] {
				seen[req.Name] = true
				out = append(out, req)
				queue = append(queue, req.Name)
			}
		}
	}
	return out
}

func classOfCRD(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetLabels()[metav1alpha1.LabelClass]}}}
}
