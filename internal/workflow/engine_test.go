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
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

func fulfillment() *catalog.Workflow {
	wd := &metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: "order.fulfillment"}, Spec: metav1alpha1.WorkflowDefinitionSpec{
		Initial: "pending",
		States: []metav1alpha1.WorkflowState{{Name: "pending"}, {Name: "confirmed"}, {Name: "shipped"},
			{Name: "delivered", Terminal: metav1alpha1.TerminalSuccess}, {Name: "cancelled", Terminal: metav1alpha1.TerminalCancelled}},
		Transitions: []metav1alpha1.WorkflowTransition{
			{Name: "confirm", From: []string{"pending"}, To: "confirmed"},
			{Name: "ship", From: []string{"confirmed"}, To: "shipped"},
			{Name: "deliver", From: []string{"shipped"}, To: "delivered"},
			{Name: "cancel", From: []string{"pending", "confirmed"}, To: "cancelled"},
		},
	}}
	return catalog.ValidateWorkflow(wd, nil)
}

func TestTransitionsFollowTheStateMachine(t *testing.T) {
	w := fulfillment()
	var st metav1alpha1.WorkflowProcessStatus
	now := metav1.Now()
	Start(w, &st, "alice", now)
	if st.State != "pending" || st.Phase != metav1alpha1.PhaseRunning || len(st.History) != 1 {
		t.Fatalf("after start: %+v", st)
	}
	err := Transition(w, &st, "ship", "alice", "", now)
	if err == nil || !strings.Contains(err.Error(), "transition \"ship\" starts from confirmed, but the process is in \"pending\"; from there: confirm, cancel") {
		t.Errorf("ship from pending: %v", err)
	}
	if err := Transition(w, &st, "teleport", "alice", "", now); err == nil || !strings.Contains(err.Error(), "no transition \"teleport\"") {
		t.Errorf("unknown transition: %v", err)
	}
	for _, step := range []string{"confirm", "ship", "deliver"} {
		if err := Transition(w, &st, step, "bob", "ok", now); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	if st.State != "delivered" || st.Phase != metav1alpha1.PhaseSucceeded || st.CompletionTime == nil {
		t.Errorf("after delivery: %+v", st)
	}
	last := st.History[len(st.History)-1]
	if last.From != "shipped" || last.To != "delivered" || last.Transition != "deliver" || last.Actor != "bob" || last.Reason != "ok" {
		t.Errorf("history entry %+v", last)
	}
	if err := Transition(w, &st, "cancel", "bob", "", now); err == nil || err.(*Error).Reason != AlreadyCompleted {
		t.Errorf("transition after the end: %v", err)
	}
}

func TestCancellationGuard(t *testing.T) {
	now := metav1.Now()
	w := fulfillment()
	for _, tc := range []struct {
		desc   string
		steps  []string
		reason string
		phase  metav1alpha1.ProcessPhase
	}{
		{"cancellable from pending", nil, "", metav1alpha1.PhaseCancelled},
		{"cancellable from confirmed", []string{"confirm"}, "", metav1alpha1.PhaseCancelled},
		{"not from shipped", []string{"confirm", "ship"}, NotCancellable, metav1alpha1.PhaseRunning},
		{"not once delivered", []string{"confirm", "ship", "deliver"}, AlreadyCompleted, metav1alpha1.PhaseSucceeded},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var st metav1alpha1.WorkflowProcessStatus
			Start(w, &st, "a", now)
			for _, s := range tc.steps {
				if err := Transition(w, &st, s, "a", "", now); err != nil {
					t.Fatal(err)
				}
			}
			err := Cancel(w, &st, "a", "changed my mind", now)
			if tc.reason == "" && err != nil || tc.reason != "" && (err == nil || err.(*Error).Reason != tc.reason) {
				t.Errorf("Cancel = %v, want reason %q", err, tc.reason)
			}
			if tc.reason != "" && !strings.Contains(err.Error(), "(reason: "+tc.reason+")") {
				t.Errorf("message %q lacks the reason", err)
			}
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
		})
	}

	noCancel := catalog.ValidateWorkflow(&metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: metav1alpha1.WorkflowDefinitionSpec{
		Initial: "a", States: []metav1alpha1.WorkflowState{{Name: "a"}, {Name: "b", Terminal: metav1alpha1.TerminalSuccess}},
		Transitions: []metav1alpha1.WorkflowTransition{{Name: "go", From: []string{"a"}, To: "b"}},
	}}, nil)
	var st metav1alpha1.WorkflowProcessStatus
	Start(noCancel, &st, "a", now)
	if err := Cancel(noCancel, &st, "a", "", now); err == nil || err.(*Error).Reason != NoCancelTransition {
		t.Errorf("Cancel = %v, want %s", err, NoCancelTransition)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	loop := catalog.ValidateWorkflow(&metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: "loop"}, Spec: metav1alpha1.WorkflowDefinitionSpec{
		Initial: "a", States: []metav1alpha1.WorkflowState{{Name: "a"}, {Name: "b"}, {Name: "end", Terminal: metav1alpha1.TerminalSuccess}},
		Transitions: []metav1alpha1.WorkflowTransition{{Name: "ab", From: []string{"a"}, To: "b"}, {Name: "ba", From: []string{"b"}, To: "a"}},
	}}, nil)
	var st metav1alpha1.WorkflowProcessStatus
	now := metav1.Now()
	Start(loop, &st, "a", now)
	for i := 0; i < 500; i++ {
		name := "ab"
		if st.State == "b" {
			name = "ba"
		}
		if err := Transition(loop, &st, name, "a", "", now); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.History) != MaxHistory || st.History[len(st.History)-1].To != st.State {
		t.Errorf("history has %d entries, last %+v; want %d ending in %s", len(st.History), st.History[len(st.History)-1], MaxHistory, st.State)
	}
}

func TestCancelProcessRecordsTheOutcome(t *testing.T) {
	w := fulfillment()
	now := metav1.Now()
	p := &metav1alpha1.WorkflowProcess{}
	Start(w, &p.Status, "tester", now)
	if err := CancelProcess(w, p, "tester", "", now); err != nil {
		t.Fatalf("cancelling from the initial state: %v", err)
	}
	if c := p.Status.Cancellation; c == nil || !c.Accepted || c.Message != "cancelled" || p.Status.Phase != metav1alpha1.PhaseCancelled {
		t.Errorf("accepted cancellation: %+v, phase %s", c, p.Status.Phase)
	}
	err := CancelProcess(w, p, "tester", "again", now)
	var refused *Error
	if !errors.As(err, &refused) || refused.Reason != AlreadyCompleted {
		t.Fatalf("cancelling twice: %v, want %s", err, AlreadyCompleted)
	}
	if c := p.Status.Cancellation; c.Accepted || c.Reason != AlreadyCompleted || c.Message != refused.Message {
		t.Errorf("refused cancellation recorded as %+v", c)
	}
}
