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

package workflow

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// The built-in workflows: long-running operations that the WorkflowProcess
// controller carries out itself, in chunks, resumable from a cursor.
const (
	// Validate checks every instance of a class (subclasses included) against the
	// class's current slots. Input: {"class": "zorp/SpaceBoot"}.
	Validate = "sandbar.validate-instances"
	// Export writes the instances of a class (or all classes) as a bundle.
	// Input: {"class"?: "...", "format"?: "json"|"markdown"}.
	Export = "sandbar.export"
	// Import creates or updates the instances of a bundle, idempotently.
	// Input: {"bundle": {"items": [...]}}.
	Import = "sandbar.import"
)

// Built-in transitions.
const (
	StateRunning = "running"
	Succeed      = "succeed"
	Fail         = "fail"
)

// IsBuiltin reports whether a definition is carried out by the controller.
func IsBuiltin(definition string) bool {
	return definition == Validate || definition == Export || definition == Import
}

// Builtins are the WorkflowDefinitions of the built-in workflows, which the manager
// keeps in the cluster.
func Builtins() []*metav1alpha1.WorkflowDefinition {
	desc := map[string]string{
		Validate: "Validates every instance of a class and its subclasses against the class's current slots, recording each failure.",
		Export:   "Exports the instances of a class, or of all classes, as a bundle in json or markdown.",
		Import:   "Imports a bundle: creates missing instances and updates changed ones, reporting created, updated and failed counts.",
	}
	var out []*metav1alpha1.WorkflowDefinition
	for _, name := range []string{Validate, Export, Import} {
		out = append(out, &metav1alpha1.WorkflowDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue}},
			Spec: metav1alpha1.WorkflowDefinitionSpec{
				Description: desc[name],
				Initial:     StateRunning,
				States: []metav1alpha1.WorkflowState{
					{Name: StateRunning, Description: "The operation is in progress."},
					{Name: "succeeded", Terminal: metav1alpha1.TerminalSuccess},
					{Name: "failed", Terminal: metav1alpha1.TerminalFailure},
					{Name: "cancelled", Terminal: metav1alpha1.TerminalCancelled},
				},
				Transitions: []metav1alpha1.WorkflowTransition{
					{Name: Succeed, From: []string{StateRunning}, To: "succeeded"},
					{Name: Fail, From: []string{StateRunning}, To: "failed"},
					{Name: "cancel", From: []string{StateRunning}, To: "cancelled"},
				},
			},
		})
	}
	return out
}
