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

// Package workflow is the engine of WorkflowProcesses, as pure functions on a
// process's status: start in the initial state, move by named transitions whose
// from-state matches, cancel through the cancellation guard, record every step.
package workflow

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// MaxHistory bounds a process's history; older steps are dropped.
const MaxHistory = 200

// Reasons a cancel request is refused.
const (
	AlreadyCompleted   = "already-completed"
	NotCancellable     = "not-cancellable"
	NoCancelTransition = "no-cancel-transition"
)

// Error is a refused step, with a reason a client can act on.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Terminal reports whether a process has ended.
func Terminal(st *metav1alpha1.WorkflowProcessStatus) bool {
	switch st.Phase {
	case metav1alpha1.PhaseSucceeded, metav1alpha1.PhaseFailed, metav1alpha1.PhaseCancelled:
		return true
	}
	return false
}

func state(w *catalog.Workflow, name string) (metav1alpha1.WorkflowState, bool) {
	for _, s := range w.Spec.States {
		if s.Name == name {
			return s, true
		}
	}
	return metav1alpha1.WorkflowState{}, false
}

func phaseOf(kind metav1alpha1.TerminalKind) metav1alpha1.ProcessPhase {
	switch kind {
	case metav1alpha1.TerminalSuccess:
		return metav1alpha1.PhaseSucceeded
	case metav1alpha1.TerminalFailure:
		return metav1alpha1.PhaseFailed
	case metav1alpha1.TerminalCancelled:
		return metav1alpha1.PhaseCancelled
	}
	return metav1alpha1.PhaseRunning
}

func record(st *metav1alpha1.WorkflowProcessStatus, e metav1alpha1.HistoryEntry) {
	st.History = append(st.History, e)
	if n := len(st.History); n > MaxHistory {
		st.History = append([]metav1alpha1.HistoryEntry(nil), st.History[n-MaxHistory:]...)
	}
}

// Start puts a new process in the workflow's initial state.
func Start(w *catalog.Workflow, st *metav1alpha1.WorkflowProcessStatus, actor string, now metav1.Time) {
	st.State = w.Spec.Initial
	st.Phase = metav1alpha1.PhaseRunning
	st.StartTime = &now
	st.StatusMessage = "in " + w.Spec.Initial
	record(st, metav1alpha1.HistoryEntry{To: w.Spec.Initial, Actor: actor, Time: now, Reason: "started"})
}

// Transition moves a process by a named transition.
func Transition(w *catalog.Workflow, st *metav1alpha1.WorkflowProcessStatus, name, actor, reason string, now metav1.Time) error {
	if Terminal(st) {
		return &Error{Reason: AlreadyCompleted, Message: fmt.Sprintf("the process already ended in %q", st.State)}
	}
	var t *metav1alpha1.WorkflowTransition
	var names []string
	for i := range w.Spec.Transitions {
		tr := &w.Spec.Transitions[i]
		for _, f := range tr.From {
			if f == st.State {
				names = append(names, tr.Name)
			}
		}
		if tr.Name == name {
			t = tr
		}
	}
	if t == nil {
		return &Error{Reason: "unknown-transition", Message: fmt.Sprintf("workflow %s has no transition %q; from %q it has: %s",
			w.Name, name, st.State, orNone(names))}
	}
	allowed := false
	for _, f := range t.From {
		allowed = allowed || f == st.State
	}
	if !allowed {
		return &Error{Reason: "wrong-state", Message: fmt.Sprintf("transition %q starts from %s, but the process is in %q; from there: %s",
			name, strings.Join(t.From, " or "), st.State, orNone(names))}
	}
	to, _ := state(w, t.To)
	record(st, metav1alpha1.HistoryEntry{From: st.State, To: t.To, Transition: name, Actor: actor, Time: now, Reason: reason})
	st.State = t.To
	st.Phase = phaseOf(to.Terminal)
	st.StatusMessage = "in " + t.To
	if to.Terminal != "" {
		st.CompletionTime = &now
		st.StatusMessage = fmt.Sprintf("ended in %s (%s)", t.To, to.Terminal)
		if reason != "" {
			st.StatusMessage += ": " + reason
		}
	}
	return nil
}

// CancelTransition is the transition that cancels a process from its state: one that
// leads to a terminal state of kind cancelled.
func CancelTransition(w *catalog.Workflow, from string) (name string, anyCancel bool) {
	for _, t := range w.Spec.Transitions {
		to, _ := state(w, t.To)
		if to.Terminal != metav1alpha1.TerminalCancelled {
			continue
		}
		anyCancel = true
		for _, f := range t.From {
			if f == from {
				return t.Name, true
			}
		}
	}
	return "", anyCancel
}

// Cancel applies the cancellation guard: a process that already ended, whose
// workflow cannot cancel from its state, or whose workflow has no cancel transition
// at all is refused with the matching reason.
func Cancel(w *catalog.Workflow, st *metav1alpha1.WorkflowProcessStatus, actor, reason string, now metav1.Time) error {
	if Terminal(st) {
		return &Error{Reason: AlreadyCompleted, Message: fmt.Sprintf("cannot cancel: the process already ended in %q (reason: %s)", st.State, AlreadyCompleted)}
	}
	name, anyCancel := CancelTransition(w, st.State)
	switch {
	case !anyCancel:
		return &Error{Reason: NoCancelTransition, Message: fmt.Sprintf(
			"cannot cancel: workflow %s has no transition to a cancelled state (reason: %s)", w.Name, NoCancelTransition)}
	case name == "":
		return &Error{Reason: NotCancellable, Message: fmt.Sprintf(
			"cannot cancel: workflow %s does not allow cancelling from %q (reason: %s)", w.Name, st.State, NotCancellable)}
	}
	if reason == "" {
		reason = "cancelled"
	}
	return Transition(w, st, name, actor, reason, now)
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// CancelProcess is how a process is cancelled, by the controller (for
// spec.cancelRequest) and by the MCP layer (tasks/cancel) alike: the cancellation
// guard decides, and status.cancellation records the outcome, accepted or refused
// with its reason. The refusal is also returned, as a *Error.
func CancelProcess(w *catalog.Workflow, p *metav1alpha1.WorkflowProcess, actor, reason string, now metav1.Time) error {
	if reason == "" {
		reason = "cancelled"
	}
	if err := Cancel(w, &p.Status, actor, reason, now); err != nil {
		e := err.(*Error)
		p.Status.Cancellation = &metav1alpha1.CancellationStatus{Reason: e.Reason, Message: e.Message}
		return err
	}
	p.Status.Cancellation = &metav1alpha1.CancellationStatus{Accepted: true, Message: reason}
	return nil
}
