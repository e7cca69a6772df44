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

package controllers

import (
	"context"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// conditions builds a status's conditions on top of the previous ones, so that a
// condition whose status does not change keeps its lastTransitionTime.
type conditions struct {
	list       []metav1.Condition
	generation int64
}

func newConditions(previous []metav1.Condition, generation int64) *conditions {
	return &conditions{list: append([]metav1.Condition(nil), previous...), generation: generation}
}

func (c *conditions) set(typ string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&c.list, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: cutTo(message, conditionMessageLimit), ObservedGeneration: c.generation,
	})
}

// setProblem sets typ True when p is nil and False with p's reason and message otherwise.
func (c *conditions) setProblem(typ string, p *catalog.Problem, okReason, okMessage string) {
	if p == nil {
		c.set(typ, true, okReason, okMessage)
		return
	}
	c.set(typ, false, p.Reason, p.Message)
}

func (c *conditions) remove(typ string) { meta.RemoveStatusCondition(&c.list, typ) }

// patchStatus writes obj's status when it differs from orig's, and records an Event
// when the Ready condition changes.
func patchStatus(ctx context.Context, c client.Client, rec events.EventRecorder, obj, orig client.Object,
	oldStatus, newStatus any, oldConds, newConds []metav1.Condition) error {
	if equality.Semantic.DeepEqual(oldStatus, newStatus) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err) // deleted meanwhile: nothing to report on
	}
	recordReadyChange(rec, obj, oldConds, newConds)
	return nil
}

func recordReadyChange(rec events.EventRecorder, obj client.Object, before, after []metav1.Condition) {
	a := meta.FindStatusCondition(after, metav1alpha1.ConditionReady)
	if a == nil {
		return
	}
	if b := meta.FindStatusCondition(before, metav1alpha1.ConditionReady); b != nil &&
		b.Status == a.Status && b.Reason == a.Reason && b.Message == a.Message {
		return
	}
	typ := corev1.EventTypeWarning
	if a.Status == metav1.ConditionTrue || a.Reason == metav1alpha1.ReasonEstablishing || a.Reason == metav1alpha1.ReasonCRDTerminating {
		typ = corev1.EventTypeNormal
	}
	event(rec, obj, nil, typ, a.Reason, actionReconcile, a.Message)
}

// The actions of the operator's Events (events.k8s.io/v1 requires one).
const (
	actionReconcile         = "Reconcile"
	actionCreateInstanceAPI = "CreateInstanceAPI"
	actionUpdateInstanceAPI = "UpdateInstanceAPI"
	actionDeleteInstanceAPI = "DeleteInstanceAPI"
)

// noteLimit is the longest note events.k8s.io/v1 accepts; the API server refuses an
// Event with a longer one.
const noteLimit = 1024

// event records an Event about regarding (and related, if not nil), its note cut to
// what the API server accepts.
func event(rec events.EventRecorder, regarding, related runtime.Object, typ, reason, action, note string) {
	rec.Eventf(regarding, related, typ, reason, action, "%s", cutNote(note))
}

// conditionMessageLimit is the longest message a condition may have; the API server
// refuses a status with a longer one, and the condition would keep its old message.
const conditionMessageLimit = 32768

// cutNote shortens a note longer than noteLimit bytes to fit, on a UTF-8 boundary, ending
// in "...".
func cutNote(note string) string { return cutTo(note, noteLimit) }

// cutTo shortens s to at most limit bytes, on a UTF-8 boundary, ending in "...".
func cutTo(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// cacheLookup finds metamodel objects in the manager's cache.
type cacheLookup struct {
	ctx context.Context
	c   client.Reader
}

func (l cacheLookup) Class(name string) (*metav1alpha1.Class, bool) {
	var c metav1alpha1.Class
	if err := l.c.Get(l.ctx, client.ObjectKey{Name: name}, &c); err != nil {
		return nil, false
	}
	return &c, true
}

func (l cacheLookup) Property(name string) (*metav1alpha1.Property, bool) {
	var p metav1alpha1.Property
	if err := l.c.Get(l.ctx, client.ObjectKey{Name: name}, &p); err != nil {
		return nil, false
	}
	return &p, true
}
