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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// runJob carries out the chunks of a built-in workflow, if the process is one. They
// follow each other within one reconcile for up to a second, so that small jobs
// finish in one status write and large ones save their cursor about once a second.
func (r *WorkflowProcessReconciler) runJob(ctx context.Context, p *metav1alpha1.WorkflowProcess, w *catalog.Workflow, now metav1.Time) (ctrl.Result, error) {
	job, ok := builtin.Lookup(p.Spec.Definition)
	if !ok {
		return ctrl.Result{}, nil
	}
	for start := time.Now(); !workflow.Terminal(&p.Status); {
		env := builtin.Env{Client: r.Client, Snapshot: r.Store.Load(), Namespace: p.Namespace, Process: p.Name}
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
