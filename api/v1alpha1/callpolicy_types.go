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

// What a rule of a call policy does when its expression is true.
const (
	// ActionDeny refuses the call: the model reads the rule's message, which names
	// the policy.
	ActionDeny = "Deny"
	// ActionRequireApproval holds the call for a person's approval (an Approval):
	// it neither runs nor fails until people the rule names decide.
	ActionRequireApproval = "RequireApproval"
	// ActionAudit records the call and lets it run.
	ActionAudit = "Audit"
)

// How a policy's decisions are applied.
const (
	// EnforcementEnforce applies each rule's action.
	EnforcementEnforce = "Enforce"
	// EnforcementAudit records what each rule would do and lets every call run: a
	// policy tried on live traffic first.
	EnforcementAudit = "Audit"
)

// What a call meets while its policy cannot be applied.
const (
	// FailurePolicyFail refuses the calls the policy matches while it does not
	// compile, or when a rule fails at run time (fail closed).
	FailurePolicyFail = "Fail"
	// FailurePolicyIgnore lets them run (fail open).
	FailurePolicyIgnore = "Ignore"
)

// ConditionCompiled is True when every rule of a call policy compiled within the
// cost limit.
const ConditionCompiled = "Compiled"

// ReasonCompileError and ReasonTooCostly say why a call policy did not compile.
const (
	ReasonCompiled     = "Compiled"
	ReasonCompileError = "CompileError"
	ReasonTooCostly    = "TooCostly"
)

// CallPolicySpec says which tool calls a policy governs and what its rules do
// with them. It is shaped like a ValidatingAdmissionPolicy's: match, then rules
// written in CEL, each with an action.
type CallPolicySpec struct {
	// match selects the calls the rules see; an empty match selects every call (of
	// the policy's namespace, for a CallPolicy).
	// +optional
	Match CallMatch `json:"match,omitempty"`
	// rules are evaluated in order for a matched call. Each whose expression is
	// true takes its action: a Deny ends the evaluation.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Rules []CallRule `json:"rules"`
	// enforcement: Enforce (default) applies each rule's action; Audit only records
	// what each would do (the status counts it, the audit log names it), so a policy
	// can be tried on live traffic first.
	// +kubebuilder:validation:Enum=Enforce;Audit
	// +kubebuilder:default=Enforce
	// +optional
	Enforcement string `json:"enforcement,omitempty"`
	// failurePolicy is what a matched call meets while the policy cannot be applied
	// (a rule does not compile, costs too much, or fails at run time): Fail (default)
	// refuses it, naming the policy; Ignore lets it run. A policy is never applied in
	// part: with one rule broken, none of its rules apply.
	// +kubebuilder:validation:Enum=Fail;Ignore
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy string `json:"failurePolicy,omitempty"`
}

