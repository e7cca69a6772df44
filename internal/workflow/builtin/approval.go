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

package builtin

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Approval is the built-in workflow of a tool call a call policy holds for a
// person's approval: its process is the task the caller follows. It is no job: the
// controller starts it and applies a cancel request, and the MCP server moves it
// (approved, the call runs as its account; denied or expired, it ends) as the
// people's decisions on its Approval come in. No one moves it through MCP.
const Approval = Prefix + "approval"

// The states and transitions of the approval workflow.
const (
	ApprovalWaiting  = "waiting"
	ApprovalRunning  = "running"
	ApproveCall      = "approve"
	DenyCall         = "deny"
	ExpireCall       = "expire"
	SucceedCall      = succeed
	FailCall         = fail
	approvalDenied   = "denied"
	approvalExpired  = "expired"
	approvalFailed   = "failed"
	approvalCanceled = "cancelled"
)

// HeldInput is the input of an approval process: the call as it was made, and the
// account that made it.
type HeldInput struct {
	// Tool is the tool's served name; Arguments its arguments, whole.
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments,omitempty"`
	// Digest is the call's digest, which its Approval names.
	Digest string `json:"digest"`
	// Account is the caller: a ServiceAccount's namespace and name (read again from
	// the catalog when the call runs), or a person's account as it was.
	Account HeldAccount `json:"account"`
}

// HeldAccount is the account a held call runs as.
type HeldAccount struct {
	Namespace      string   `json:"namespace"`
	Name           string   `json:"name"`
	User           string   `json:"user,omitempty"`
	Groups         []string `json:"groups,omitempty"`
	Tools          []string `json:"tools,omitempty"`
	Clients        []string `json:"clients,omitempty"`
	TasksNamespace string   `json:"tasksNamespace,omitempty"`
}

// ApprovalDefinition is the approval workflow's WorkflowDefinition.
func ApprovalDefinition() *metav1alpha1.WorkflowDefinition {
	return &metav1alpha1.WorkflowDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: Approval, Labels: map[string]string{metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue}},
		Spec: metav1alpha1.WorkflowDefinitionSpec{
			Description: "A tool call held by a call policy until the people it names approve it (an Approval of the same name); approved, it runs once, as made.",
			Initial:     ApprovalWaiting,
			States: []metav1alpha1.WorkflowState{
				{Name: ApprovalWaiting, Description: "The call waits for its approvals."},
				{Name: ApprovalRunning, Description: "Approved: the call runs."},
				{Name: "succeeded", Terminal: metav1alpha1.TerminalSuccess},
				{Name: approvalFailed, Terminal: metav1alpha1.TerminalFailure},
				{Name: approvalDenied, Terminal: metav1alpha1.TerminalFailure},
				{Name: approvalExpired, Terminal: metav1alpha1.TerminalFailure},
				{Name: approvalCanceled, Terminal: metav1alpha1.TerminalCancelled},
			},
			Transitions: []metav1alpha1.WorkflowTransition{
				{Name: ApproveCall, From: []string{ApprovalWaiting}, To: ApprovalRunning},
				{Name: DenyCall, From: []string{ApprovalWaiting}, To: approvalDenied},
				{Name: ExpireCall, From: []string{ApprovalWaiting}, To: approvalExpired},
				{Name: SucceedCall, From: []string{ApprovalRunning}, To: "succeeded"},
				{Name: FailCall, From: []string{ApprovalWaiting, ApprovalRunning}, To: approvalFailed},
				{Name: "cancel", From: []string{ApprovalWaiting}, To: approvalCanceled},
			},
		},
	}
}
