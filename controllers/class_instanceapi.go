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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
)

// annotationSpecHash on a generated CRD is the hash of the spec Sandbar last wrote,
// so that an unchanged Class does not rewrite its CRD (the API server adds defaults to
// what it stores, which a plain comparison would see as a difference).
const annotationSpecHash = "meta.sandbar.dev/spec-hash"

// instanceAPIOutcome is what became of a Class's instance API in one reconcile.
type instanceAPIOutcome struct {
	// wanted is false for abstract Classes and Classes that opted out.
	wanted bool
	names  catalog.Names
	// conflict is set when another Class or CRD already has the names.
	conflict *catalog.Problem
	// problem is set while the instance API is not served as the Class declares it.
	problem *catalog.Problem
	// exists is true when the Class's CRD exists, up to date or not.
	exists bool
}

func wantsInstanceAPI(class *metav1alpha1.Class) bool {
	enabled := class.Spec.InstanceAPI.Enabled
	return !class.Spec.Abstract && (enabled == nil || *enabled)
}

// reconcileInstanceAPI creates or updates the generated CRD of a resolved, concrete
// Class, refusing breaking changes unless allowed. Problems a person must fix are in
// the outcome; the error is for transient failures worth a retry.
func (r *ClassReconciler) reconcileInstanceAPI(ctx context.Context, class *metav1alpha1.Class, resolved *catalog.Class) (instanceAPIOutcome, error) {
	out := instanceAPIOutcome{wanted: wantsInstanceAPI(class), names: catalog.NamesFor(resolved)}
	if !out.wanted {
		return out, nil
	}
	if resolved.Problem != nil {
		var crd apiextensionsv1.CustomResourceDefinition
		err := r.Get(ctx, client.ObjectKey{Name: out.names.CRDName}, &crd)
		out.exists = err == nil && crd.Labels[metav1alpha1.LabelClass] == class.Name
		out.problem = &catalog.Problem{Reason: metav1alpha1.ReasonDependencyFailed,
			Message: "the instance API waits for the Class's references to resolve"}
		return out, client.IgnoreNotFound(err)
	}
	if out.conflict = r.classConflict(ctx, class); out.conflict != nil {
		return out, nil
	}

	var existing apiextensionsv1.CustomResourceDefinition
	err := r.Get(ctx, client.ObjectKey{Name: out.names.CRDName}, &existing)
	if err != nil && !apierrors.IsNotFound(err) {
		return out, err
	}
	found := err == nil
	out.exists = found
	if found && !existing.DeletionTimestamp.IsZero() {
		// A Class deleted with its instance API and applied again before the API
		// server has removed the CRD (it deletes the instances first, and may take
		// minutes): the deletion runs on, and the CRD's delete event brings the Class
		// back here to make a new one.
		out.problem = &catalog.Problem{Reason: metav1alpha1.ReasonCRDTerminating, Message: fmt.Sprintf(
			"the CRD %s is being deleted; the instance API is made again once the API server has removed it", existing.Name)}
		return out, nil
	}
	if found {
		if owner := existing.Labels[metav1alpha1.LabelClass]; owner != class.Name {
			// The older of two Classes that claim one instance API keeps it, as
			// classConflict decides, even when the younger was reconciled first (they
			// were applied at once) and made the CRD: the older takes it over and the
			// younger reports the conflict.
			if other, ownerExists := (cacheLookup{ctx, r.Client}).Class(owner); ownerExists && !youngerClaimant(other, class) {
				out.conflict = &catalog.Problem{Reason: metav1alpha1.ReasonCRDConflict,
					Message: fmt.Sprintf("the CRD %s is generated from Class %q", out.names.CRDName, owner)}
				return out, nil
			}
		}
	}

	desired := instanceapi.CRD(resolved, r.ancestorKinds(ctx, resolved))
	hash, err := specHash(desired.Spec)
	if err != nil {
		return out, err
	}
	desired.Annotations = map[string]string{annotationSpecHash: hash}
	if !found {
		if err := r.Create(ctx, desired); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return r.crdExistsOutsideCache(ctx, class, out)
			}
			return r.applyFailed(out, resolved, err)
		}
		out.exists = true
		r.created.Store(class.Name, time.Now())
		ctrl.LoggerFrom(ctx).Info("instance API created", "crd", desired.Name)
		event(r.Recorder, class, desired, corev1.EventTypeNormal, "InstanceAPICreated", actionCreateInstanceAPI, "created the CRD "+desired.Name)
		out.problem = establishing(out.names.CRDName)
		return out, nil
	}

	if existing.Annotations[annotationSpecHash] != hash || existing.Labels[metav1alpha1.LabelClass] != class.Name {
		problem, err := r.updateCRD(ctx, class, &existing, desired, hash, resolved)
		if err != nil {
			return r.applyFailed(out, resolved, err)
		}
		if problem != nil {
			out.problem = problem
			return out, nil
		}
	}
	return established(out, &existing), nil
}