// CallMatch selects calls. Each field that is set must match (and), and within a
// field any entry may (or).
type CallMatch struct {
	// tools are globs over tool names, as served (sandbar_entity_delete) or dotted
	// (sandbar.entity.delete, sandbar.class.order.Order), as in permissions.tools:
	// * matches any run of characters but /.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Tools []string `json:"tools,omitempty"`
	// verbs are what calls do: create, update, delete, read, start, transition,
	// cancel, import, export, validate, define.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Enum=create;update;delete;read;start;transition;cancel;import;export;validate;define
	// +optional
	Verbs []string `json:"verbs,omitempty"`
	// classes are classes as prefix/Kind (order/Order); a call on a subclass matches
	// too. A call that names no class does not match a policy that names classes.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Classes []string `json:"classes,omitempty"`
	// namespaceSelector matches the labels of the namespace the call acts in (env=prod).
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// accounts are Sandbar ServiceAccounts as namespace/name (a person signed in
	// with OAuth: the OAuth namespace/oauth_*); * matches any run of characters but
	// /, so team-a/* is every account of team-a.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Accounts []string `json:"accounts,omitempty"`
	// users are the Kubernetes users calls act as: a person's (oidc:alice), or a
	// Kubernetes ServiceAccount's (system:serviceaccount:team-a:agent).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Users []string `json:"users,omitempty"`
	// groups are Kubernetes groups: a call whose identity is in any matches.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// CallRule is one rule of a policy.
type CallRule struct {
	// name names the rule in messages, the audit log and the status.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// expression is CEL that is true when the rule's action applies. It sees call
	// (tool, verb, class, namespace, name, arguments, attributes, and object: the
	// stored instance, for update and delete), identity (account, user, groups,
	// client) and request (revision, time). An empty expression is always true.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Expression string `json:"expression,omitempty"`
	// action: Deny, RequireApproval or Audit.
	// +kubebuilder:validation:Enum=Deny;RequireApproval;Audit
	Action string `json:"action"`
	// message is what the caller is told when the rule denies or holds a call; the
	// server adds the policy's and the rule's names.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// approval says who may approve a call the rule holds, how many must, and for
	// how long it waits (RequireApproval only, which needs it).
	// +optional
	Approval *ApprovalRequirement `json:"approval,omitempty"`
}

// ApprovalRequirement says who may approve a held call, how many must, and how long
// the call waits.
type ApprovalRequirement struct {
	ApproverSet `json:",inline"`
	// expiresAfter is how long the call waits for its approvals (default 1h, at most
	// 7 days).
	// +optional
	ExpiresAfter *metav1.Duration `json:"expiresAfter,omitempty"`
}

// PolicyDecision is a call a policy decided on.
type PolicyDecision struct {
	// time of the decision.
	Time metav1.Time `json:"time"`
	// tool called (served name).
	Tool string `json:"tool"`
	// account (namespace/name) or person (user) that called it.
	Identity string `json:"identity"`
	// rule that decided ("" when the policy could not be applied).
	Rule string `json:"rule"`
	// action the rule took (under Audit enforcement: would have taken).
	Action string `json:"action"`
}

// CallPolicyStatus is what the manager makes of a policy, and the decisions it
// took.
type CallPolicyStatus struct {
	// observedGeneration is the generation the conditions speak for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// matched counts the calls the policy matched, since it was created.
	// +optional
	Matched int64 `json:"matched"`
	// denied counts the calls a Deny rule refused (under Audit enforcement: would
	// have refused).
	// +optional
	Denied int64 `json:"denied"`
	// held counts the calls a RequireApproval rule held for approval (under Audit
	// enforcement: would have held).
	// +optional
	Held int64 `json:"held"`
	// audited counts the calls an Audit rule recorded, and every decision under
	// Audit enforcement.
	// +optional
	Audited int64 `json:"audited"`
	// lastDecision is the newest call a rule decided on.
	// +optional
	LastDecision *PolicyDecision `json:"lastDecision,omitempty"`
	// conditions: Ready, Compiled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CallPolicy governs the tool calls made in its namespace: rules in CEL over the
// call's arguments and the caller's identity deny a call, hold it for a person's
// approval, or record it. RBAC says which objects an identity may touch; a call
// policy says what it may do with a tool. ClusterCallPolicy is the same for calls in
// every namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cpol,categories=sandbar
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcement`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matched`
// +kubebuilder:printcolumn:name="Denied",type=integer,JSONPath=`.status.denied`
// +kubebuilder:printcolumn:name="Held",type=integer,JSONPath=`.status.held`
// +kubebuilder:printcolumn:name="Last",type=string,JSONPath=`.status.lastDecision.rule`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CallPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CallPolicySpec   `json:"spec"`
	Status CallPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CallPolicyList is a list of CallPolicies.
type CallPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CallPolicy `json:"items"`
}

// ClusterCallPolicy governs the tool calls made in every namespace (see CallPolicy).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ccpol,categories=sandbar
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcement`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matched`
// +kubebuilder:printcolumn:name="Denied",type=integer,JSONPath=`.status.denied`
// +kubebuilder:printcolumn:name="Held",type=integer,JSONPath=`.status.held`
// +kubebuilder:printcolumn:name="Last",type=string,JSONPath=`.status.lastDecision.rule`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterCallPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CallPolicySpec   `json:"spec"`
	Status CallPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterCallPolicyList is a list of ClusterCallPolicies.
type ClusterCallPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterCallPolicy `json:"items"`
}
