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

// TerminalKind says how a process that reaches a terminal state ended.
// +kubebuilder:validation:Enum=success;failure;cancelled
type TerminalKind string

const (
	TerminalSuccess   TerminalKind = "success"
	TerminalFailure   TerminalKind = "failure"
	TerminalCancelled TerminalKind = "cancelled"
)

// WorkflowState is one state of a workflow.
type WorkflowState struct {
	// name of the state, unique in the workflow.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]*$`
	Name string `json:"name"`

	// description of the state.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// terminal marks a state in which a process ends, and how: success, failure or
	// cancelled. A state without it is not terminal.
	// +optional
	Terminal TerminalKind `json:"terminal,omitempty"`
}

// WorkflowTransition is a named move from one of several states to another.
// A transition into a terminal state of kind cancelled is a cancel transition: a
// process can be cancelled only from its from-states.
type WorkflowTransition struct {
	// name of the transition, unique in the workflow, as "ship".
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]*$`
	Name string `json:"name"`

	// from lists the states the transition may start from.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	From []string `json:"from"`

	// to is the state the transition leads to.
	// +required
	// +kubebuilder:validation:MaxLength=63
	To string `json:"to"`

	// description of the transition.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`
}

// WorkflowArgument is an argument of the workflow's MCP prompt and of starting a process.
type WorkflowArgument struct {
	// name of the argument.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_-]*$`
	Name string `json:"name"`

	// description of the argument.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// required arguments must be given.
	// +optional
	Required bool `json:"required,omitempty"`
}

// WorkflowDefinitionSpec is a state machine.
// +kubebuilder:validation:XValidation:rule="self.states.exists(s, s.name == self.initial)",message="initial must name one of the states"
// +kubebuilder:validation:XValidation:rule="!self.states.exists(s, s.name == self.initial && has(s.terminal))",message="the initial state cannot be terminal"
// +kubebuilder:validation:XValidation:rule="self.states.exists(s, has(s.terminal))",message="at least one state must be terminal (success, failure or cancelled)"
// +kubebuilder:validation:XValidation:rule="!has(self.transitions) || self.transitions.all(t, self.states.exists(s, s.name == t.to))",message="every transition's to must name one of the states"
// +kubebuilder:validation:XValidation:rule="!has(self.transitions) || self.transitions.all(t, t.from.all(f, self.states.exists(s, s.name == f)))",message="every transition's from must name states of the workflow"
type WorkflowDefinitionSpec struct {
	// description of the workflow, shown in its MCP prompt.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`

	// subjectClass is the name of the Class whose instances the workflow is about, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SubjectClass string `json:"subjectClass,omitempty"`

	// initial is the state every process starts in.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Initial string `json:"initial"`

	// states of the workflow; names are unique.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=64
	States []WorkflowState `json:"states"`

	// transitions between the states; names are unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Transitions []WorkflowTransition `json:"transitions,omitempty"`

	// arguments of the workflow's prompt and of starting a process.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Arguments []WorkflowArgument `json:"arguments,omitempty"`

	// namespaces limits who may use the workflow through MCP: only accounts of these
	// namespaces see its prompt and may start its processes
	// (sandbar_workflow_start-process). Empty: every account.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`
}

// WorkflowDefinitionStatus is the observed state of a WorkflowDefinition.
type WorkflowDefinitionStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// terminalStates are the states in which processes end.
	// +optional
	TerminalStates []string `json:"terminalStates,omitempty"`

	// cancellableFrom are the states from which a process can be cancelled.
	// +optional
	CancellableFrom []string `json:"cancellableFrom,omitempty"`

	// stateCount is the number of states.
	// +optional
	StateCount int32 `json:"stateCount,omitempty"`

	// conditions: Valid, ReferencesResolved and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkflowDefinition is a state machine that processes follow. Every
// WorkflowDefinition is also an MCP prompt.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wfd,categories=sandbar
// +kubebuilder:printcolumn:name="Initial",type=string,JSONPath=`.spec.initial`
// +kubebuilder:printcolumn:name="States",type=integer,JSONPath=`.status.stateCount`
// +kubebuilder:printcolumn:name="Subject",type=string,JSONPath=`.spec.subjectClass`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkflowDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the state machine.
	// +required
	Spec WorkflowDefinitionSpec `json:"spec"`

	// status is the definition as validated by the operator.
	// +optional
	Status WorkflowDefinitionStatus `json:"status,omitempty"`
}

// WorkflowDefinitionList is a list of WorkflowDefinitions.
// +kubebuilder:object:root=true
type WorkflowDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkflowDefinition `json:"items"`
}
