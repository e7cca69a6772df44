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

package instanceapi

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// validCRD is the validation the API server applies to a CRD it is asked to create.
func validCRD(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	crd = crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)
}

// TestTheAPIServerBenchmarksCRDsAreValid checks, without a control plane, that the API
// server accepts every CRD the API server benchmarks apply: make bench is the only
// other place they are created, and a CRD it refuses fails that run.
func TestTheAPIServerBenchmarksCRDsAreValid(t *testing.T) {
	for name, generate := range map[string]func(*catalog.Class, []string) *apiextensionsv1.CustomResourceDefinition{
		"generated": CRD, "baseline": crdBefore, "floor": crdFloor,
	} {
		class, kinds := benchClassN(0)
		if errs := validCRD(generate(class, kinds)); len(errs) > 0 {
			t.Errorf("the API server would refuse the %s CRD: %v", name, errs.ToAggregate())
		}
	}
}
