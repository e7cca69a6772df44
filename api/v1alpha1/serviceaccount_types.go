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

// SecretKeyRef points at one key of a Secret in the ServiceAccount's namespace.
type SecretKeyRef struct {
	// name of the Secret. The Secret must carry the label meta.sandbar.dev/api-key=true;
	// the operator reads no other Secrets.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret's data whose value is the bcrypt hash of the API key. Beside it,
	// under api-key-id (beside the default api-key-hash) or this key with "-id"
	// appended, create-key and the chart write the key's public id (the first 16 hex
	// characters of its SHA-256): the real key is then verified even while wrong keys
	// from its client's address are being refused, and a wrong one costs no bcrypt then.
	// +optional
	// +kubebuilder:default=api-key-hash
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// Permissions limit what a ServiceAccount can do through MCP.
type Permissions struct {
	// tools are glob patterns (path.Match syntax) of the tool names the account may see
	// and call; they also bound resources, prompts and completions through the tools
	// that do the same. Defaults to every tool; an empty list allows none.
	// A few tools change what every account sees (sandbar_workflow_define,
	// sandbar_schema_define-class, sandbar_schema_define-property) or cannot be undone
	// (sandbar_entity_delete): no glob grants them, not even "*"; the list must name
	// them (as sandbar_workflow_define or sandbar.workflow.define), and a readOnly
	// account never has them.
	// +optional
	// +listType=set
	// +kubebuilder:default={"*"}
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	Tools []string `json:"tools"` // not omitempty: []string{} from a Go client must reach the API server as [] (none), not be left out (every tool, the default)

	// readOnly accounts see and call only tools that change nothing.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`

	// namespaces the account may act in besides its own.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Namespaces []string `json:"namespaces,omitempty"`
}

// ServiceAccountSpec declares an MCP principal.
type ServiceAccountSpec struct {
	// serviceName names the account in its bearer token
	// "<namespace>/<serviceName>:<apiKey>"; unique in the namespace. Accounts of other
	// namespaces may use it too: each namespaced token names one account, and a token
	// "<serviceName>:<apiKey>" (the form before namespaces) is checked against the keys
	// of the 4 oldest accounts that use the name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	ServiceName string `json:"serviceName"`

	// principalName is the name shown for the account in logs, histories and Events.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PrincipalName string `json:"principalName,omitempty"`

	// active set to false locks the account out at once.
	// +optional
	// +kubebuilder:default=true
	Active *bool `json:"active,omitempty"`

	// apiKeySecretRef points at the bcrypt hash of the account's API key. The key
	// itself is never stored.
	// +required
	APIKeySecretRef SecretKeyRef `json:"apiKeySecretRef"`

	// serviceAccountName is the Kubernetes ServiceAccount, in this namespace, that the
	// account acts as: every read and write the operator does for the account is
	// authorized as system:serviceaccount:<namespace>:<serviceAccountName>, so
	// `kubectl auth can-i --as=...` predicts what the account may do. When empty, the
	// manager's --default-service-account (chart value defaultServiceAccount) applies;
	// with neither, the account may only read the metamodel.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// permissions of the account. They narrow what the Kubernetes identity may do,
	// never widen it.
	// +optional
	Permissions Permissions `json:"permissions,omitempty"`

	// clients are the MCP clients that use the account. The account is served at most
	// as many tools as the strictest of them takes (windsurf 50, cursor 80,
	// antigravity 100, vscode 128, claude-ai, claude-desktop and cowork 256; the
	// others declare no limit): past it, the operational verbs, which take the class
	// as an argument, instead of one tool per class. From 80% of it, the ClientLimits
	// condition's reason is NearToolLimit.
	// When empty, each client gets the limit of the client it says it is (its
	// clientInfo name), and a client that says none of these the manager's
	// --default-max-tools (chart value clientLimits.defaultMaxTools).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Enum=antigravity;claude-ai;claude-desktop;claude-code;codex;cowork;cursor;vscode;windsurf;mcp-inspector
	Clients []string `json:"clients,omitempty"`

	// toolsets are the groups of operational verbs tools/list shows the account,
	// beside its per-class tools: core (find, describe, update, delete, start and
	// move a process, the task tools; and, where per-class tools are not served,
	// the generic create with the verb that gives a class's create schema), a verb
	// group by name (schema, class, types, property, codec, entity, tasks,
	// validation, project, workflow: the tools named sandbar_<group>_*), or all.
	// When empty, core. An account whose spec.permissions.tools is a list without
	// "*" is listed every tool it allows, whatever its toolsets. Toolsets choose
	// what is listed, not what is allowed: the account may still call any tool its
	// permissions allow by name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Enum=core;all;schema;class;types;property;codec;entity;tasks;validation;project;workflow
	Toolsets []string `json:"toolsets,omitempty"`

	// confirm: the calls that cannot be undone (sandbar_entity_delete, the
	// metamodel changes of sandbar_schema_define-class and define-property, and a
	// sandbar_project_import that overwrites existing instances) ask the user
	// first: through the client where it can ask (elicitation; on 2026-07-28 an
	// input_required result), else they need the argument confirm: true. false
	// turns the questions off for the account (an agent that runs unattended).
	// +optional
	// +kubebuilder:default=true
	Confirm *bool `json:"confirm,omitempty"`

	// maxTools is the most tools the account is served, whatever its clients.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxTools *int32 `json:"maxTools,omitempty"`
}

// ServiceAccountStatus is the observed state of a ServiceAccount.
type ServiceAccountStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: SecretResolved, NameConflict, ClientLimits and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ServiceAccount is a principal of the MCP server: an AI client or agent that
// authenticates with a bearer token.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcpsa,categories=sandbar
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceName`
// +kubebuilder:printcolumn:name="Principal",type=string,JSONPath=`.spec.principalName`
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.spec.active`
// +kubebuilder:printcolumn:name="Acts as",type=string,priority=1,JSONPath=`.spec.serviceAccountName`
// +kubebuilder:printcolumn:name="Read-only",type=boolean,priority=1,JSONPath=`.spec.permissions.readOnly`
// +kubebuilder:printcolumn:name="Toolsets",type=string,priority=1,JSONPath=`.spec.toolsets`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Clients",type=string,JSONPath=`.status.conditions[?(@.type=="ClientLimits")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServiceAccount struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the principal.
	// +required
	Spec ServiceAccountSpec `json:"spec"`

	// status is the account as checked by the operator.
	// +optional
	Status ServiceAccountStatus `json:"status,omitempty"`
}

// ServiceAccountList is a list of ServiceAccounts.
// +kubebuilder:object:root=true
type ServiceAccountList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceAccount `json:"items"`
}