// updateCRD brings an existing CRD to desired (its spec, labels and spec hash), unless
// the change would break stored instances and the Class does not allow that: then it
// answers the problem and writes nothing.
func (r *ClassReconciler) updateCRD(ctx context.Context, class *metav1alpha1.Class, existing, desired *apiextensionsv1.CustomResourceDefinition,
	hash string, resolved *catalog.Class) (*catalog.Problem, error) {
	if breaking := instanceapi.BreakingChanges(storedSchema(existing), instanceapi.Schema(resolved)); len(breaking) > 0 &&
		!class.Spec.InstanceAPI.AllowBreakingChanges {
		return &catalog.Problem{Reason: metav1alpha1.ReasonBreakingChange, Message: fmt.Sprintf(
			"refused a change that stored instances may not survive: %s; set spec.instanceAPI.allowBreakingChanges to apply it",
			strings.Join(breaking, "; "))}, nil
	}
	existing.Spec = desired.Spec
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		existing.Labels[k] = v
	}
	if existing.Annotations == nil {
		existing.Annotations = map[string]string{}
	}
	existing.Annotations[annotationSpecHash] = hash
	if err := r.Update(ctx, existing); err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("instance API updated", "crd", existing.Name)
	event(r.Recorder, class, existing, corev1.EventTypeNormal, "InstanceAPIUpdated", actionUpdateInstanceAPI, "updated the CRD "+existing.Name)
	return nil, nil
}

// established reads a CRD's conditions into out: names the API server refused are a
// conflict; until the CRD is Established, the instance API is establishing.
func established(out instanceAPIOutcome, crd *apiextensionsv1.CustomResourceDefinition) instanceAPIOutcome {
	for _, c := range crd.Status.Conditions {
		switch {
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			out.conflict = &catalog.Problem{Reason: metav1alpha1.ReasonCRDConflict,
				Message: fmt.Sprintf("the API server refused the names of %s: %s; change spec.kind or spec.instanceAPI.plural",
					crd.Name, c.Message)}
			return out
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
			return out
		}
	}
	out.problem = establishing(out.names.CRDName)
	return out
}

// youngerClaimant reports whether other claims the same instance API as class and is
// younger than it.
func youngerClaimant(other, class *metav1alpha1.Class) bool {
	return wantsInstanceAPI(other) && crdNameOf(other) == crdNameOf(class) && catalog.Older(class, other)
}

// classConflict reports whether an older Class claims the same instance API or the
// same prefix/Kind (and so the same MCP tool names).
func (r *ClassReconciler) classConflict(ctx context.Context, class *metav1alpha1.Class) *catalog.Problem {
	for _, by := range []struct{ index, value, what, reason string }{
		{indexClassIdent, identOf(class), "the name " + identOf(class) + " (and its MCP tools)", metav1alpha1.ReasonIdentConflict},
		{indexClassCRD, crdNameOf(class), "the instance API " + crdNameOf(class), metav1alpha1.ReasonCRDConflict},
	} {
		var list metav1alpha1.ClassList
		if err := r.List(ctx, &list, client.MatchingFields{by.index: by.value}); err != nil {
			continue
		}
		for i := range list.Items {
			other := &list.Items[i]
			if other.Name != class.Name && wantsInstanceAPI(other) && catalog.Older(other, class) {
				return &catalog.Problem{Reason: by.reason, Message: fmt.Sprintf(
					"Class %q already has %s; change spec.prefix, spec.kind or spec.instanceAPI.plural",
					other.Name, by.what)}
			}
		}
	}
	return nil
}

