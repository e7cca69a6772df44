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
	"fmt"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// classStatus computes a Class's status from its resolution and its instance API.
func classStatus(class *metav1alpha1.Class, resolved *catalog.Class, api instanceAPIOutcome, limits ClientLimits) metav1alpha1.ClassStatus {
	st := metav1alpha1.ClassStatus{
		ObservedGeneration: class.Generation,
		Ancestors:          resolved.Ancestors,
		RequiredSlots:      resolved.Required,
		SlotCount:          int32(len(resolved.Slots)),
	}
	for _, s := range resolved.Slots {
		st.EffectiveSlots = append(st.EffectiveSlots, metav1alpha1.EffectiveSlot{
			Property: s.Property, Field: s.Field, Range: s.Range, Cardinality: s.Cardinality,
			Required: s.Required, From: s.From,
		})
	}
	conds := newConditions(class.Status.Conditions, class.Generation)
	conds.setProblem(metav1alpha1.ConditionReferencesResolved, resolved.Problem, metav1alpha1.ReasonResolved,
		fmt.Sprintf("%d slots from %d classes", len(resolved.Slots), len(resolved.Ancestors)+1))
	conds.set(metav1alpha1.ConditionNameConflict, false, metav1alpha1.ReasonNoConflict, "")
	if api.conflict != nil {
		conds.set(metav1alpha1.ConditionNameConflict, true, api.conflict.Reason, api.conflict.Message)
	}

	ready := &catalog.Problem{Reason: metav1alpha1.ReasonReady, Message: readyMessage(class, api)}
	switch {
	case resolved.Problem != nil:
		ready = resolved.Problem
	case api.conflict != nil:
		ready = api.conflict
	case api.wanted && api.problem != nil:
		ready = api.problem
	}

	if api.wanted {
		n := api.names
		if api.exists && api.conflict == nil {
			st.InstanceAPI = &metav1alpha1.InstanceAPIStatus{
				Group: n.Group, Version: n.Version, Kind: n.Kind, Plural: n.Plural, CRDName: n.CRDName,
			}
		}
		switch {
		case api.conflict != nil:
			conds.set(metav1alpha1.ConditionInstanceAPIEstablished, false, api.conflict.Reason, api.conflict.Message)
		case api.problem != nil:
			conds.set(metav1alpha1.ConditionInstanceAPIEstablished, false, api.problem.Reason, api.problem.Message)
		default:
			conds.set(metav1alpha1.ConditionInstanceAPIEstablished, true, metav1alpha1.ReasonEstablished,
				fmt.Sprintf("instances are served as %s", n.CRDName))
		}
	} else {
		conds.remove(metav1alpha1.ConditionInstanceAPIEstablished)
	}

	// A concrete class has its own tool: clients must take it, or the class is
	// reached through the operational verbs, and the condition says so.
	if limits != nil && !class.Spec.Abstract && resolved.Problem == nil {
		v := limits.Class(resolved)
		conds.set(metav1alpha1.ConditionClientLimits, v.Reason == metav1alpha1.ReasonWithinClientLimits, v.Reason, v.Message)
		if isOK := v.Reason == metav1alpha1.ReasonWithinClientLimits; !isOK && ready.Reason == metav1alpha1.ReasonReady {
			ready = &catalog.Problem{Reason: ready.Reason, Message: ready.Message + "; " + v.Message}
		}
	} else {
		conds.remove(metav1alpha1.ConditionClientLimits)
	}

	isReady := ready.Reason == metav1alpha1.ReasonReady
	conds.set(metav1alpha1.ConditionReady, isReady, ready.Reason, ready.Message)
	st.Conditions = conds.list
	return st
}

func readyMessage(class *metav1alpha1.Class, api instanceAPIOutcome) string {
	switch {
	case class.Spec.Abstract:
		return "abstract class, resolved"
	case !api.wanted:
		return "resolved; the class has no instance API (spec.instanceAPI.enabled is false)"
	default:
		return fmt.Sprintf("instances are served as %s", api.names.CRDName)
	}
}

func (r *ClassReconciler) writeStatus(ctx context.Context, class *metav1alpha1.Class, resolved *catalog.Class, api instanceAPIOutcome) error {
	orig := class.DeepCopy()
	class.Status = classStatus(class, resolved, api, r.ClientLimits)
	return patchStatus(ctx, r.Client, r.Recorder, class, orig, orig.Status, class.Status,
		orig.Status.Conditions, class.Status.Conditions)
}
