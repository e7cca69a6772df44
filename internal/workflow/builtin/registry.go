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

// Package builtin is the registry of the built-in workflows: long-running jobs that
// the WorkflowProcess controller carries out itself, one chunk at a time, resumable
// from a cursor kept in the process's status. Each job is one entry of the list in
// Jobs; the names IsBuiltin knows, the WorkflowDefinitions the manager keeps in the
// cluster and what the controller runs all derive from it.
//
// The jobs read and write instances through the API and encode them with the codec,
// so they live beside the engine rather than in it: package workflow stays a pure
// state machine, and ends a job's process here like any other.
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

// jobs is the registry: one entry per built-in workflow, in the order of Jobs.
var jobs = []Job{validateJob, exportJob, importJob}

// Job is a built-in workflow.
type Job struct {
	// Name is the name of its WorkflowDefinition, which processes name as theirs.
	Name string
	// Description is its WorkflowDefinition's description.
	Description string
	// StartedBy is the canonical name of the MCP verb that starts it (its own
	// permission governs who may): the generic start-process verb refuses the job
	// and names this one.
	StartedBy string
	// Input is the type a process's spec.input is decoded into (ValidateInput, ...).
	Input reflect.Type
	// Step does one chunk, from the run's cursor, with the input as spec.input holds
	// it, and reports whether the job is done. A failure (failf) ends the process as
	// failed; any other error leaves it running, to be tried again.
	Step func(ctx context.Context, env Env, input []byte, run *Run) (done bool, err error)
	// Summary is the message a process ends with, from its result.
	Summary func(Result) string
}

// newJob declares a job whose step takes its input as the type In.
func newJob[In any](name, startedBy, description string, step func(context.Context, Env, In, *Run) (bool, error), summary func(Result) string) Job {
	return Job{
		Name:        name,
		StartedBy:   startedBy,
		Description: description,
		Input:       reflect.TypeFor[In](),
		Step: func(ctx context.Context, env Env, input []byte, run *Run) (bool, error) {
			var in In
			if len(input) > 0 {
				if err := json.Unmarshal(input, &in); err != nil {
					return false, failf("the input is not valid: %v", err)
				}
			}
			return step(ctx, env, in, run)
		},
		Summary: summary,
	}
}

// Env is what a step works with.
type Env struct {
	// Client reads and writes instances.
	Client client.Client
	// Snapshot is the catalog as the step starts.
	Snapshot *catalog.Snapshot
	// Namespace is the process's namespace: the instances a job reads and writes are there.
	Namespace string
	// Process is the process's name, and ProcessUID its uid (which owns the chunks
	// of a stored result).
	Process    string
	ProcessUID types.UID
	// Results keeps the items of an export outside the process's status; an export
	// fails without it.
	Results *ResultStore
	// Budget is the most the process's result may hold, as its account's byte limit
	// counts it (the process's spec.resultBudget; 0: no budget): an export that
	// would hold more fails.
	Budget int64
}

func (e Env) processRef() ProcessRef {
	return ProcessRef{Namespace: e.Namespace, Name: e.Process, UID: e.ProcessUID}
}

// Run is a job between its chunks, as the process's status keeps it.
type Run struct {
	Cursor   Cursor
	Result   Result
	Progress *metav1alpha1.Progress
}

// Cursor is where a job resumes: which class of its list, which API page, or which
// bundle item.
type Cursor struct {
	Class    int    `json:"c,omitempty"`
	Continue string `json:"k,omitempty"`
	Item     int    `json:"i,omitempty"`
	// Mark is where an export's stored result stood when it began its current
	// class: a class scanned again from its start drops what it stored since.
	Mark *Mark `json:"m,omitempty"`
}

// Mark is how many chunks an export had stored when it began the class Class.
type Mark struct {
	Class  int `json:"c"`
	Chunks int `json:"n"`
}

// Result is a job's result so far, as JSON values.
type Result map[string]any

func (r Result) num(key string) float64 {
	switch v := r[key].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	return 0
}

func (r Result) count(key string) int { return int(r.num(key)) }

// appendCapped appends to a list of the result up to maxRecorded entries.
func (r Result) appendCapped(key string, v any) {
	list, _ := r[key].([]any)
	if len(list) < maxRecorded {
		r[key] = append(list, v)
	}
}

const (
	// chunk is how many instances one step handles.
	chunk = 100
	// maxRecorded bounds the failures and errors a result lists.
	maxRecorded = 200
)

// failure is an error that ends a process as failed: the job cannot go on, whatever
// a later attempt would meet.
type failure struct{ message string }

func (f *failure) Error() string { return f.message }

func failf(format string, args ...any) error {
	return &failure{message: fmt.Sprintf(format, args...)}
}

// Jobs are the built-in workflows.
func Jobs() []Job { return slices.Clone(jobs) }

// Lookup is the built-in workflow of a definition's name.
func Lookup(definition string) (Job, bool) {
	i := slices.IndexFunc(jobs, func(j Job) bool { return j.Name == definition })
	if i < 0 {
		return Job{}, false
	}
	return jobs[i], true
}

