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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// catalogWait is how often a built-in process looks again whether the catalog is
// built, on a replica that has just started.
const catalogWait = 250 * time.Millisecond

// runJob carries out the chunks of a built-in workflow, if the process is one, as the
// account that owns it: with that account's Kubernetes identity, never the
// manager's, and within the budget its spec sets. A process that names no account
// of its namespace fails. The chunks follow each other within one reconcile for up
// to a second, so that small jobs finish in one status write and large ones save
// their cursor about once a second.
func (r *WorkflowProcessReconciler) runJob(ctx context.Context, p *metav1alpha1.WorkflowProcess, w *catalog.Workflow, now metav1.Time) (ctrl.Result, error) {
	job, ok := builtin.Lookup(p.Spec.Definition)
	if !ok || workflow.Terminal(&p.Status) {
		return ctrl.Result{}, nil
	}
	// A replica that has just started (a new leader, during a rolling restart) can
	// get here before its catalog is first built: its store then knows no account
	// and no class, and the process, however far it went, would fail for that. It
	// waits for the build.
	if !built(r.Store) {
		return ctrl.Result{RequeueAfter: catalogWait}, nil
	}
	if r.Issuer != nil && !r.Issuer.Issued(p) {
		return ctrl.Result{}, builtin.Fail(w, p, fmt.Sprintf("refused: the built-in workflow %s runs only as the Sandbar MCP server started it "+
			"(the process carries no valid seal of a manager, or its spec changed since): start it through MCP", p.Spec.Definition), now)
	}
	snap := r.Store.Load()
	acct := snap.AccountNamed(p.Namespace, p.Spec.Owner)
	if acct == nil || !acct.Active {
		return ctrl.Result{}, builtin.Fail(w, p, fmt.Sprintf("refused: the built-in workflow %s runs only for an active Sandbar account, "+
			"and spec.owner names none of namespace %s; start it through MCP", p.Spec.Definition, p.Namespace), now)
	}
	cl, err := r.Identities.Client(acct)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return ctrl.Result{}, builtin.Fail(w, p, "refused: "+err.Error(), now)
		}
		return ctrl.Result{}, err
	}
	for start := time.Now(); !workflow.Terminal(&p.Status); {
		env := builtin.Env{Client: cl, Snapshot: r.Store.Load(), Namespace: p.Namespace, Process: p.Name, ProcessUID: p.UID,
			Results: r.Results, Budget: p.Spec.ResultBudget}
		more, err := job.Advance(ctx, env, w, p, now)
		if err != nil || !more {
			return ctrl.Result{}, err
		}
		if time.Since(start) > time.Second {
			return ctrl.Result{RequeueAfter: time.Millisecond}, nil // the next chunk, after other work in the queue
		}
	}
	return ctrl.Result{}, nil
}
