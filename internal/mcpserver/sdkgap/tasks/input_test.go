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

package tasks

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Each stay of a process in a state has a question of its own: the controller's
// start does not change it, each transition does, and coming back to a state by a
// loop asks anew.
func TestInputKeyIsNewForEveryStay(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))
	p := &metav1alpha1.WorkflowProcess{}
	before := inputKey(p)
	p.Status.History = append(p.Status.History, metav1alpha1.HistoryEntry{To: "a", Time: at, Reason: "started"})
	if got := inputKey(p); got != before {
		t.Errorf("the start changed the question's key: %s, then %s", before, got)
	}
	seen := map[string]bool{before: true}
	for i, step := range []metav1alpha1.HistoryEntry{
		{From: "a", To: "b", Transition: "go", Time: at},
		{From: "b", To: "a", Transition: "back", Time: at},
		{From: "a", To: "b", Transition: "go", Time: at}, // the same second, the same step again
	} {
		p.Status.History = append(p.Status.History, step)
		k := inputKey(p)
		if seen[k] {
			t.Errorf("step %d: the key %s was used before", i, k)
		}
		seen[k] = true
	}
}