// Prefix begins the name of every built-in workflow. Names with it are reserved: no
// account defines one, and the chart's admission policy admits processes of them
// only from the manager.
const Prefix = "sandbar."

// Reserved reports whether a workflow name is reserved for the built-in workflows.
func Reserved(name string) bool { return strings.HasPrefix(name, Prefix) }

// IsBuiltin reports whether a definition is carried out by the server (a job the
// controller runs, or an approval): none is started or moved by a caller's verb.
func IsBuiltin(definition string) bool {
	_, ok := Lookup(definition)
	return ok || definition == Approval
}

// The states and transitions of every built-in workflow.
const (
	stateRunning = "running"
	succeed      = "succeed"
	fail         = "fail"
)

// Definitions are the WorkflowDefinitions of the built-in workflows, which the
// manager keeps in the cluster.
func Definitions() []*metav1alpha1.WorkflowDefinition {
	out := make([]*metav1alpha1.WorkflowDefinition, 0, len(jobs)+1)
	for _, j := range jobs {
		out = append(out, j.Definition())
	}
	return append(out, ApprovalDefinition())
}

// Definition is the job's WorkflowDefinition: running, then succeeded, failed or
// cancelled.
func (j Job) Definition() *metav1alpha1.WorkflowDefinition {
	return &metav1alpha1.WorkflowDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Labels: map[string]string{metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue}},
		Spec: metav1alpha1.WorkflowDefinitionSpec{
			Description: j.Description,
			Initial:     stateRunning,
			States: []metav1alpha1.WorkflowState{
				{Name: stateRunning, Description: "The operation is in progress."},
				{Name: "succeeded", Terminal: metav1alpha1.TerminalSuccess},
				{Name: "failed", Terminal: metav1alpha1.TerminalFailure},
				{Name: "cancelled", Terminal: metav1alpha1.TerminalCancelled},
			},
			Transitions: []metav1alpha1.WorkflowTransition{
				{Name: succeed, From: []string{stateRunning}, To: "succeeded"},
				{Name: fail, From: []string{stateRunning}, To: "failed"},
				{Name: "cancel", From: []string{stateRunning}, To: "cancelled"},
			},
		},
	}
}

// Advance does one chunk of the job for process p and records it in p's status: the
// cursor, result and progress it reached, or the end, succeeded with the job's
// summary or failed with the reason. more reports whether another chunk remains.
// After an error other than a failure, p's status is as it was.
func (j Job) Advance(ctx context.Context, env Env, w *catalog.Workflow, p *metav1alpha1.WorkflowProcess, now metav1.Time) (more bool, err error) {
	run := resume(&p.Status)
	var input []byte
	if p.Spec.Input != nil {
		input = p.Spec.Input.Raw
	}
	done, err := j.Step(ctx, env, input, run)
	var f *failure
	switch {
	case errors.As(err, &f):
		return false, Fail(w, p, f.message, now)
	case apierrors.IsForbidden(err):
		// The account's Kubernetes identity lacks a permission: trying again will not help.
		return false, Fail(w, p, "forbidden: "+err.Error(), now)
	case err != nil:
		return false, err
	}
	if err := save(&p.Status, run); err != nil {
		return false, err
	}
	if n := len(p.Status.Result.Raw); n > MaxResultBytes {
		// Not stored whole, nor in part: a cut result would read as a complete one.
		p.Status.Result = nil
		return false, Fail(w, p, fmt.Sprintf("the result is larger than %d KiB (%d KiB), the most a process keeps; "+
			"nothing was kept: split the work into smaller runs", MaxResultBytes>>10, n>>10), now)
	}
	if done {
		p.Status.Cursor = ""
		return false, workflow.Transition(w, &p.Status, succeed, "sandbar", j.Summary(run.Result), now)
	}
	return true, nil
}

// Fail ends a built-in process as failed, with the reason as its message.
func Fail(w *catalog.Workflow, p *metav1alpha1.WorkflowProcess, reason string, now metav1.Time) error {
	p.Status.Cursor = ""
	return workflow.Transition(w, &p.Status, fail, "sandbar", reason, now)
}

// resume reads a run back from status; a cursor or result that does not parse starts
// afresh.
func resume(st *metav1alpha1.WorkflowProcessStatus) *Run {
	run := &Run{Result: Result{}, Progress: st.Progress.DeepCopy()}
	if st.Cursor != "" {
		_ = json.Unmarshal([]byte(st.Cursor), &run.Cursor)
	}
	if st.Result != nil {
		_ = json.Unmarshal(st.Result.Raw, &run.Result)
	}
	if run.Result == nil {
		run.Result = Result{}
	}
	return run
}

func save(st *metav1alpha1.WorkflowProcessStatus, run *Run) error {
	cursor, err := json.Marshal(run.Cursor)
	if err != nil {
		return err
	}
	result, err := json.Marshal(run.Result)
	if err != nil {
		return err
	}
	st.Cursor = string(cursor)
	st.Result = &apiextensionsv1.JSON{Raw: result}
	st.Progress = run.Progress
	return nil
}
