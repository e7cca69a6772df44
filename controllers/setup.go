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
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/policy"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// NewScheme knows the built-in kinds, CRDs and the metamodel kinds.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(metav1alpha1.AddToScheme(s))
	return s
}

// CacheOptions keep only what the operator needs in memory: the Secrets that hold API
// key hashes (labelled meta.sandbar.dev/api-key=true), in the given namespaces or all
// of them, and the CRDs it generated; and no object's managedFields, which nothing
// reads (an update without them keeps the stored ones) and which are a large part of
// a generated CRD.
func CacheOptions(apiKeyNamespaces ...string) cache.Options {
	secrets := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{metav1alpha1.LabelAPIKey: "true"})}
	if len(apiKeyNamespaces) > 0 {
		secrets.Namespaces = map[string]cache.Config{}
		for _, ns := range apiKeyNamespaces {
			secrets.Namespaces[ns] = cache.Config{}
		}
	}
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: secrets,
		&apiextensionsv1.CustomResourceDefinition{}: {
			Label: labels.SelectorFromSet(labels.Set{metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue}),
		},
	}}
}

// Options are Sandbar's settings of the reconcilers.
type Options struct {
	// DefaultServiceAccount is the Kubernetes ServiceAccount, in an account's own
	// namespace, that an account naming none acts as (as Flux's
	// --default-service-account). Empty: such an account has no Kubernetes identity.
	DefaultServiceAccount string
	// FinishedProcessTTL deletes a finished WorkflowProcess this long after it ends,
	// unless its spec.ttlSecondsAfterFinished says otherwise (as a Job's does). Zero
	// keeps finished processes until they are deleted.
	FinishedProcessTTL time.Duration
	// ClientLimits measures what the MCP server serves against what MCP clients
	// accept (mcpserver.NewClientCheck, with the server's options); nil: Classes and
	// ServiceAccounts get no ClientLimits condition.
	ClientLimits ClientLimits
	// MaxStoredResultBytes caps the (uncompressed) bytes of one export's result,
	// which is stored in Secrets owned by its process; 0: no cap.
	MaxStoredResultBytes int64
	// TokenKey is the key every replica shares (the MCP server's, --mcp-token-key-file),
	// under which the MCP server seals the processes it starts: a built-in workflow
	// runs only for a process so sealed. Empty: this process's own key.
	TokenKey []byte
	// Policies receives the compiled call policies, which the MCP server decides
	// with (its Options.Policies); nil: a store of their own, read by no one.
	Policies *policy.Store
}

// ClientLimits measures what the MCP server serves against what MCP clients accept.
// Each verdict's reason is ReasonWithinClientLimits when it fits.
type ClientLimits interface {
	// Class is the verdict on a concrete class's own create tool.
	Class(c *catalog.Class) catalog.Problem
	// Account is the verdict on how many tools an account is served of a snapshot.
	Account(snap *catalog.Snapshot, acct *catalog.Account) catalog.Problem
}

// NewManager makes a manager with Sandbar's scheme, cache and REST mapper (unless
// opts sets them), registers every reconciler, and returns it with the catalog they
// publish. The binary and the tests build their managers with it. The REST mapper
// (identity.NewRESTMapper) answers a kind it knows without waiting for a discovery
// in progress, and lets a request wait for one only until its deadline.
func NewManager(ctx context.Context, cfg *rest.Config, opts ctrl.Options, o Options) (ctrl.Manager, *catalog.Store, error) {
	if opts.Scheme == nil {
		opts.Scheme = NewScheme()
	}
	if opts.Cache.ByObject == nil {
		opts.Cache = CacheOptions()
	}
	if opts.MapperProvider == nil {
		opts.MapperProvider = identity.NewRESTMapper
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	store := catalog.NewStore()
	ids := identity.New(identity.ConnectionOf(mgr, opts.NewClient), nil)
	if err := Setup(ctx, mgr, store, o, ids); err != nil {
		return nil, nil, err
	}
	return mgr, store, nil
}

// Setup registers the field indexes and every reconciler with the manager; built-in
// processes act as their accounts through ids.
func Setup(ctx context.Context, mgr ctrl.Manager, store *catalog.Store, o Options, ids *identity.Identities) error {
	if err := SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	rec := mgr.GetEventRecorder("sandbar")
	c := mgr.GetClient()
	if o.Policies == nil {
		o.Policies = &policy.Store{}
	}
	for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&PropertyReconciler{Client: c, Recorder: rec},
		&ClassReconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: rec, ClientLimits: o.ClientLimits},
		&WorkflowDefinitionReconciler{Client: c, Recorder: rec},
		&ServiceAccountReconciler{Client: c, Recorder: rec, ClientLimits: o.ClientLimits, Store: store,
			DefaultServiceAccount: o.DefaultServiceAccount},
		&CatalogReconciler{Reader: c, Store: store, DefaultServiceAccount: o.DefaultServiceAccount},
		&CallPolicyReconciler{Client: c, Recorder: rec, Store: o.Policies, Elected: mgr.Elected()},
		&WorkflowProcessReconciler{Client: c, Recorder: rec, Store: store, Identities: ids, FinishedTTL: o.FinishedProcessTTL,
			Issuer:  workflow.NewIssuer(o.TokenKey),
			Results: &builtin.ResultStore{Client: c, Reader: mgr.GetAPIReader(), MaxBytes: o.MaxStoredResultBytes}},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	// The leader keeps the built-in WorkflowDefinitions in the cluster.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return ensureBuiltins(ctx, mgr.GetClient())
	}))
}

// ensureBuiltins creates the built-in WorkflowDefinitions that are missing and
// restores the ones that were changed.
func ensureBuiltins(ctx context.Context, c client.Client) error {
	for _, want := range builtin.Definitions() {
		var have metav1alpha1.WorkflowDefinition
		err := c.Get(ctx, client.ObjectKeyFromObject(want), &have)
		switch {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, want)
		case err == nil && !equality.Semantic.DeepEqual(have.Spec, want.Spec):
			have.Spec = want.Spec
			err = c.Update(ctx, &have)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("built-in workflow %s: %w", want.Name, err)
		}
	}
	return nil
}
