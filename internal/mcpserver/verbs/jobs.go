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
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// The built-in jobs: validation of a class's instances, and export and import of
// instances, each a WorkflowProcess the controller carries out.

type validationRunArgs struct {
	classArgs
	WaitSeconds int64 `json:"waitSeconds,omitempty" jsonschema:"Wait up to this many seconds for the report (default 30)."`
}

type importArgs struct {
	Bundle builtin.Bundle `json:"bundle" jsonschema:"A bundle as sandbar_project_export makes it."`
}

// maxImportItems bounds one import: the bundle is kept in the process's spec.
const maxImportItems = 5000

func (e *Env) validationVerbs() []*tool.Def {
	start := func(group, name, title, desc string) *tool.Def {
		return tool.Verb(tool.Spec{Group: group, Name: name, Title: title, Description: desc, LongRunning: true},
			func(ctx context.Context, c *tool.Call, in classArgs) (Started, error) {
				cl, err := class(c, in.Class)
				if err != nil {
					return Started{}, err
				}
				return e.started(ctx, c, builtin.Validate, builtin.ValidateInput{Class: cl.Ident()}, nil)
			}).Patch(enum("class", classes(false)))
	}
	return []*tool.Def{
		start("class", "validate-all-instances", "Validate all instances",
			"Check every instance of a class and its subclasses against the class's current slots, as a task. Answers at once with the task id."),
		start("validation", "start", "Start a validation", "Start validating every instance of a class and its subclasses, as a task: {class}."),
		tool.Verb(tool.Spec{Group: "validation", Name: "run", Title: "Run a validation", LongRunning: true, Waits: maxWait,
			Description: "Validate every instance of a class and wait (up to waitSeconds, default 30) for the report: {class, waitSeconds?}."},
			func(ctx context.Context, c *tool.Call, in validationRunArgs) (TaskResult, error) {
				cl, err := class(c, in.Class)
				if err != nil {
					return TaskResult{}, err
				}
				p, err := e.Processes.Start(ctx, c.Account, builtin.Validate, builtin.ValidateInput{Class: cl.Ident()}, nil)
				if err != nil {
					return TaskResult{}, err
				}
				// Without a follower's place it answers with the task as it is, to poll.
				e.Processes.Follow(ctx, c.Session, c.ProgressToken, c.Account, p.Name)
				wait := time.Duration(orDefault(in.WaitSeconds, 30)) * time.Second
				return resultView(e.Processes.WaitFor(ctx, c.Account, p, wait))
			}, tool.Between("waitSeconds", 1, 60)).Patch(enum("class", classes(false))),
		tool.Verb(tool.Spec{Group: "validation", Name: "cancel", Title: "Cancel a validation", Destructive: true,
			Description: "Cancel a running validation: {taskId}."}, e.taskCancel),
		tool.Verb(tool.Spec{Group: "validation", Name: "retry", Title: "Retry a validation", LongRunning: true,
			Description: "Start a validation again with the same input as an earlier one: {taskId}."},
			func(ctx context.Context, c *tool.Call, in taskArgs) (Started, error) {
				p, err := e.task(ctx, c, in.TaskID)
				if err != nil {
					return Started{}, err
				}
				if p.Spec.Definition != builtin.Validate {
					return Started{}, tool.Fail("task %s is not a validation", p.Name)
				}
				var input any
				if p.Spec.Input != nil {
					input = p.Spec.Input
				}
				return e.started(ctx, c, builtin.Validate, input, nil)
			}),
		tool.Verb(tool.Spec{Group: "validation", Name: "results", Title: "Validation results", ReadOnly: true, Idempotent: true,
			Description: "The report of a validation: instances checked, invalid ones and why: {taskId}."},
			func(ctx context.Context, c *tool.Call, in taskArgs) (TaskResult, error) {
				p, err := e.task(ctx, c, in.TaskID)
				if err != nil {
					return TaskResult{}, err
				}
				return resultView(p)
			}),
		tool.Verb(tool.Spec{Group: "validation", Name: "history", Title: "Validation history", ReadOnly: true, Idempotent: true,
			Description: "This account's validations, newest first. Paged: {limit?, continue?}."},
			func(ctx context.Context, c *tool.Call, in listArgs) (ProcessList, error) {
				procs, err := e.Processes.Select(ctx, c.Account, func(p *metav1alpha1.WorkflowProcess) bool {
					return p.Spec.Definition == builtin.Validate
				}, true)
				if err != nil {
					return ProcessList{}, err
				}
				return processList(c, procs, in)
			}),
	}
}

