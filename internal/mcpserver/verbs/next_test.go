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

package verbs_test

import (
	"testing"

	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
)

// A job answers its task id and, under next, the calls that follow it; once it
// ended (here as it starts: the fake cluster runs a job to its end at once), its
// answer and its state say to read its result, with its task id.
func TestStartedJobSaysHowToFollowIt(t *testing.T) {
	s := startWith(t, mcptest.Config{RunWorkflows: true})
	f := &fixture{g: NewWithT(t), t: t, server: s, id: "follow"}
	f.cs = s.Client(t, mcptest.StatelessRevision)
	f.boot(nil)
	out := f.answer("sandbar_validation_start", map[string]any{"class": "zorp/SpaceBoot"})
	id := taskOf(out)
	f.g.Expect(f.process(id).Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
	state := f.answer("sandbar_workflow_process-state", map[string]any{"taskId": id})
	for _, answer := range []map[string]any{out, state} {
		next := items(answer, "next")
		f.g.Expect(field(next, "tool")).To(Equal([]string{"sandbar_tasks_result"}))
		f.g.Expect(next[0]).To(HaveKeyWithValue("arguments", map[string]any{"taskId": id}))
	}
}
