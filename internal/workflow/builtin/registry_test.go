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

package builtin_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

func TestEveryJobIsDeclaredWhole(t *testing.T) {
	jobs := builtin.Jobs()
	if len(jobs) == 0 {
		t.Fatal("no built-in workflows")
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		switch {
		case j.Name == "" || seen[j.Name]:
			t.Errorf("job %q: a name of its own is needed", j.Name)
		case !builtin.Reserved(j.Name):
			t.Errorf("job %s: its name must begin %q, which the admission policy relies on", j.Name, builtin.Prefix)
		case j.StartedBy == "":
			t.Errorf("job %s: the verb that starts it is not named", j.Name)
		case j.Description == "":
			t.Errorf("job %s has no description", j.Name)
		case j.Input == nil || j.Input.Kind() != reflect.Struct:
			t.Errorf("job %s: its input is %v, not a struct type", j.Name, j.Input)
		case j.Step == nil:
			t.Errorf("job %s has no step", j.Name)
		case j.Summary == nil || j.Summary(builtin.Result{}) == "":
			t.Errorf("job %s has no summary", j.Name)
		}
		seen[j.Name] = true
		if got, ok := builtin.Lookup(j.Name); !ok || got.Name != j.Name {
			t.Errorf("Lookup(%q) = %q, %v", j.Name, got.Name, ok)
		}
	}
	for _, name := range []string{builtin.Validate, builtin.Export, builtin.Import} {
		if !seen[name] {
			t.Errorf("%s is not registered", name)
		}
	}
}

func TestIsBuiltinExactlyForTheJobs(t *testing.T) {
	for _, j := range builtin.Jobs() {
		if !builtin.IsBuiltin(j.Name) {
			t.Errorf("IsBuiltin(%q) = false", j.Name)
		}
	}
	for _, name := range []string{"", "sandbar", "sandbar.validate", strings.ToUpper(builtin.Validate), builtin.Export + " ", "order.fulfillment"} {
		if builtin.IsBuiltin(name) {
			t.Errorf("IsBuiltin(%q) = true", name)
		}
	}
}

// The definitions the manager keeps in the cluster: one per job and the approval
// workflow's, valid, and a process of each can be cancelled while it runs (waits).
func TestDefinitionsAreValid(t *testing.T) {
	jobs, defs := builtin.Jobs(), builtin.Definitions()
	if len(defs) != len(jobs)+1 || defs[len(jobs)].Name != builtin.Approval || !builtin.IsBuiltin(builtin.Approval) {
		t.Fatalf("%d definitions for %d jobs and the approval workflow", len(defs), len(jobs))
	}
	for i, d := range defs {
		if i < len(jobs) && (d.Name != jobs[i].Name || d.Spec.Description != jobs[i].Description) {
			t.Errorf("definition %d is %q (%q), job %d is %q (%q)", i, d.Name, d.Spec.Description, i, jobs[i].Name, jobs[i].Description)
		}
		if d.Labels[metav1alpha1.LabelManagedBy] != metav1alpha1.ManagedByValue {
			t.Errorf("definition %s is not labelled as managed by sandbar", d.Name)
		}
		w := catalog.ValidateWorkflow(d, nil)
		if w.Problem != nil {
			t.Errorf("definition %s is not valid: %s", d.Name, w.Problem.Message)
			continue
		}
		if name, _ := workflow.CancelTransition(w, d.Spec.Initial); name == "" {
			t.Errorf("definition %s cannot cancel from %s", d.Name, d.Spec.Initial)
		}
	}
}

// An input that does not decode into the job's input type ends the process as failed,
// with the reason, before the job touches the API.
func TestAJobFailsOnAnInputItCannotRead(t *testing.T) {
	for _, j := range builtin.Jobs() {
		w := catalog.ValidateWorkflow(j.Definition(), nil)
		p := &metav1alpha1.WorkflowProcess{Spec: metav1alpha1.WorkflowProcessSpec{
			Definition: j.Name, Input: &apiextensionsv1.JSON{Raw: []byte(`["not", "an", "object"]`)}}}
		now := metav1.Now()
		workflow.Start(w, &p.Status, "test", now)
		more, err := j.Advance(context.Background(), builtin.Env{}, w, p, now)
		if more || err != nil {
			t.Errorf("%s: Advance = %v, %v; want the end", j.Name, more, err)
		}
		if p.Status.Phase != metav1alpha1.PhaseFailed || !strings.Contains(p.Status.StatusMessage, "the input is not valid") {
			t.Errorf("%s: %s, %q; want failed because the input is not valid", j.Name, p.Status.Phase, p.Status.StatusMessage)
		}
	}
}
