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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The decisions a person writes into an Approval.
const (
	DecisionApprove = "Approve"
	DecisionDeny    = "Deny"
)

// The phases of an Approval.
const (
	// ApprovalPending: the call waits for its approvals.
	ApprovalPending = "Pending"
	// ApprovalApproved: enough people approved; the call is about to run.
	ApprovalApproved = "Approved"
	// ApprovalRunning: the call is running, on one replica.
	ApprovalRunning = "Running"
	// ApprovalDone: the call ran (its task has the tool's answer).
	ApprovalDone = "Done"
	// ApprovalDenied: a person it names denied the call; nothing ran.
	ApprovalDenied = "Denied"
	// ApprovalExpired: the approvals did not come in time; nothing ran.
	ApprovalExpired = "Expired"
	// ApprovalWithdrawn: the caller cancelled its task; nothing ran.
	ApprovalWithdrawn = "Withdrawn"
	// ApprovalFailed: the call could not run as approved (its account is gone,
	// the replica running it stopped).
	ApprovalFailed = "Failed"
)

// LabelCallDigest on an Approval is the first 63 characters of its call's digest:
// the same call made again finds the approval it waits for.
const LabelCallDigest = "meta.sandbar.dev/call-digest"

// LabelGuards on a ValidatingAdmissionPolicy names what it guards: "approvals" for
// the policy that binds an Approval's decision to the person who makes it.
const LabelGuards = "meta.sandbar.dev/guards"

// HeldCall is the call an Approval holds, as the manager recorded it.
type HeldCall struct {
	// tool is the tool called, as served; canonical its dotted name.
	// +kubebuilder:validation:MaxLength=128
	Tool string `json:"tool"`
	// +kubebuilder:validation:MaxLength=256
	Canonical string `json:"canonical"`
	// arguments are the call's arguments as JSON, with what looks like a
	// credential redacted (the task keeps them whole).
	// +kubebuilder:validation:MaxLength=65536
	Arguments string `json:"arguments"`
	// digest is the SHA-256 of the call as made (the caller, the tool and its
	// arguments in a canonical form): the call runs only while its task holds the
	// call with this digest.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest"`
	// account is the Sandbar account that called (namespace/name); user and groups
	// the Kubernetes identity it acts as. None of them may approve the call.
	// +kubebuilder:validation:MaxLength=317
	Account string `json:"account"`
	// +kubebuilder:validation:MaxLength=253
	User string `json:"user"`
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Groups []string `json:"groups,omitempty"`
	// taskID is the task (WorkflowProcess) that waits, in this namespace.
	// +kubebuilder:validation:MaxLength=63
	TaskID string `json:"taskId"`
}

// HoldingPolicy is the policy and rule that hold a call.
type HoldingPolicy struct {
	// kind is CallPolicy or ClusterCallPolicy; namespace is a CallPolicy's.
	// +kubebuilder:validation:MaxLength=32
	Kind string `json:"kind"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=63
	Rule string `json:"rule"`
	// message is the rule's word on why the call needs a person.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// ApprovalDecision is one person's decision, written by that person: the admission
// policy of approvals admits it only with the user and groups the API server knows
// them by, and only from someone granted the verb approve on the Approval.
type ApprovalDecision struct {
	// decision: Approve or Deny.
	// +kubebuilder:validation:Enum=Approve;Deny
	Decision string `json:"decision"`
	// user and groups of the person who decides.
	// +kubebuilder:validation:MaxLength=253
	User string `json:"user"`
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Groups []string `json:"groups,omitempty"`
	// reason, for the caller and the audit.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
	// time of the decision.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// ApprovalSpec is a call held for a person's approval, and the decisions on it.
// +kubebuilder:validation:XValidation:rule="self.call == oldSelf.call && self.policy == oldSelf.policy && self.approvers == oldSelf.approvers && self.expiresAt == oldSelf.expiresAt",message="an Approval's call, policy, approvers and expiry are immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.decisions) || (has(self.decisions) && size(self.decisions) >= size(oldSelf.decisions) && oldSelf.decisions.all(d, d in self.decisions))",message="decisions are only added, never changed or removed"
type ApprovalSpec struct {
	// call is the call that waits.
	Call HeldCall `json:"call"`
	// policy is what holds it.
	Policy HoldingPolicy `json:"policy"`
	// approvers are who may decide, and how many must approve.
	Approvers ApproverSet `json:"approvers"`
	// expiresAt is when the call stops waiting: unapproved by then, it never runs.
	ExpiresAt metav1.Time `json:"expiresAt"`
	// decisions are the people's, in the order they were made (kubectl sandbar
	// approve|deny, or a patch that adds one). The caller's own do not count.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Decisions []ApprovalDecision `json:"decisions,omitempty"`
}

// ApproverSet says who may approve a held call, and how many different people
// must.
type ApproverSet struct {
	// users who may decide (Kubernetes user names).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Users []string `json:"users,omitempty"`
	// groups whose members may decide.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Groups []string `json:"groups,omitempty"`
	// count is how many different people must approve (default 1).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	Count int32 `json:"count,omitempty"`
}

// ApprovalStatus is what came of an Approval.
type ApprovalStatus struct {
	// phase: Pending, Approved, Running, Done, Denied, Expired, Withdrawn or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// approvedBy are the people whose approvals counted; deniedBy the one whose
	// denial ended it.
	// +optional
	ApprovedBy []string `json:"approvedBy,omitempty"`
	// +optional
	DeniedBy string `json:"deniedBy,omitempty"`
	// message says what came of it: why it waits, who decided, what the call
	// answered.
	// +optional
	Message string `json:"message,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Approval is a tool call a call policy holds for a person's approval: the call as
// made (its task keeps it, bound by its digest), who may decide, until when, and the
// decisions. People decide with kubectl (kubectl sandbar approve|deny NAME, or a
// patch that adds a decision), which takes the verb approve on approvals; the
// caller's own identity never counts. Approved, the call runs once, exactly as made,
// and answers its task. Made only by a Sandbar manager.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=apv,categories=sandbar
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Tool",type=string,JSONPath=`.spec.call.tool`
// +kubebuilder:printcolumn:name="Caller",type=string,JSONPath=`.spec.call.account`
// +kubebuilder:printcolumn:name="Rule",type=string,JSONPath=`.spec.policy.rule`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Approval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ApprovalSpec   `json:"spec"`
	Status ApprovalStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ApprovalList is a list of Approvals.
type ApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Approval `json:"items"`
}
