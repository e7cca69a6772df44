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

package envtest_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

func property(name string, r metav1alpha1.PropertyRange) *metav1alpha1.Property {
	return &metav1alpha1.Property{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       metav1alpha1.PropertySpec{Range: r},
	}
}

func class(name, prefix, kind string, parents []string, slots ...metav1alpha1.SlotRef) *metav1alpha1.Class {
	return &metav1alpha1.Class{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       metav1alpha1.ClassSpec{Prefix: prefix, Kind: kind, Parents: parents, Slots: slots},
	}
}

func slot(property string, required bool) metav1alpha1.SlotRef {
	return metav1alpha1.SlotRef{Property: property, Required: required}
}

// create creates objects and deletes them when the test ends.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		NewWithT(t).Expect(k8s.Create(context.Background(), o)).To(Succeed(), "creating %s", o.GetName())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
}

func abstract(c *metav1alpha1.Class) *metav1alpha1.Class {
	c.Spec.Abstract = true
	return c
}
