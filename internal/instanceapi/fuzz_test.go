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

package instanceapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// maxObjects bounds the objects of one input, so that an exec stays quick.
const maxObjects = 32

// FuzzClassSpec decodes a JSON array of Classes, lets the API server's own checks of
// the Class CRD (schema, defaults, CEL rules) refuse what it would refuse, builds the
// catalog of the rest with the sample Properties and Classes, and generates the CRD of
// every concrete class that resolved: never a panic, and each CRD (its schema valid
// JSON) passes the validation the API server applies to a CRD.
func FuzzClassSpec(f *testing.F) {
	for _, seed := range []string{
		`[{"metadata":{"name":"zorp.moonboot"},"spec":{"prefix":"zorp","kind":"MoonBoot","parents":["zorp.spaceboot"],"slots":[{"property":"wearer.handle","required":true}]}}]`,
		`[{"metadata":{"name":"a.a"},"spec":{"prefix":"a","kind":"A","parents":["a.b"]}},{"metadata":{"name":"a.b"},"spec":{"prefix":"a","kind":"B","parents":["a.a"]}}]`,
		`[{"metadata":{"name":"zorp.spaceboot"},"spec":{"prefix":"zorp","kind":"SpaceBoot","slots":[{"property":"nope"}]}}]`,
		`[{"metadata":{"name":"x.y"},"spec":{"prefix":"x","kind":"Y","abstract":true,"instanceAPI":{"shortNames":["yy"]}}}]`,
		`[{"metadata":{"name":"x.z"},"spec":{"prefix":"x","kind":"Z","parents":["zorp.footwear","zorp.wearer"],"codec":{"format":"markdown"}}}]`,
		`[]`, `[{}]`, `[{"spec":{}}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var classes []metav1alpha1.Class
		if json.Unmarshal(data, &classes) != nil || len(classes) > maxObjects {
			return
		}
		in := sampleInputs(t)
		in.Classes = merge(in.Classes, admitted(t, "classes", classes), func(c metav1alpha1.Class) string { return c.Name })
		checkBuild(t, in, data)
	})
}

// FuzzPropertySpec is FuzzClassSpec for Properties: a JSON array of Properties
// (ranges, targets, enums, bounds, patterns) admitted as the API server would, then
// the catalog of the samples with them, and the CRDs of its concrete classes.
func FuzzPropertySpec(f *testing.F) {
	for _, seed := range []string{
		`[{"metadata":{"name":"footwear.name"},"spec":{"range":"keyword","enum":["zorp/a","zorp/b"]}}]`,
		`[{"metadata":{"name":"footwear.price"},"spec":{"range":"integer","minimum":5,"maximum":3}}]`,
		`[{"metadata":{"name":"wearer.boots"},"spec":{"range":"ref","target":"nope","cardinality":"many"}}]`,
		`[{"metadata":{"name":"footwear.name"},"spec":{"range":"string","pattern":"(","maxLength":0}}]`,
		`[{"metadata":{"name":"footwear.name"},"spec":{"range":"string","field":"price"}}]`,
		`[{"metadata":{"name":"footwear.tentacle-count"},"spec":{"range":"dateTime"}}]`,
		`[]`, `[{}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var properties []metav1alpha1.Property
		if json.Unmarshal(data, &properties) != nil || len(properties) > maxObjects {
			return
		}
		in := sampleInputs(t)
		in.Properties = merge(in.Properties, admitted(t, "properties", properties), func(p metav1alpha1.Property) string { return p.Name })
		checkBuild(t, in, data)
	})
}

// checkBuild builds the catalog and checks the CRD of every concrete class that
// resolved.
func checkBuild(t *testing.T, in catalog.Inputs, data []byte) {
	t.Helper()
	snap := catalog.Build(in)
	for _, name := range snap.ClassNames() {
		c := snap.Classes[name]
		if c.Problem != nil || c.Abstract || (c.InstanceAPIOptions.Enabled != nil && !*c.InstanceAPIOptions.Enabled) {
			continue
		}
		var kinds []string
		for _, a := range c.Ancestors {
			if ac := snap.Classes[a]; ac != nil {
				kinds = append(kinds, ac.Kind)
			}
		}
		crd := instanceapi.CRD(c, kinds)
		schema, err := json.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
		if err != nil || !json.Valid(schema) {
			t.Fatalf("class %s of %s: the schema is not JSON: %v", name, data, err)
		}
		if errs := instanceapi.ValidCRD(crd); len(errs) > 0 {
			t.Fatalf("class %s of %s resolved without a problem, but the API server would refuse its CRD: %v", name, data, errs.ToAggregate())
		}
	}
}

// admission is what the API server checks of one metamodel kind, from its CRD in
// config/crd/bases: defaults, the OpenAPI schema and the CEL rules.
type admission struct {
	structural *structuralschema.Structural
	schema     validation.SchemaValidator
	cel        *cel.Validator
}

