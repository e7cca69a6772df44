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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SubjectRef names the instance a process is about.
type SubjectRef struct {
	// class is the name of the instance's Class.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class"`

	// name of the instance.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the instance; empty: the process's. A person's process names it:
	// people's processes live apart from the namespaces they work in.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// CancelRequest asks for a process to be cancelled. The workflow's cancellation guard
// decides; the outcome is in status.cancellation.
type CancelRequest struct {
	// reason for the cancellation, recorded in the history.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// requestedBy names who asked (a ServiceAccount or a user).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RequestedBy string `json:"requestedBy,omitempty"`
}

// What a process runs (definition, subject, input), for whom (owner) and within what
// budget (resultBudget) are fixed at creation; only cancelRequest and
// ttlSecondsAfterFinished may change. A rule on a field runs only while the field is
// there, so the rules of the optional fields are on the spec, where adding or
// removing one is a change too. The input, any JSON value, has no CEL type, so no
// rule here can see it: the admission policy on processes keeps it (config/admission,
// the chart's admissionPolicies.builtinProcesses).
// +kubebuilder:validation:XValidation:rule="has(self.subject) == has(oldSelf.subject) && (!has(self.subject) || self.subject == oldSelf.subject)",message="subject is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.owner) == has(oldSelf.owner) && (!has(self.owner) || self.owner == oldSelf.owner)",message="owner is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.resultBudget) == has(oldSelf.resultBudget) && (!has(self.resultBudget) || self.resultBudget == oldSelf.resultBudget)",message="resultBudget is immutable"

// WorkflowProcessSpec starts a run of a WorkflowDefinition.
type WorkflowProcessSpec struct {
	// definition is the name of the WorkflowDefinition this process runs.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="definition is immutable"
	Definition string `json:"definition"`

	// subject is the instance the process is about, if any.
	// +optional
	Subject *SubjectRef `json:"subject,omitempty"`

	// input is the process's arguments, any JSON value.
	// +optional
	Input *apiextensionsv1.JSON `json:"input,omitempty"`

	// owner is the ServiceAccount (in this namespace) that started the process; as an
	// MCP task the process is visible only to it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Owner string `json:"owner,omitempty"`

	// resultBudget is the most the result of a built-in process may hold, in bytes: its
	// status's result and, for an export, the chunks it stores, as stored. The manager
	// sets it when it starts a built-in job for an account with a byte limit
	// (--max-process-bytes-per-account), from the room the account had left, and the
	// account counts it as held while the job runs; a job that would hold more fails.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ResultBudget int64 `json:"resultBudget,omitempty"`

	// ttlSecondsAfterFinished deletes the process this long after it ends.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int64 `json:"ttlSecondsAfterFinished,omitempty"`

	// cancelRequest, once set, asks for the process to be cancelled.
	// +optional
	CancelRequest *CancelRequest `json:"cancelRequest,omitempty"`
}

// ProcessPhase summarises where a process is.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Cancelled
type ProcessPhase string

const (
	PhasePending   ProcessPhase = "Pending"
	PhaseRunning   ProcessPhase = "Running"
	PhaseSucceeded ProcessPhase = "Succeeded"
	PhaseFailed    ProcessPhase = "Failed"
	PhaseCancelled ProcessPhase = "Cancelled"
)

// HistoryEntry records one step of a process.
type HistoryEntry struct {
	// from is the state before the step (empty for the start).
	// +optional
	From string `json:"from,omitempty"`
	// to is the state after the step.
	To string `json:"to"`
	// transition is the name of the transition taken (empty for the start).
	// +optional
	Transition string `json:"transition,omitempty"`
	// actor is who made the step.
	// +optional
	Actor string `json:"actor,omitempty"`
	// time of the step.
	Time metav1.Time `json:"time"`
	// reason given for the step.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// Progress of a long-running process.
type Progress struct {
	// done is the number of items handled so far.
	Done int64 `json:"done"`
	// total is the number of items, when known.
	// +optional
	Total int64 `json:"total,omitempty"`
	// message describes the current step.
	// +optional
	Message string `json:"message,omitempty"`
}

// CancellationStatus is the outcome of a cancel request.
type CancellationStatus struct {
	// accepted is true when the process was cancelled.
	Accepted bool `json:"accepted"`
	// reason a request was refused: already-completed, not-cancellable or
	// no-cancel-transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains the outcome.
	// +optional
	Message string `json:"message,omitempty"`
}

// WorkflowProcessStatus is where a process is.
type WorkflowProcessStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase summarises the process: Pending, Running, Succeeded, Failed or Cancelled.
	// +optional
	Phase ProcessPhase `json:"phase,omitempty"`

	// state is the workflow state the process is in.
	// +optional
	State string `json:"state,omitempty"`

	// statusMessage is a human-readable description of the current status.
	// +optional
	StatusMessage string `json:"statusMessage,omitempty"`

	// history of the steps taken, oldest first; long histories keep the newest entries.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	History []HistoryEntry `json:"history,omitempty"`

	// progress of long-running work.
	// +optional
	Progress *Progress `json:"progress,omitempty"`

	// cursor lets long-running work resume where it stopped.
	// +optional
	Cursor string `json:"cursor,omitempty"`

	// result of the process once it ended, any JSON value.
	// +optional
	Result *apiextensionsv1.JSON `json:"result,omitempty"`

	// cancellation is the outcome of spec.cancelRequest.
	// +optional
	Cancellation *CancellationStatus `json:"cancellation,omitempty"`

	// startTime is when the process entered its initial state.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the process reached a terminal state.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// conditions: Ready and others.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkflowProcess is one run of a WorkflowDefinition, and the durable form of an MCP task.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wfp,categories=sandbar
// +kubebuilder:printcolumn:name="Definition",type=string,JSONPath=`.spec.definition`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Owner",type=string,priority=1,JSONPath=`.spec.owner`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.statusMessage`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkflowProcess struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec starts the run.
	// +required
	Spec WorkflowProcessSpec `json:"spec"`

	// status is where the run is.
	// +optional
	Status WorkflowProcessStatus `json:"status,omitempty"`
}

// WorkflowProcessList is a list of WorkflowProcesses.
// +kubebuilder:object:root=true
type WorkflowProcessList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkflowProcess `json:"items"`
}
