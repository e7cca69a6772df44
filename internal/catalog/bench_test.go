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

package catalog

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

const (
	benchRoots         = 10
	benchMids          = 90
	benchLeaves        = 900
	benchSlotsPerClass = 8
)

// benchInputs is a metamodel of 1,000 classes in three levels (10 abstract roots, 90
// abstract mid-level classes with one root parent each, 900 concrete leaves with one
// mid-level parent each), each declaring 8 slots of its own: 8,000 Properties of mixed
// ranges and constraints. Every leaf has 24 effective slots. Statuses are filled in as
// the Class reconciler leaves them, and a few workflows and accounts complete the picture.
func benchInputs() Inputs {
	var in Inputs
	ranges := []metav1alpha1.PropertyRange{
		metav1alpha1.RangeString, metav1alpha1.RangeInteger, metav1alpha1.RangeNumber, metav1alpha1.RangeBoolean,
		metav1alpha1.RangeDateTime, metav1alpha1.RangeKeyword, metav1alpha1.RangeUUID, metav1alpha1.RangeURI,
		metav1alpha1.RangeRef, metav1alpha1.RangeJSON,
	}
	ready := []metav1.Condition{{Type: metav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: metav1alpha1.ReasonReady}}
	addClass := func(name string, abstract bool, parent string) {
		c := metav1alpha1.Class{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Generation: 1},
			Spec: metav1alpha1.ClassSpec{
				Prefix:      "bench",
				Kind:        fmt.Sprintf("K%s", name[len("bench."):]),
				Description: "A class of the benchmark metamodel.",
				Abstract:    abstract,
			},
			Status: metav1alpha1.ClassStatus{ObservedGeneration: 1, Conditions: ready},
		}
		if parent != "" {
			c.Spec.Parents = []string{parent}
		}
		for j := 0; j < benchSlotsPerClass; j++ {
			n := len(in.Properties)
			pname := fmt.Sprintf("%s.p%d", name, j)
			p := metav1alpha1.Property{
				ObjectMeta: metav1.ObjectMeta{Name: pname, ResourceVersion: "1", Generation: 1},
				Spec: metav1alpha1.PropertySpec{
					// The owning class's name makes the field unique along each line of inheritance.
					Field:       fmt.Sprintf("%sP%d", name[len("bench."):], j),
					Range:       ranges[n%len(ranges)],
					Cardinality: metav1alpha1.CardinalityOne,
					Description: "A slot of the benchmark metamodel.",
				},
			}
			if n%5 == 0 {
				p.Spec.Cardinality = metav1alpha1.CardinalityMany
			}
			switch p.Spec.Range {
			case metav1alpha1.RangeString:
				maxLen := int64(64)
				p.Spec.Pattern, p.Spec.MaxLength = `^[a-z][a-z0-9-]*$`, &maxLen
				p.Spec.Enum = []string{"red", "green", "blue"}
			case metav1alpha1.RangeInteger, metav1alpha1.RangeNumber:
				lo, hi := 0.0, 1000.0
				p.Spec.Minimum, p.Spec.Maximum = &lo, &hi
			case metav1alpha1.RangeRef:
				p.Spec.Target = fmt.Sprintf("bench.r%d", n%benchRoots)
			}
			in.Properties = append(in.Properties, p)
			c.Spec.Slots = append(c.Spec.Slots, metav1alpha1.SlotRef{Property: pname, Required: j%3 == 0})
		}
		if !abstract {
			c.Status.InstanceAPI = &metav1alpha1.InstanceAPIStatus{
				Group: "bench.sandbar.dev", Version: "v1", Kind: c.Spec.Kind, Plural: "k" + name[len("bench."):] + "s"}
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{
				Type: metav1alpha1.ConditionInstanceAPIEstablished, Status: metav1.ConditionTrue, Reason: metav1alpha1.ReasonEstablished})
		}
		in.Classes = append(in.Classes, c)
	}
	for i := 0; i < benchRoots; i++ {
		addClass(fmt.Sprintf("bench.r%d", i), true, "")
	}
	for i := 0; i < benchMids; i++ {
		addClass(fmt.Sprintf("bench.m%d", i), true, fmt.Sprintf("bench.r%d", i%benchRoots))
	}
	for i := 0; i < benchLeaves; i++ {
		addClass(fmt.Sprintf("bench.l%d", i), false, fmt.Sprintf("bench.m%d", i%benchMids))
	}
	for i := 0; i < 10; i++ {
		wd := orderFulfillment()
		wd.Name = fmt.Sprintf("bench.w%d", i)
		wd.Spec.SubjectClass = fmt.Sprintf("bench.l%d", i)
		in.Workflows = append(in.Workflows, *wd)
	}
	for i := 0; i < 20; i++ {
		in.ServiceAccounts = append(in.ServiceAccounts, account("bench", fmt.Sprintf("sa%d", i), fmt.Sprintf("svc%d", i), true))
	}
	return in
}

