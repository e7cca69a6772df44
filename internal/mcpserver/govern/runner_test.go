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

package govern

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// A held call whose caller cancels its task while a person's approval is being
// taken does not run: the Approval is withdrawn, and the task stays cancelled.
func TestACallCancelledAsItIsApprovedDoesNotRun(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, metav1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	fail := admissionv1.Fail
	guard := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "approvals", Labels: map[string]string{metav1alpha1.LabelGuards: "approvals"}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "approvals"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "approvals", ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}

	held := builtin.HeldAccount{Namespace: "sandbar-system", Name: "oauth_alice", User: "alice", Tools: []string{"*"}}
	issuer := workflow.NewIssuer(make([]byte, 32))
	a := NewApprovals(nil, nil, process.New(nil, nil, nil, nil, nil, process.Limits{}, nil, issuer), catalog.NewStore(), nil)
	acct, _ := a.accountOf(held)
	args := json.RawMessage(`{"name":"o-1"}`)
	digest := Digest(acct, "sandbar.entity.delete", args)
	in, _ := json.Marshal(builtin.HeldInput{Tool: "sandbar_entity_delete", Arguments: map[string]any{"name": "o-1"}, Digest: digest, Account: held})
	p := &metav1alpha1.WorkflowProcess{ObjectMeta: metav1.ObjectMeta{Namespace: "sandbar-system", Name: "task-1"},
		Spec: metav1alpha1.WorkflowProcessSpec{Definition: builtin.Approval, Owner: held.Name, Input: &apiextensionsv1.JSON{Raw: in}}}
	issuer.Issue(p)
	w := a.workflow()
	workflow.Start(w, &p.Status, "sandbar", metav1.Now())
	ap := &metav1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Namespace: "sandbar-system", Name: "task-1"},
		Spec: metav1alpha1.ApprovalSpec{Call: metav1alpha1.HeldCall{Tool: "sandbar_entity_delete", Canonical: "sandbar.entity.delete", Digest: digest,
			Account: held.Name, User: held.User, TaskID: p.Name}, Approvers: metav1alpha1.ApproverSet{Users: []string{"bob"}},
			Decisions: []metav1alpha1.ApprovalDecision{{User: "bob", Decision: metav1alpha1.DecisionApprove}},
			ExpiresAt: metav1.NewTime(metav1.Now().Add(time.Hour))}}

	// The caller cancels the task the moment the Approval is taken to Running.
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(guard, binding, p.DeepCopy(), ap.DeepCopy()).
		WithStatusSubresource(&metav1alpha1.WorkflowProcess{}, &metav1alpha1.Approval{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
				return err
			}
			if o, ok := obj.(*metav1alpha1.Approval); ok && o.Status.Phase == metav1alpha1.ApprovalRunning {
				var fresh metav1alpha1.WorkflowProcess
				if err := c.Get(ctx, client.ObjectKeyFromObject(p), &fresh); err != nil {
					return err
				}
				if err := workflow.Transition(w, &fresh.Status, "cancel", "alice", "cancelled by its caller", metav1.Now()); err != nil {
					return err
				}
				return c.Status().Update(ctx, &fresh)
			}
			return nil
		}}).Build()
	ran := false
	a.client, a.reader = c, c
	a.run = func(context.Context, *catalog.Account, string, json.RawMessage) (*mcp.CallToolResult, error) {
		ran = true
		return &mcp.CallToolResult{}, nil
	}

	if _, err := a.reconcile(ctx, client.ObjectKeyFromObject(ap), nil); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("the call ran, though its caller had cancelled its task")
	}
	var gotAp metav1alpha1.Approval
	var gotP metav1alpha1.WorkflowProcess
	if err := c.Get(ctx, client.ObjectKeyFromObject(ap), &gotAp); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), &gotP); err != nil {
		t.Fatal(err)
	}
	if gotAp.Status.Phase != metav1alpha1.ApprovalWithdrawn || gotP.Status.Phase != metav1alpha1.PhaseCancelled {
		t.Errorf("the Approval is %s (%s) and its task %s; want Withdrawn and Cancelled", gotAp.Status.Phase, gotAp.Status.Message, gotP.Status.Phase)
	}
}