func (r *ClassReconciler) ancestorKinds(ctx context.Context, c *catalog.Class) []string {
	var kinds []string
	l := cacheLookup{ctx, r.Client}
	for _, a := range c.Ancestors {
		if ac, ok := l.Class(a); ok {
			kinds = append(kinds, ac.Spec.Kind)
		}
	}
	return kinds
}

// applyFailed turns an API server's refusal of a CRD into a problem the Class shows.
// Other errors (a conflict, a timeout) are retried, and the Class keeps its condition
// meanwhile: the CRD it has still serves its instances, and its tools stay served.
func (r *ClassReconciler) applyFailed(out instanceAPIOutcome, resolved *catalog.Class, err error) (instanceAPIOutcome, error) {
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		out.problem = &catalog.Problem{Reason: metav1alpha1.ReasonApplyFailed,
			Message: fmt.Sprintf("the API server refused the CRD %s: %v", out.names.CRDName, err)}
		return out, nil
	case tooLarge(err):
		// Retrying cannot help: a change of the Class or its Properties reconciles again.
		out.problem = &catalog.Problem{Reason: metav1alpha1.ReasonApplyFailed, Message: fmt.Sprintf(
			"the CRD %s is too large for the API server to store (%v); give the class fewer slots "+
				"(it has %d with its ancestors' slots) or shorter descriptions, or set spec.instanceAPI.enabled to false",
			out.names.CRDName, err, len(resolved.Slots))}
		return out, nil
	}
	return out, err
}

// tooLarge reports whether the API server, or etcd behind it, refused an object for
// its size.
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(err.Error(), "request is too large")
}

// crdExistsOutsideCache handles a CRD that exists but that the cache does not show:
// either one the cache has not caught up with yet, or one not generated by Sandbar
// (the cache holds only generated CRDs), which is a conflict.
func (r *ClassReconciler) crdExistsOutsideCache(ctx context.Context, class *metav1alpha1.Class, out instanceAPIOutcome) (instanceAPIOutcome, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: out.names.CRDName}, &crd); err != nil {
		return out, err
	}
	if crd.Labels[metav1alpha1.LabelManagedBy] != metav1alpha1.ManagedByValue {
		out.conflict = &catalog.Problem{Reason: metav1alpha1.ReasonCRDConflict, Message: fmt.Sprintf(
			"the CRD %s already exists and was not generated by Sandbar; change spec.prefix, spec.kind or spec.instanceAPI.plural",
			out.names.CRDName)}
		return out, nil
	}
	out.exists = true
	out.problem = establishing(out.names.CRDName)
	return out, nil
}

func establishing(crd string) *catalog.Problem {
	return &catalog.Problem{Reason: metav1alpha1.ReasonEstablishing,
		Message: fmt.Sprintf("waiting for the API server to serve %s", crd)}
}

func storedSchema(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	return nil
}

func specHash(spec apiextensionsv1.CustomResourceDefinitionSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// finalize deletes the generated CRD of a Class whose deletion policy says so, then
// lets the Class go.
func (r *ClassReconciler) finalize(ctx context.Context, class *metav1alpha1.Class) error {
	if !controllerutil.ContainsFinalizer(class, metav1alpha1.FinalizerInstanceAPI) {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := r.Get(ctx, client.ObjectKey{Name: crdNameOf(class)}, crd)
	switch {
	case err == nil && crd.Labels[metav1alpha1.LabelClass] == class.Name && crd.DeletionTimestamp.IsZero():
		// (A CRD being deleted already was deleted by a pass before this one, which a
		// cache behind the finalizer's removal has run again: no second Event.)
		if err := r.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
			return err
		}
		event(r.Recorder, class, crd, corev1.EventTypeNormal, "InstanceAPIDeleted", actionDeleteInstanceAPI, "deleted the CRD "+crd.Name+" and its instances")
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	orig := class.DeepCopy()
	controllerutil.RemoveFinalizer(class, metav1alpha1.FinalizerInstanceAPI)
	// NotFound: the cache was behind, and the finalizer is already gone with the Class.
	return client.IgnoreNotFound(r.Patch(ctx, class, client.MergeFrom(orig)))
}
