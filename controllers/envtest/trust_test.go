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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Prefix meta would generate instance APIs in meta.sandbar.dev, the metamodel's own
// group (a Class of kind ServiceAccount would claim serviceaccounts.meta.sandbar.dev).
// The API server refuses such a Class, and nothing is generated.
func TestPrefixMetaIsRefusedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, kind := range []string{"ServiceAccount", uniq("Widget")} {
		c := class(uniq("meta.")+"x", "meta", kind, nil)
		err := k8s.Create(ctx, c)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring(
			"spec.prefix: Invalid value: \"string\": prefix meta is reserved: it would name the API group meta.sandbar.dev")))
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c), &metav1alpha1.Class{}))).To(BeTrue())
	}
	// The metamodel's own CRD is as the chart installed it.
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "serviceaccounts.meta.sandbar.dev"}, &crd)).To(Succeed())
	g.Expect(crd.Labels).NotTo(HaveKey(metav1alpha1.LabelClass))
	// A prefix that merely starts with meta is a prefix like any other.
	create(t, class(uniq("metal.")+"x", uniq("metal"), "Ingot", nil))
}
