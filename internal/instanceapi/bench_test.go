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
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// benchClass is a concrete class with 16 effective slots of mixed ranges, cardinalities
// and constraints, inherited from two ancestors.
func benchClass() (*catalog.Class, []string) {
	str := func(s catalog.Slot) catalog.Slot {
		s = s.Own()
		maxLen := int64(64)
		s.Pattern, s.MaxLength, s.Enum = `^[a-z][a-z0-9-]*$`, &maxLen, []string{"red", "green", "blue"}
		return s
	}
	bounded := func(s catalog.Slot) catalog.Slot {
		s = s.Own()
		lo, hi := 0.0, 1000.0
		s.Minimum, s.Maximum = &lo, &hi
		return s
	}
	ref := func(s catalog.Slot) catalog.Slot { s = s.Own(); s.Target = "zorp.alien"; return s }
	slots := []catalog.Slot{
		required(one("name", metav1alpha1.RangeString)),
		str(one("color", metav1alpha1.RangeString)),
		bounded(required(one("size", metav1alpha1.RangeInteger))),
		bounded(one("weight", metav1alpha1.RangeNumber)),
		one("worn", metav1alpha1.RangeBoolean),
		one("launched", metav1alpha1.RangeDateTime),
		one("serial", metav1alpha1.RangeUUID),
		one("homepage", metav1alpha1.RangeURI),
		many("tags", metav1alpha1.RangeKeyword),
		ref(one("owner", metav1alpha1.RangeRef)),
		ref(many("previousOwners", metav1alpha1.RangeRef)),
		one("extra", metav1alpha1.RangeJSON),
		bounded(required(one("tentacleCount", metav1alpha1.RangeInteger))),
		str(many("materials", metav1alpha1.RangeString)),
		one("style", metav1alpha1.RangeKeyword),
		many("repairs", metav1alpha1.RangeDateTime),
	}
	for i := range slots {
		slots[i].Description = "A slot of the benchmark class, described in a sentence or two for people and AI clients."
	}
	c := classWith(slots...)
	c.Ancestors = []string{"footwear.footwear", "zorp.boot"}
	c.Description = "A boot for beings with tentacles."
	c.InstanceAPIOptions.ShortNames = []string{"sb"}
	return c, []string{"Footwear", "Boot"}
}

var (
	benchCRD  *apiextensionsv1.CustomResourceDefinition
	benchJSON []byte
)

func BenchmarkCRD(b *testing.B) {
	c, kinds := benchClass()
	if n := len(CRD(c, kinds).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties); n != 16 {
		b.Fatalf("spec has %d properties, want 16", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		benchCRD = CRD(c, kinds)
	}
}

func BenchmarkCRDBaseline(b *testing.B) {
	c, kinds := benchClass()
	crd := CRD(c, kinds)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if benchJSON, err = json.Marshal(crd); err != nil {
			b.Fatal(err)
		}
	}
}
