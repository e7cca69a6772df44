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
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// condition is what a test expects of one condition.
type condition struct {
	status  metav1.ConditionStatus
	reason  string
	message string // "" to not check it
}

func checkConditions(t *testing.T, got []metav1.Condition, want map[string]condition) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d conditions %v, want %d", len(got), got, len(want))
	}
	for typ, w := range want {
		var c *metav1.Condition
		for i := range got {
			if got[i].Type == typ {
				c = &got[i]
			}
		}
		switch {
		case c == nil:
			t.Errorf("no %s condition", typ)
		case c.Status != w.status || c.Reason != w.reason || (w.message != "" && c.Message != w.message):
			t.Errorf("%s = %s/%s %q, want %s/%s %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
		case c.ObservedGeneration != 3:
			t.Errorf("%s observedGeneration = %d, want the object's 3", typ, c.ObservedGeneration)
		}
	}
}

func TestClassStatus(t *testing.T) {
	names := catalog.Names{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot", Plural: "spaceboots", CRDName: "spaceboots.zorp.sandbar.dev"}
	resolved := &catalog.Class{Name: "zorp.spaceboot", Ancestors: []string{"zorp.footwear"}, Required: []string{"name"},
		Slots: []*catalog.Slot{{Definition: &catalog.Definition{Property: "footwear.name", Field: "name"}, Required: true, From: "zorp.footwear"}}}
	cycle := &catalog.Problem{Reason: metav1alpha1.ReasonInheritanceCycle, Message: "zorp.a -> zorp.b -> zorp.a"}
	conflict := &catalog.Problem{Reason: metav1alpha1.ReasonCRDConflict, Message: "zorp.other serves spaceboots.zorp.sandbar.dev"}
	establishing := &catalog.Problem{Reason: metav1alpha1.ReasonEstablishing, Message: "waiting for the CRD"}
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		name     string
		abstract bool
		resolved *catalog.Class
		api      instanceAPIOutcome
		want     map[string]condition
		wantAPI  bool
	}{
		{"concrete and served", false, resolved, instanceAPIOutcome{wanted: true, names: names, exists: true},
			map[string]condition{
				metav1alpha1.ConditionReady:                  {T, metav1alpha1.ReasonReady, "instances are served as spaceboots.zorp.sandbar.dev"},
				metav1alpha1.ConditionReferencesResolved:     {T, metav1alpha1.ReasonResolved, "1 slots from 2 classes"},
				metav1alpha1.ConditionNameConflict:           {F, metav1alpha1.ReasonNoConflict, ""},
				metav1alpha1.ConditionInstanceAPIEstablished: {T, metav1alpha1.ReasonEstablished, "instances are served as spaceboots.zorp.sandbar.dev"},
			}, true},
		{"abstract", true, resolved, instanceAPIOutcome{},
			map[string]condition{
				metav1alpha1.ConditionReady:              {T, metav1alpha1.ReasonReady, "abstract class, resolved"},
				metav1alpha1.ConditionReferencesResolved: {T, metav1alpha1.ReasonResolved, ""},
				metav1alpha1.ConditionNameConflict:       {F, metav1alpha1.ReasonNoConflict, ""},
			}, false},
		{"an inheritance cycle", false, &catalog.Class{Problem: cycle}, instanceAPIOutcome{wanted: true, names: names, problem: establishing},
			map[string]condition{
				metav1alpha1.ConditionReady:                  {F, metav1alpha1.ReasonInheritanceCycle, cycle.Message},
				metav1alpha1.ConditionReferencesResolved:     {F, metav1alpha1.ReasonInheritanceCycle, cycle.Message},
				metav1alpha1.ConditionNameConflict:           {F, metav1alpha1.ReasonNoConflict, ""},
				metav1alpha1.ConditionInstanceAPIEstablished: {F, metav1alpha1.ReasonEstablishing, "waiting for the CRD"},
			}, false},
		{"another class has the names", false, resolved, instanceAPIOutcome{wanted: true, names: names, conflict: conflict, exists: true},
			map[string]condition{
				metav1alpha1.ConditionReady:                  {F, metav1alpha1.ReasonCRDConflict, conflict.Message},
				metav1alpha1.ConditionReferencesResolved:     {T, metav1alpha1.ReasonResolved, ""},
				metav1alpha1.ConditionNameConflict:           {T, metav1alpha1.ReasonCRDConflict, conflict.Message},
				metav1alpha1.ConditionInstanceAPIEstablished: {F, metav1alpha1.ReasonCRDConflict, conflict.Message},
			}, false},
		{"the CRD is on its way", false, resolved, instanceAPIOutcome{wanted: true, names: names, problem: establishing, exists: true},
			map[string]condition{
				metav1alpha1.ConditionReady:                  {F, metav1alpha1.ReasonEstablishing, "waiting for the CRD"},
				metav1alpha1.ConditionReferencesResolved:     {T, metav1alpha1.ReasonResolved, ""},
				metav1alpha1.ConditionNameConflict:           {F, metav1alpha1.ReasonNoConflict, ""},
				metav1alpha1.ConditionInstanceAPIEstablished: {F, metav1alpha1.ReasonEstablishing, "waiting for the CRD"},
			}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: "zorp.spaceboot", Generation: 3},
				Spec: metav1alpha1.ClassSpec{Abstract: tc.abstract}}
			st := classStatus(class, tc.resolved, tc.api, nil)
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d", st.ObservedGeneration)
			}
			checkConditions(t, st.Conditions, tc.want)
			if (st.InstanceAPI != nil) != tc.wantAPI {
				t.Errorf("instanceAPI = %+v, want set: %v", st.InstanceAPI, tc.wantAPI)
			}
		})
	}
}

