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

package verbs

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

type defineArgs struct {
	Name string                              `json:"name" jsonschema:"The name of the WorkflowDefinition."`
	Spec metav1alpha1.WorkflowDefinitionSpec `json:"spec" jsonschema:"The definition: initial state, states, transitions, subjectClass?, description?, arguments?."`
}

type subjectArgs struct {
	Class string `json:"class" jsonschema:"The class of the subject instance, as prefix/Kind."`
	Name  string `json:"name" jsonschema:"The name of the subject instance."`
}

type startArgs struct {
	Workflow string       `json:"workflow" jsonschema:"The workflow to run."`
	Subject  *subjectArgs `json:"subject,omitempty" jsonschema:"The instance the process is about."`
	Input    any          `json:"input,omitempty" jsonschema:"Any JSON value."`
}

type transitionArgs struct {
	taskArgs
	Transition string `json:"transition" jsonschema:"The transition to take from the current state."`
	Reason     string `json:"reason,omitempty" jsonschema:"Why, for the process's history."`
}

type activeArgs struct {
	Workflow string `json:"workflow,omitempty" jsonschema:"Only processes of this workflow."`
	listArgs
}

type historyArgs struct {
	taskArgs
	listArgs
}

// WorkflowList is a page of the workflow definitions.
type WorkflowList struct {
	Workflows []Workflow `json:"workflows"`
	Page
}

// Defined is the workflow a define call wrote, and the prompt it is served as.
type Defined struct {
	Defined string `json:"defined"`
	Prompt  string `json:"prompt"`
}

// History is a page of the steps of a process.
type History struct {
	TaskID   string                      `json:"taskId"`
	Workflow string                      `json:"workflow"`
	History  []metav1alpha1.HistoryEntry `json:"history"`
	Page
}

func (e *Env) workflowVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "workflow", Name: "find", Title: "Find workflows", ReadOnly: true, Idempotent: true,
			Description: "The workflow definitions: states, transitions, terminal states, cancellation. Paged: {limit?, continue?}."},
			func(_ context.Context, c *tool.Call, in listArgs) (WorkflowList, error) {
				views := []Workflow{}
				for _, n := range c.Snap.WorkflowNames() {
					views = append(views, WorkflowView(c.Snap.Workflows[n]))
				}
				items, pg, err := page(c, views, in, nil)
				return WorkflowList{Workflows: items, Page: pg}, err
			}),
		tool.Verb(tool.Spec{Group: "workflow", Name: "define", Title: "Define a workflow", Destructive: true, Idempotent: true, Explicit: true,
			Description: "Create or replace a workflow definition: {name, spec: {initial, states: [{name, terminal?}], transitions: [{name, from: [...], to}], subjectClass?, description?, namespaces?}}. " +
				"Only the account that created a definition may replace it; spec.namespaces limits which namespaces' accounts may use it (empty: every account)."},
			e.define),
		tool.Verb(tool.Spec{Group: "workflow", Name: "start-process", Title: "Start a process", LongRunning: true,
			Description: "Start a process of a workflow, as a task: {workflow, subject?: {class, name}, input?}. It starts in the initial state; move it with sandbar_workflow_transition. The built-in sandbar.* workflows start with their own tools."},
			func(ctx context.Context, c *tool.Call, in startArgs) (Started, error) {
				if job, ok := builtin.Lookup(in.Workflow); ok {
					return Started{}, tool.Fail("%s is a built-in workflow: start it with %s, which its own permissions govern",
						in.Workflow, tool.Encode(e.Style, job.StartedBy))
				}
				w, ok := c.Snap.Workflows[in.Workflow]
				if !ok || w.Problem != nil {
					return Started{}, tool.Fail("unknown or invalid workflow %q; %s", in.Workflow, tool.Instead(c.Next("sandbar.workflow.find", "list the workflows", nil)))
				}
				if !w.OpenTo(c.Account) {
					return Started{}, tool.Fail("forbidden: %s", w.Closed(c.Account))
				}
				var subject *metav1alpha1.SubjectRef
				if in.Subject != nil {
					if err := e.checkSubject(ctx, c, in.Subject); err != nil {
						return Started{}, err
					}
					subject = &metav1alpha1.SubjectRef{Class: in.Subject.Class, Name: in.Subject.Name}
				}
				return e.started(ctx, c, in.Workflow, in.Input, subject)
			}).Patch(enum("workflow", userWorkflowNames)).PatchFor(openWorkflows("workflow")),
		tool.Verb(tool.Spec{Group: "workflow", Name: "transition", Title: "Move a process",
			Description: "Move a process by a named transition from its current state: {taskId, transition, reason?}."},
			func(ctx context.Context, c *tool.Call, in transitionArgs) (ProcessState, error) {
				p, err := e.Processes.Transition(ctx, c.Account, in.TaskID, in.Transition, in.Reason)
				if err != nil {
					return ProcessState{}, processError(c, in.TaskID, err)
				}
				return stateView(c, p, workflowOf(c.Snap, p)), nil
			}),
		tool.Verb(tool.Spec{Group: "workflow", Name: "process-state", Title: "State of a process", ReadOnly: true, Idempotent: true,
			Description: "The current state of a process and the transitions it can take from there: {taskId}."},
			func(ctx context.Context, c *tool.Call, in taskArgs) (ProcessState, error) {
				p, err := e.freshTask(ctx, c, in.TaskID)
				if err != nil {
					return ProcessState{}, err
				}
				return stateView(c, p, workflowOf(c.Snap, p)), nil
			}),
		tool.Verb(tool.Spec{Group: "workflow", Name: "process-history", Title: "History of a process", ReadOnly: true, Idempotent: true,
			Description: "Every step of a process: from, to, transition, who, when, why: {taskId}. Paged: {limit?, continue?}."},
			func(ctx context.Context, c *tool.Call, in historyArgs) (History, error) {
				p, err := e.freshTask(ctx, c, in.TaskID)
				if err != nil {
					return History{}, err
				}
				items, pg, err := page(c, p.Status.History, in.listArgs, string(p.UID))
				return History{TaskID: p.Name, Workflow: p.Spec.Definition, History: items, Page: pg}, err
			}),
		tool.Verb(tool.Spec{Group: "workflow", Name: "active-processes", Title: "Active processes", ReadOnly: true, Idempotent: true,
			Description: "This account's processes that have not ended: {workflow?}. Paged: {limit?, continue?}."},
			func(ctx context.Context, c *tool.Call, in activeArgs) (ProcessList, error) {
				procs, err := e.Processes.Select(ctx, c.Account, func(p *metav1alpha1.WorkflowProcess) bool {
					return !workflow.Terminal(&p.Status) && (in.Workflow == "" || p.Spec.Definition == in.Workflow)
				}, false)
				if err != nil {
					return ProcessList{}, err
				}
				return processList(c, procs, in.listArgs)
			}),
	}
}