// deepCopyInputs is what listing the inputs from the informer cache costs: the cache
// hands out deep copies.
func deepCopyInputs(in Inputs) Inputs {
	out := Inputs{
		Classes:         make([]metav1alpha1.Class, len(in.Classes)),
		Properties:      make([]metav1alpha1.Property, len(in.Properties)),
		Workflows:       make([]metav1alpha1.WorkflowDefinition, len(in.Workflows)),
		ServiceAccounts: make([]metav1alpha1.ServiceAccount, len(in.ServiceAccounts)),
	}
	for i := range in.Classes {
		in.Classes[i].DeepCopyInto(&out.Classes[i])
	}
	for i := range in.Properties {
		in.Properties[i].DeepCopyInto(&out.Properties[i])
	}
	for i := range in.Workflows {
		in.Workflows[i].DeepCopyInto(&out.Workflows[i])
	}
	for i := range in.ServiceAccounts {
		in.ServiceAccounts[i].DeepCopyInto(&out.ServiceAccounts[i])
	}
	return out
}

var (
	benchSnapshot *Snapshot
	benchCopy     Inputs
)

func checkBenchInputs(b *testing.B, in Inputs) {
	b.Helper()
	if len(in.Classes) != 1000 || len(in.Properties) != 8000 {
		b.Fatalf("%d classes and %d properties, want 1000 and 8000", len(in.Classes), len(in.Properties))
	}
	s := Build(in)
	for name, c := range s.Classes {
		if c.Problem != nil {
			b.Fatalf("%s: %+v", name, *c.Problem)
		}
		if !c.Abstract && (len(c.Slots) != 3*benchSlotsPerClass || len(c.Ancestors) != 2 || c.InstanceAPI == nil) {
			b.Fatalf("%s: %d slots, ancestors %q, instance API %v", name, len(c.Slots), c.Ancestors, c.InstanceAPI)
		}
	}
	for name, p := range s.Properties {
		if p.Problem != nil {
			b.Fatalf("%s: %+v", name, *p.Problem)
		}
	}
}

func BenchmarkBuild1000Classes(b *testing.B) {
	in := benchInputs()
	checkBenchInputs(b, in)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		benchSnapshot = Build(in)
	}
	reportCPU(b, start)
}

func BenchmarkBuild1000ClassesBaseline(b *testing.B) {
	in := benchInputs()
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		benchCopy = deepCopyInputs(in)
	}
	reportCPU(b, start)
}

// oneChanged are the benchmark's inputs and the same with one leaf changed (its
// description, and so its resourceVersion).
func oneChanged() (Inputs, Inputs) {
	a := benchInputs()
	b := deepCopyInputs(a)
	for i := range b.Classes {
		if b.Classes[i].Name == "bench.l500" {
			b.Classes[i].Spec.Description = "A class of the benchmark metamodel, changed."
			b.Classes[i].ResourceVersion = "2"
		}
	}
	return a, b
}

// BenchmarkBuild1000ClassesOneChanged builds and publishes the metamodel again after a
// change to one class, incrementally: each build sees one class changed since the one
// before, as the catalog reconciler does.
func BenchmarkBuild1000ClassesOneChanged(b *testing.B) {
	in, changed := oneChanged()
	var builder Builder
	st := NewStore()
	st.Publish(builder.Build(in))
	b.ReportAllocs()
	i := 0
	start := cpuTime()
	for b.Loop() {
		next := in
		if i++; i%2 == 1 {
			next = changed
		}
		if !st.Publish(builder.Build(next)) {
			b.Fatal("the change was not published")
		}
	}
	reportCPU(b, start)
}

// BenchmarkBuild1000ClassesOneChangedBaseline builds the same inputs in full each time,
// and publishes them.
func BenchmarkBuild1000ClassesOneChangedBaseline(b *testing.B) {
	in, changed := oneChanged()
	st := NewStore()
	st.Publish(Build(in))
	b.ReportAllocs()
	i := 0
	start := cpuTime()
	for b.Loop() {
		next := in
		if i++; i%2 == 1 {
			next = changed
		}
		if !st.Publish(Build(next)) {
			b.Fatal("the change was not published")
		}
	}
	reportCPU(b, start)
}
