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

// Package v1alpha1 holds the Sandbar metamodel API: Properties, Classes and
// WorkflowDefinitions describe the model; WorkflowProcesses are runs of workflows
// (and the durable form of MCP tasks); ServiceAccounts are the MCP principals.
//
// +kubebuilder:object:generate=true
// +groupName=meta.sandbar.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of the metamodel kinds.
	GroupVersion = schema.GroupVersion{Group: "meta.sandbar.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the metamodel kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the metamodel kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Property{}, &PropertyList{},
		&Class{}, &ClassList{},
		&WorkflowDefinition{}, &WorkflowDefinitionList{},
		&WorkflowProcess{}, &WorkflowProcessList{},
		&ServiceAccount{}, &ServiceAccountList{},
		&AuthorizationServer{}, &AuthorizationServerList{},
		&CallPolicy{}, &CallPolicyList{},
		&ClusterCallPolicy{}, &ClusterCallPolicyList{},
		&Approval{}, &ApprovalList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
