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
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

func definedClass(name, owner string, parents []string, slots ...string) *metav1alpha1.Class {
	cl := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: metav1alpha1.ClassSpec{Parents: parents}}
	if owner != "" {
		cl.Annotations = map[string]string{metav1alpha1.AnnotationDefinedBy: owner}
	}
	for _, s := range slots {
		cl.Spec.Slots = append(cl.Spec.Slots, metav1alpha1.SlotRef{Property: s})
	}
	return cl
}

func metamodelOf(classes ...*metav1alpha1.Class) metamodel {
	mm := metamodel{classes: map[string]*metav1alpha1.Class{}, properties: map[string]*metav1alpha1.Property{}}
	for _, cl := range classes {
		mm.classes[cl.Name] = cl
	}
	return mm
}

// A class uses a property it inherits as much as one it declares: a change to the
// property rewrites the subclass's tool too, whoever owns the class that declares it.
// An inheritance cycle ends the walk.
func TestAPropertyIsUsedByTheClassesThatInheritIt(t *testing.T) {
	mm := metamodelOf(
		definedClass("t.base", "ns/author", nil, "t.depth"),
		definedClass("t.sub", "ns/other", []string{"t.base"}),
		definedClass("t.subsub", "", []string{"t.sub"}),
		definedClass("t.apart", "ns/other", nil, "t.width"),
		definedClass("t.loop", "ns/other", []string{"t.knot", "t.base"}),
		definedClass("t.knot", "ns/other", []string{"t.loop"}),
	)
	if got, want := mm.classesUsing("t.depth"), []string{"t.base", "t.knot", "t.loop", "t.sub", "t.subsub"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("classes using t.depth: %v, want %v", got, want)
	}
	if got := mm.classesUsing("t.nothing"); len(got) != 0 {
		t.Fatalf("classes using t.nothing: %v", got)
	}

	err := mayReshape("t.depth", mm, "ns/author")
	if err == nil {
		t.Fatal("the author changes a property other owners' classes inherit")
	}
	for _, want := range []string{"t.sub (the account ns/other)", "t.subsub (made by an admin with kubectl or Helm)", "t.knot (the account ns/other)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "t.base") {
		t.Errorf("the refusal names the author's own class: %v", err)
	}
	if err := mayReshape("t.width", mm, "ns/other"); err != nil {
		t.Errorf("the owner of every class using it is refused: %v", err)
	}
}

// A refusal names a bounded number of classes, and how many more there are.
func TestARefusalNamesTenClassesAndCountsTheRest(t *testing.T) {
	var classes []*metav1alpha1.Class
	for i := range 25 {
		classes = append(classes, definedClass(fmt.Sprintf("t.c%02d", i), "ns/other", nil, "t.depth"))
	}
	err := mayReshape("t.depth", metamodelOf(classes...), "ns/author")
	if err == nil || !strings.Contains(err.Error(), "t.c09 (the account ns/other), and 15 more;") || strings.Contains(err.Error(), "t.c10") {
		t.Fatalf("refusal: %v", err)
	}
}