func (e *Env) projectVerbs() []*tool.Def {
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "project", Name: "export", Title: "Export instances", ReadOnly: true, LongRunning: true,
			Description: "Export the instances of a class (and its subclasses), or of every class, as a bundle, as a task: {class?, format?: json|markdown}."},
			func(ctx context.Context, c *tool.Call, in builtin.ExportInput) (Started, error) {
				input := builtin.ExportInput{Format: orDefault(in.Format, string(metav1alpha1.CodecJSON))}
				if in.Class != "" {
					cl, err := class(c, in.Class)
					if err != nil {
						return Started{}, err
					}
					input.Class = cl.Ident()
				}
				return e.started(ctx, c, builtin.Export, input, nil)
			}, tool.OneOf("format", codec.FormatNames()...)).Patch(enum("class", classes(false))),
		tool.Verb(tool.Spec{Group: "project", Name: "import", Title: "Import instances", Destructive: true, LongRunning: true, Confirms: true,
			Description: "Import a bundle (as sandbar_project_export makes it), creating missing instances and updating changed ones, as a task: {bundle: {format?, items: [{class, name, attributes} or {class, source}]}}. " +
				"Before it overwrites existing instances with other content it asks the user; a bundle that only creates instances, or changes none, starts at once."},
			func(ctx context.Context, c *tool.Call, in importArgs) (Started, error) {
				if err := e.confirmImport(ctx, c, in.Bundle.Items); err != nil {
					return Started{}, err
				}
				return e.started(ctx, c, builtin.Import, builtin.ImportInput{Bundle: &in.Bundle}, nil)
			}, tool.Nested("bundle", tool.MaxItems("items", maxImportItems), tool.OneOf("format", codec.FormatNames()...))).WithActs(importActs),
	}
}

// namedOverwrites is how many of the instances an import overwrites its question names.
const namedOverwrites = 3

// confirmImport asks the user before an import that would overwrite existing
// instances in the account's namespace with other content, reading them as the
// account; a bundle that only creates instances, or leaves them as they are, asks
// nothing. Where the account may not list a class's instances it cannot tell which
// would be overwritten, and asks all the same.
func (e *Env) confirmImport(ctx context.Context, c *tool.Call, items []builtin.BundleItem) error {
	if c.Confirmed() {
		return nil
	}
	kc, err := e.as(c)
	if err != nil {
		return err
	}
	ns := c.Account.Namespace
	what := fmt.Sprintf("Import %s into namespace %q", count(len(items), "item"), ns)
	overwrites, err := builtin.Overwrites(ctx, kc, c.Snap, ns, items)
	switch {
	case apierrors.IsForbidden(err):
		return c.Confirm(what + ", perhaps overwriting existing instances (this account may not list them, so it could not tell which)?")
	case err != nil:
		return err
	case len(overwrites) == 0:
		return nil
	}
	named := make([]string, 0, namedOverwrites)
	for _, o := range overwrites[:min(len(overwrites), namedOverwrites)] {
		named = append(named, o.String())
	}
	list := strings.Join(named, ", ")
	if more := len(overwrites) - len(named); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return c.Confirm(fmt.Sprintf("%s, overwriting %s: %s?", what, count(len(overwrites), "existing instance"), list))
}

// count is n things, in the singular for one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