func TestPropertyStatus(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	unknown := &catalog.Problem{Reason: metav1alpha1.ReasonUnknownClass, Message: `target Class "zorp.gone" does not exist`}
	invalid := &catalog.Problem{Reason: metav1alpha1.ReasonInvalid, Message: "minimum is greater than maximum"}
	for _, tc := range []struct {
		name    string
		spec    metav1alpha1.PropertySpec
		problem *catalog.Problem
		want    map[string]condition
	}{
		{"a valid string", metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString}, nil, map[string]condition{
			metav1alpha1.ConditionReady: {T, metav1alpha1.ReasonReady, "the Property can be used as a slot"},
			metav1alpha1.ConditionValid: {T, metav1alpha1.ReasonValid, ""},
		}},
		{"a resolved ref", metav1alpha1.PropertySpec{Range: metav1alpha1.RangeRef, Target: "zorp.crew"}, nil, map[string]condition{
			metav1alpha1.ConditionReady:              {T, metav1alpha1.ReasonReady, ""},
			metav1alpha1.ConditionValid:              {T, metav1alpha1.ReasonValid, ""},
			metav1alpha1.ConditionReferencesResolved: {T, metav1alpha1.ReasonResolved, `target Class "zorp.crew" exists`},
		}},
		{"a ref to a missing class is valid but unresolved", metav1alpha1.PropertySpec{Range: metav1alpha1.RangeRef, Target: "zorp.gone"}, unknown,
			map[string]condition{
				metav1alpha1.ConditionReady:              {F, metav1alpha1.ReasonUnknownClass, unknown.Message},
				metav1alpha1.ConditionValid:              {T, metav1alpha1.ReasonValid, ""},
				metav1alpha1.ConditionReferencesResolved: {F, metav1alpha1.ReasonUnknownClass, unknown.Message},
			}},
		{"invalid constraints", metav1alpha1.PropertySpec{Range: metav1alpha1.RangeInteger}, invalid, map[string]condition{
			metav1alpha1.ConditionReady: {F, metav1alpha1.ReasonInvalid, invalid.Message},
			metav1alpha1.ConditionValid: {F, metav1alpha1.ReasonInvalid, invalid.Message},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: "zorp.v", Generation: 3}, Spec: tc.spec}
			st := propertyStatus(p, tc.problem)
			if st.ObservedGeneration != 3 || st.Field != catalog.FieldName(p) {
				t.Errorf("observedGeneration %d, field %q", st.ObservedGeneration, st.Field)
			}
			checkConditions(t, st.Conditions, tc.want)
		})
	}
}

// A problem whose message is longer than the API server lets a condition's message be
// (32768 bytes) is still written, its message cut: a status with a longer one would be
// refused, and the condition would keep saying something no longer true.
func TestLongProblemMessagesFitACondition(t *testing.T) {
	long := strings.Repeat("é", 40000) // 80000 bytes
	class := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: "zorp.long", Generation: 3}}
	resolved := &catalog.Class{Name: "zorp.long", Problem: &catalog.Problem{Reason: metav1alpha1.ReasonInheritanceCycle, Message: long}}
	st := classStatus(class, resolved, instanceAPIOutcome{}, nil)
	for _, c := range st.Conditions {
		if len(c.Message) > 32768 || !utf8.ValidString(c.Message) {
			t.Errorf("%s message is %d bytes (valid UTF-8: %v), want at most 32768", c.Type, len(c.Message), utf8.ValidString(c.Message))
		}
		if c.Type == metav1alpha1.ConditionReady && !strings.HasPrefix(long, strings.TrimSuffix(c.Message, "...")) {
			t.Errorf("Ready message is not the start of the problem's")
		}
	}
}