var (
	admissions     = map[string]*admission{}
	admissionsErr  error
	admissionsOnce sync.Once
	samples        catalog.Inputs
)

// admitted are the objects the API server would store: those its CRD's defaults,
// schema and rules accept, defaulted.
func admitted[T any](t *testing.T, plural string, objs []T) []T {
	t.Helper()
	loadAdmissions(t)
	a := admissions[plural]
	var out []T
	for _, o := range objs {
		// The API server's checks of a custom resource's metadata (its name is a DNS
		// subdomain).
		if acc, err := meta.Accessor(&o); err != nil ||
			len(apivalidation.ValidateObjectMetaAccessor(acc, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))) > 0 {
			continue
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&o)
		if err != nil {
			continue
		}
		u["apiVersion"], u["kind"] = metav1alpha1.GroupVersion.String(), "X"
		structuraldefaulting.Default(u, a.structural)
		if errs := validation.ValidateCustomResource(nil, u, a.schema); len(errs) > 0 {
			continue
		}
		if errs, _ := a.cel.Validate(context.Background(), nil, a.structural, u, nil, celconfig.RuntimeCELCostBudget); len(errs) > 0 {
			continue
		}
		var typed T
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u, &typed) != nil {
			continue
		}
		out = append(out, typed)
	}
	return out
}

func loadAdmissions(t *testing.T) {
	t.Helper()
	admissionsOnce.Do(func() { admissionsErr = load() })
	if admissionsErr != nil {
		t.Fatal(admissionsErr)
	}
}

func load() error {
	for _, plural := range []string{"classes", "properties"} {
		objs, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "meta.sandbar.dev_"+plural+".yaml"))
		if err != nil || len(objs) != 1 {
			return fmt.Errorf("the CRD of %s: %v", plural, err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &crd); err != nil {
			return err
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &props, nil); err != nil {
			return err
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			return err
		}
		v, _, err := validation.NewSchemaValidator(&props)
		if err != nil {
			return err
		}
		admissions[plural] = &admission{structural: s, schema: v, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
	}
	in, err := readSamples()
	samples = in
	return err
}

// readSamples are the Classes and Properties of config/samples.
func readSamples() (catalog.Inputs, error) {
	var in catalog.Inputs
	for _, f := range []string{"classes.yaml", "properties.yaml"} {
		objs, err := testenv.Objects(filepath.Join(testenv.RepoRoot(), "config", "samples", f))
		if err != nil {
			return in, err
		}
		for _, o := range objs {
			switch o.GetKind() {
			case "Class":
				var c metav1alpha1.Class
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &c); err != nil {
					return in, err
				}
				in.Classes = append(in.Classes, c)
			case "Property":
				var p metav1alpha1.Property
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p); err != nil {
					return in, err
				}
				in.Properties = append(in.Properties, p)
			}
		}
	}
	return in, nil
}

// sampleInputs are copies of the samples' Classes and Properties.
func sampleInputs(t *testing.T) catalog.Inputs {
	t.Helper()
	loadAdmissions(t)
	in := catalog.Inputs{}
	for _, c := range samples.Classes {
		in.Classes = append(in.Classes, *c.DeepCopy())
	}
	for _, p := range samples.Properties {
		in.Properties = append(in.Properties, *p.DeepCopy())
	}
	return in
}

// merge is base with each of next in place of the object of its name (the last of a
// name wins, as a later apply would).
func merge[T any](base, next []T, name func(T) string) []T {
	byName := map[string]T{}
	for _, o := range base {
		byName[name(o)] = o
	}
	for _, o := range next {
		byName[name(o)] = o
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]T, 0, len(names))
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out
}

// The fuzz targets' admission refuses what the API server refuses and keeps the
// rest: the samples pass it, a Class with a prefix no API group could carry does not.
func TestFuzzAdmissionIsTheAPIServers(t *testing.T) {
	in := sampleInputs(t)
	if got := admitted(t, "classes", in.Classes); len(got) != len(in.Classes) {
		t.Fatalf("%d of the %d sample classes are admitted", len(got), len(in.Classes))
	}
	if got := admitted(t, "properties", in.Properties); len(got) != len(in.Properties) {
		t.Fatalf("%d of the %d sample properties are admitted", len(got), len(in.Properties))
	}
	bad := []metav1alpha1.Class{*in.Classes[0].DeepCopy(), *in.Classes[0].DeepCopy()}
	bad[0].Spec.Prefix = "Not A Prefix"
	bad[1].Spec.Parents = []string{bad[1].Name} // a CEL rule: not its own parent
	if got := admitted(t, "classes", bad); len(got) != 0 {
		t.Fatalf("admitted %v", got)
	}
}