func (e *Env) define(ctx context.Context, c *tool.Call, in defineArgs) (Defined, error) {
	if builtin.IsBuiltin(in.Name) {
		return Defined{}, tool.Fail("%s is a built-in workflow and cannot be redefined", in.Name)
	}
	if builtin.Reserved(in.Name) {
		return Defined{}, tool.Fail("workflow names beginning %q are reserved for the built-in workflows: choose another name", builtin.Prefix)
	}
	spec := in.Spec
	if spec.SubjectClass != "" && c.Snap.Classes[spec.SubjectClass] == nil {
		return Defined{}, tool.Fail("spec.subjectClass: unknown class %q (give the Class's name, as zorp.spaceboot); %s", spec.SubjectClass,
			tool.Instead(c.Next("sandbar.schema.classes", "list the classes", nil)))
	}
	check := spec
	check.SubjectClass = ""
	meta := metav1.ObjectMeta{Name: in.Name}
	if w := catalog.ValidateWorkflow(&metav1alpha1.WorkflowDefinition{ObjectMeta: meta, Spec: check}, nil); w.Problem != nil {
		return Defined{}, tool.Fail("the workflow is not valid: %s", w.Problem.Message)
	}
	kc, err := e.as(c)
	if err != nil {
		return Defined{}, err
	}
	var existing metav1alpha1.WorkflowDefinition
	err = kc.Get(ctx, client.ObjectKey{Name: in.Name}, &existing)
	me := definer(c)
	switch {
	case apierrors.IsNotFound(err):
		meta.Annotations = map[string]string{metav1alpha1.AnnotationDefinedBy: me}
		err = kc.Create(ctx, &metav1alpha1.WorkflowDefinition{ObjectMeta: meta, Spec: spec})
	case err == nil:
		if err := mayRedefine("workflow", in.Name, &existing, me); err != nil {
			return Defined{}, err
		}
		existing.Spec = spec
		err = kc.Update(ctx, &existing)
	}
	if err != nil {
		if apierrors.IsInvalid(err) {
			return Defined{}, tool.Fail("the API server refused the workflow: %s", apiMessage(err))
		}
		return Defined{}, err
	}
	return Defined{Defined: in.Name, Prompt: tool.Encode(e.Style, "sandbar.workflow."+in.Name)}, nil
}

// checkSubject refuses a subject that is not an instance in the account's namespace
// (where its process lives), as a reference to a missing instance is refused. It
// reads as the account: a subject the account may not read is refused too, and says
// nothing of whether it exists.
func (e *Env) checkSubject(ctx context.Context, c *tool.Call, in *subjectArgs) error {
	cl, err := class(c, in.Class)
	if err != nil {
		return err
	}
	kc, err := e.as(c)
	if err != nil {
		return err
	}
	ns := c.Account.Namespace
	found, err := builtin.InstanceExists(ctx, kc, c.Snap, ns, cl.Name, in.Name)
	switch {
	case apierrors.IsForbidden(err):
		return tool.Fail("forbidden: the subject of this process cannot be checked, because this account may not read %s instances in namespace %q; nothing was started", cl.Ident(), ns)
	case err != nil:
		return err
	case !found:
		return tool.Fail("Validation failed for the subject: subject refers to the %s %q in namespace %q, which does not exist. Nothing was started: "+
			"refer to an existing instance or create it first, then start the process again; %s", cl.Ident(), in.Name, ns, missingInstance(c, cl, ns, in.Name))
	}
	return nil
}
