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
	"testing"

	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// The verb the job registry names for each built-in workflow exists and runs long
// (it starts a process): start-process refuses the job and names it.
func TestEveryJobNamesAVerbThatStartsIt(t *testing.T) {
	long := map[string]bool{}
	for _, d := range (&Env{}).All() {
		long[d.Canonical()] = d.LongRunning
	}
	for _, j := range builtin.Jobs() {
		running, ok := long[j.StartedBy]
		switch {
		case !ok:
			t.Errorf("job %s: StartedBy %q is no verb", j.Name, j.StartedBy)
		case !running:
			t.Errorf("job %s: %s does not start a process (LongRunning)", j.Name, j.StartedBy)
		}
	}
}
