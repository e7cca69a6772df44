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

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Field indexes: a change to one object finds the objects that depend on it.
const (
	indexClassParent       = "spec.parents"
	indexClassProperty     = "spec.slots.property"
	indexClassCRD          = "instanceAPI.crdName"
	indexClassIdent        = "spec.ident"
	indexPropertyTarget    = "spec.target"
	indexWorkflowSubject   = "spec.subjectClass"
	indexAccountSecret     = "spec.apiKeySecretRef.name"
	indexAccountService    = "spec.serviceName"
	indexProcessDefinition = "spec.definition"
)

// SetupIndexes registers the field indexes the reconcilers use.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	for _, f := range []struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}{
		{&metav1alpha1.Class{}, indexClassParent, func(o client.Object) []string {
			return o.(*metav1alpha1.Class).Spec.Parents
		}},
		{&metav1alpha1.Class{}, indexClassProperty, func(o client.Object) []string {
			var out []string
			for _, s := range o.(*metav1alpha1.Class).Spec.Slots {
				out = append(out, s.Property)
			}
			return out
		}},
		{&metav1alpha1.Class{}, indexClassCRD, func(o client.Object) []string {
			return []string{crdNameOf(o.(*metav1alpha1.Class))}
		}},
		{&metav1alpha1.Class{}, indexClassIdent, func(o client.Object) []string {
			return []string{identOf(o.(*metav1alpha1.Class))}
		}},
		{&metav1alpha1.Property{}, indexPropertyTarget, func(o client.Object) []string {
			if t := o.(*metav1alpha1.Property).Spec.Target; t != "" {
				return []string{t}
			}
			return nil
		}},
		{&metav1alpha1.WorkflowDefinition{}, indexWorkflowSubject, func(o client.Object) []string {
			if s := o.(*metav1alpha1.WorkflowDefinition).Spec.SubjectClass; s != "" {
				return []string{s}
			}
			return nil
		}},
		{&metav1alpha1.WorkflowProcess{}, indexProcessDefinition, func(o client.Object) []string {
			return []string{o.(*metav1alpha1.WorkflowProcess).Spec.Definition}
		}},
		{&metav1alpha1.ServiceAccount{}, indexAccountSecret, func(o client.Object) []string {
			return []string{o.(*metav1alpha1.ServiceAccount).Spec.APIKeySecretRef.Name}
		}},
		{&metav1alpha1.ServiceAccount{}, indexAccountService, func(o client.Object) []string {
			return []string{o.(*metav1alpha1.ServiceAccount).Spec.ServiceName}
		}},
	} {
		if err := idx.IndexField(ctx, f.obj, f.field, f.fn); err != nil {
			return err
		}
	}
	return nil
}

// crdNameOf is the name of the CRD a Class would generate, whether or not it does.
func crdNameOf(c *metav1alpha1.Class) string {
	return catalog.NamesFor(&catalog.Class{
		Prefix: c.Spec.Prefix, Kind: c.Spec.Kind, InstanceAPIOptions: c.Spec.InstanceAPI,
	}).CRDName
}

// identOf is a Class's name in the metamodel, prefix/Kind: its tool name derives
// from it, so two Classes cannot share it.
func identOf(c *metav1alpha1.Class) string { return c.Spec.Prefix + "/" + c.Spec.Kind }

// requestsFor lists the objects whose field has the given value, as requests.
func requestsFor(ctx context.Context, c client.Client, list client.ObjectList, field, value string, opts ...client.ListOption) []reconcile.Request {
	if err := c.List(ctx, list, append(opts, client.MatchingFields{field: value})...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing dependents", "field", field, "value", value)
		return nil
	}
	var out []reconcile.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		m := o.(client.Object)
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
		return nil
	})
	return out
}
