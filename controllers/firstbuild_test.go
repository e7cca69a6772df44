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
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// A replica that has just started and leads (a rolling restart) reconciles a running
// built-in process before its catalog is built: the store knows no account yet. The
// process waits for the build; it does not fail as one whose account is gone would.
// (The controllers' envtest suite runs every other case against a real API server;
// there the suite's own manager, whose catalog is built, would take the process.)
func TestABuiltinProcessWaitsForTheCatalogsFirstBuild(t *testing.T) {
	job, _ := builtin.Lookup(builtin.Validate)
	running := &metav1alpha1.WorkflowProcess{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "running-before-a-restart"},
		Spec:       metav1alpha1.WorkflowProcessSpec{Definition: builtin.Validate, Owner: "claude"},
		Status: metav1alpha1.WorkflowProcessStatus{Phase: metav1alpha1.PhaseRunning, State: "running",
			StatusMessage: "in running", Progress: &metav1alpha1.Progress{Done: 100}},
	}
	cl := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(job.Definition(), running).
		WithStatusSubresource(&metav1alpha1.WorkflowProcess{}).Build()
	r := &WorkflowProcessReconciler{Client: cl, Recorder: events.NewFakeRecorder(10), Store: catalog.NewStore()}

	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(running)})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("Reconcile = %+v, want it to look again soon", res)
	}
	var p metav1alpha1.WorkflowProcess
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(running), &p); err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != metav1alpha1.PhaseRunning || p.Status.Progress == nil || p.Status.Progress.Done != 100 {
		t.Errorf("the process is %s (%q), progress %v; want it running as it was", p.Status.Phase, p.Status.StatusMessage, p.Status.Progress)
	}
}

// The same replica checks an account's ClientLimits before its catalog is built: the
// store knows no class, so the account would be within every limit. The condition
// keeps what it said (here, too many tools) until the build is published, rather than
// flip, with an Event each way, on every restart.
func TestAnAccountsClientLimitsWaitForTheCatalogsFirstBuild(t *testing.T) {
	check, err := mcpserver.NewClientCheck(mcpserver.Options{ToolSurface: mcpserver.SurfaceBoth,
		NameStyle: mcpserver.StyleUnderscore, ClientPrefix: mcpserver.DefaultClientPrefix})
	if err != nil {
		t.Fatal(err)
	}
	exceeds := metav1.Condition{Type: metav1alpha1.ConditionClientLimits, Status: metav1.ConditionFalse,
		Reason: metav1alpha1.ReasonTooManyTools, Message: "the account is served more tools than its clients take",
		ObservedGeneration: 1, LastTransitionTime: metav1.Now()}
	sa := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claude", Generation: 1},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: "claude", ServiceAccountName: "claude",
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "claude-key"}},
		Status: metav1alpha1.ServiceAccountStatus{Conditions: []metav1.Condition{exceeds}},
	}
	cl := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(sa).
		WithStatusSubresource(&metav1alpha1.ServiceAccount{}).Build()
	r := &ServiceAccountReconciler{Client: cl, Recorder: events.NewFakeRecorder(10), Store: catalog.NewStore(), ClientLimits: check}

	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sa)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var got metav1alpha1.ServiceAccount
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(sa), &got); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, metav1alpha1.ConditionClientLimits)
	if c == nil || c.Status != exceeds.Status || c.Reason != exceeds.Reason {
		t.Errorf("ClientLimits = %+v, want it as it was: %s %s", c, exceeds.Status, exceeds.Reason)
	}
}
