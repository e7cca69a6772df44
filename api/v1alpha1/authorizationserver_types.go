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

// The conditions of an AuthorizationServer.
const (
	// ConditionUpstreamReady is True while the identity provider's discovery
	// document is read: people can log in.
	ConditionUpstreamReady = "UpstreamReady"
	// ConditionClientDocumentsReady says how the last client ID metadata document
	// fetched went: True when it was read and checked, False with the reason
	// otherwise, Unknown before the first.
	ConditionClientDocumentsReady = "ClientDocumentsReady"
	// ConditionSigningKeysReady is True while a key signs tokens.
	ConditionSigningKeysReady = "SigningKeysReady"
	// ConditionTrustedIssuersReady is True while the keys of every identity
	// provider whose ID-JAGs the server takes are read; absent when it takes none.
	ConditionTrustedIssuersReady = "TrustedIssuersReady"
)

// TrustedIssuerStatus is an identity provider whose ID-JAGs (Enterprise-Managed
// Authorization) the server takes, and whether its keys are read.
type TrustedIssuerStatus struct {
	// issuer is the provider's URL.
	Issuer string `json:"issuer"`
	// ready is true while its keys are read.
	Ready bool `json:"ready"`
	// message says how many keys it has, or why they are not read.
	// +optional
	Message string `json:"message,omitempty"`
}

// AuthorizationServerStatus is what the manager sees of its authorization server.
type AuthorizationServerStatus struct {
	// issuer is the authorization server's URL.
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// upstream is the identity provider people log in at.
	// +optional
	Upstream string `json:"upstream,omitempty"`
	// registration is "off", or how many clients registered and the limit ("3/1000").
	// +optional
	Registration string `json:"registration,omitempty"`
	// grants is how many grants (a person's consent to a client) exist.
	// +optional
	Grants int32 `json:"grants"`
	// trustedIssuers are the identity providers whose ID-JAGs the server takes.
	// +optional
	// +listType=map
	// +listMapKey=issuer
	TrustedIssuers []TrustedIssuerStatus `json:"trustedIssuers,omitempty"`
	// conditions: Ready, UpstreamReady, ClientDocumentsReady, SigningKeysReady,
	// TrustedIssuersReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AuthorizationServer is the status of the OAuth authorization server the manager
// serves (--oauth-authorization-server): one object in the manager's namespace,
// which the leader writes every 30 s. It holds no configuration; the flags (the
// chart's oauth.authorizationServer) do.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=oas,categories=sandbar
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.status.issuer`
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.status.conditions[?(@.type=="UpstreamReady")].status`
// +kubebuilder:printcolumn:name="Documents",type=string,JSONPath=`.status.conditions[?(@.type=="ClientDocumentsReady")].status`
// +kubebuilder:printcolumn:name="Issuers",type=string,JSONPath=`.status.conditions[?(@.type=="TrustedIssuersReady")].status`
// +kubebuilder:printcolumn:name="Registration",type=string,JSONPath=`.status.registration`
// +kubebuilder:printcolumn:name="Grants",type=integer,JSONPath=`.status.grants`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Trusted",type=string,priority=1,JSONPath=`.status.trustedIssuers[*].issuer`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AuthorizationServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status is the authorization server as the manager sees it.
	// +optional
	Status AuthorizationServerStatus `json:"status,omitempty"`
}

// AuthorizationServerList is a list of AuthorizationServers.
// +kubebuilder:object:root=true
type AuthorizationServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AuthorizationServer `json:"items"`
}
