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

// The calls an answer or an error suggests (tool.Next): an agent follows them
// without looking the tools up. Answers carry them as "next"; errors write them as
// "call `tool` with {...}" (tool.Instead).

import (
	"fmt"
	"slices"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// toFind is the call that lists the instances of a class in a namespace.
func toFind(c *tool.Call, cl *catalog.Class, ns string) tool.Next {
	return c.Next("sandbar.entity.find", "list the "+cl.Ident()+" instances", map[string]any{"class": cl.Ident(), "namespace": ns})
}

// missingInstance is what an error about a missing instance of a class says to
// call: find the existing ones, or create it (tool.CreateCalls).
func missingInstance(c *tool.Call, cl *catalog.Class, ns, name string) string {
	return tool.Instead(append([]tool.Next{toFind(c, cl, ns)}, tool.CreateCalls(c.Style, c.Snap, cl, name)...)...)
}

// toStart says how to start a process about a new instance of cl, for each
// workflow open to the account whose subject is cl or one of its ancestors: the
// note of a create's answer (a note, not a "next" in the answer's schema, which
// every class's own tool would carry).
func toStart(c *tool.Call, cl *catalog.Class, name string) string {
	var out []tool.Next
	for _, wn := range c.Snap.WorkflowNames() {
		w := c.Snap.Workflows[wn]
		if w.Problem != nil || builtin.IsBuiltin(wn) || !w.OpenTo(c.Account) ||
			(w.Spec.SubjectClass != cl.Name && !slices.Contains(cl.Ancestors, w.Spec.SubjectClass)) {
			continue
		}
		args := map[string]any{"workflow": wn, "subject": map[string]any{"class": cl.Ident(), "name": name}}
		if len(w.Spec.Arguments) > 0 {
			input := map[string]any{}
			for _, a := range w.Spec.Arguments {
				input[a.Name] = "<" + a.Name + ">"
			}
			args["input"] = input
		}
		out = append(out, c.Next("sandbar.workflow.start-process", "start the "+wn+" workflow about it", args))
	}
	if len(out) == 0 {
		return ""
	}
	return "next: " + tool.Instead(out...)
}

// processNext are the calls that follow a process: each transition it can take
// from its state, and the state itself (a built-in job's, jobNext); once it
// ended, its result.
func processNext(c *tool.Call, p *metav1alpha1.WorkflowProcess, w *catalog.Workflow) []tool.Next {
	id := map[string]any{"taskId": p.Name}
	switch {
	case workflow.Terminal(&p.Status):
		return []tool.Next{c.Next("sandbar.tasks.result", "read how it ended ("+p.Status.State+")", id)}
	case builtin.IsBuiltin(p.Spec.Definition):
		return jobNext(c, p.Name)
	}
	var out []tool.Next
	for _, t := range moves(p, w) {
		out = append(out, c.Next("sandbar.workflow.transition", fmt.Sprintf("move it from %s to %s", orDefault(p.Status.State, w.Spec.Initial), t.To),
			map[string]any{"taskId": p.Name, "transition": t.Name}))
	}
	return append(out, c.Next("sandbar.workflow.process-state", "see its state and the transitions it can take", id))
}

// jobNext are the calls that follow a task of a built-in workflow.
func jobNext(c *tool.Call, taskID string) []tool.Next {
	id := map[string]any{"taskId": taskID}
	return []tool.Next{
		c.Next("sandbar.tasks.get", "see how far it is", id),
		c.Next("sandbar.tasks.result", "wait for its result", id),
		c.Next("sandbar.tasks.cancel", "stop it", id),
	}
}
