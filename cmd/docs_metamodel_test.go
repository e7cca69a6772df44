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

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crds are the CRDs of config/crd/bases, in the order of their file names.
func crds(t *testing.T) []apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	sort.Strings(files)
	var out []apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, crd)
	}
	return out
}

// docs/reference/metamodel.md is every field of every CRD of meta.sandbar.dev, as
// the API server checks it.
func TestMetamodelReference(t *testing.T) {
	checkGenerated(t, "docs/reference/metamodel.md", "TestMetamodelReference", renderMetamodel(crds(t)))
}

func renderMetamodel(crds []apiextensionsv1.CustomResourceDefinition) string {
	var b strings.Builder
	b.WriteString(generatedHeader("TestMetamodelReference", "`config/crd/bases` (which `make manifests` writes from `api/v1alpha1`)"))
	b.WriteString("# Metamodel reference\n\n")
	b.WriteString("Every kind of the API group `meta.sandbar.dev`, as its CRD in `config/crd/bases` declares it\n")
	b.WriteString("(the chart installs the same CRDs from `charts/sandbar/crds`): the columns `kubectl get` shows,\n")
	b.WriteString("and every field of `spec` and `status` with its type, whether it is required, its default,\n")
	b.WriteString("what the API server checks (enums, bounds, patterns, CEL rules) and its description.\n")
	b.WriteString("How to write these objects, with examples: [Metamodel](../metamodel.md).\n\n")
	b.WriteString("A path `a[]` is a list and `a[].b` a field of its items; `a{}` is a map and `a{}.b` a field of its values.\n")
	b.WriteString("Conditions are the standard Kubernetes `metav1.Condition` (`type`, `status`, `reason`, `message`,\n")
	b.WriteString("`lastTransitionTime`, `observedGeneration`).\n\n")
	for _, crd := range crds {
		fmt.Fprintf(&b, "- [%s](#%s)\n", crd.Spec.Names.Kind, strings.ToLower(crd.Spec.Names.Kind))
	}
	for _, crd := range crds {
		renderCRD(&b, crd)
	}
	return b.String()
}

func renderCRD(b *strings.Builder, crd apiextensionsv1.CustomResourceDefinition) {
	n := crd.Spec.Names
	fmt.Fprintf(b, "\n## %s\n\n", n.Kind)
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		root := v.Schema.OpenAPIV3Schema
		fmt.Fprintf(b, "%s\n\n", prose(root.Description))
		names := []string{code(n.Plural), code(n.Singular)}
		for _, s := range n.ShortNames {
			names = append(names, code(s))
		}
		fmt.Fprintf(b, "| | |\n|---|---|\n")
		fmt.Fprintf(b, "| API version | `%s/%s` |\n", crd.Spec.Group, v.Name)
		fmt.Fprintf(b, "| scope | %s |\n", crd.Spec.Scope)
		fmt.Fprintf(b, "| kubectl names | %s |\n", strings.Join(names, ", "))
		if len(n.Categories) > 0 {
			fmt.Fprintf(b, "| categories | `%s` |\n", strings.Join(n.Categories, "`, `"))
		}
		if v.Subresources != nil && v.Subresources.Status != nil {
			b.WriteString("| status subresource | yes |\n")
		}
		if len(v.AdditionalPrinterColumns) > 0 {
			b.WriteString("\n`kubectl get` columns (priority 1: with `-o wide`):\n\n")
			b.WriteString("| column | type | JSONPath | priority |\n|---|---|---|---|\n")
			for _, c := range v.AdditionalPrinterColumns {
				fmt.Fprintf(b, "| %s | %s | %s | %d |\n", cell(c.Name), c.Type, cell(code(c.JSONPath)), c.Priority)
			}
		}
		if rules := root.XValidations; len(rules) > 0 {
			b.WriteString("\nRules on the whole object (CEL), with the message the API server answers:\n\n")
			for _, r := range rules {
				fmt.Fprintf(b, "- %s (`%s`)\n", prose(r.Message), strings.Join(strings.Fields(r.Rule), " "))
			}
		}
		b.WriteString("\n| field | type | required | default | checks | description |\n|---|---|---|---|---|---|\n")
		for _, part := range []string{"spec", "status"} {
			if s, ok := root.Properties[part]; ok {
				fieldRows(b, part, s, hasString(root.Required, part))
			}
		}
	}
}

// fieldRows writes the row of a field and of every field under it.
func fieldRows(b *strings.Builder, path string, s apiextensionsv1.JSONSchemaProps, required bool) {
	req := ""
	if required {
		req = "yes"
	}
	def := ""
	if s.Default != nil {
		def = cell(code(string(s.Default.Raw)))
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", path, schemaType(s), req, def, cell(checks(s)), cell(prose(s.Description)))
	if isConditions(s) {
		return
	}
	switch {
	case len(s.Properties) > 0:
		for _, k := range sortedProps(s.Properties) {
			fieldRows(b, path+"."+k, s.Properties[k], hasString(s.Required, k))
		}
	case s.Items != nil && s.Items.Schema != nil && len(s.Items.Schema.Properties) > 0:
		it := s.Items.Schema
		for _, k := range sortedProps(it.Properties) {
			fieldRows(b, path+"[]."+k, it.Properties[k], hasString(it.Required, k))
		}
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && len(s.AdditionalProperties.Schema.Properties) > 0:
		v := s.AdditionalProperties.Schema
		for _, k := range sortedProps(v.Properties) {
			fieldRows(b, path+"{}."+k, v.Properties[k], hasString(v.Required, k))
		}
	}
}

// isConditions tells a list of metav1.Condition, whose fields every Kubernetes user knows.
func isConditions(s apiextensionsv1.JSONSchemaProps) bool {
	if s.Items == nil || s.Items.Schema == nil {
		return false
	}
	_, ok := s.Items.Schema.Properties["lastTransitionTime"]
	return ok
}

func schemaType(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case isConditions(s):
		return "[]Condition"
	case s.XIntOrString:
		return "int or string"
	case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && s.Type == "":
		return "any"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + schemaType(*s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + schemaType(*s.AdditionalProperties.Schema)
	case s.Format != "" && s.Type != "":
		return s.Type + " (" + s.Format + ")"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

// checks is what the API server checks of a value, besides its type.
func checks(s apiextensionsv1.JSONSchemaProps) string {
	var out []string
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, "`"+string(e.Raw)+"`")
		}
		out = append(out, "one of "+strings.Join(vals, ", "))
	}
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	if s.Minimum != nil {
		out = append(out, "minimum "+num(s.Minimum))
	}
	if s.Maximum != nil {
		out = append(out, "maximum "+num(s.Maximum))
	}
	for _, l := range []struct {
		name string
		v    *int64
	}{{"min length", s.MinLength}, {"max length", s.MaxLength}, {"min items", s.MinItems}, {"max items", s.MaxItems}, {"min properties", s.MinProperties}, {"max properties", s.MaxProperties}} {
		if l.v != nil {
			out = append(out, fmt.Sprintf("%s %d", l.name, *l.v))
		}
	}
	if s.Pattern != "" {
		out = append(out, "pattern "+code(s.Pattern))
	}
	if s.XListType != nil && *s.XListType != "atomic" {
		lt := "list type " + *s.XListType
		if len(s.XListMapKeys) > 0 {
			lt += " (keys " + strings.Join(s.XListMapKeys, ", ") + ")"
		}
		out = append(out, lt)
	}
	for _, r := range s.XValidations {
		msg := r.Message
		if msg == "" {
			msg = "rule"
		}
		out = append(out, fmt.Sprintf("%s (`%s`)", prose(msg), r.Rule))
	}
	if s.Items != nil && s.Items.Schema != nil && len(s.Items.Schema.Properties) == 0 {
		if c := checks(*s.Items.Schema); c != "" {
			out = append(out, "each item: "+c)
		}
	}
	return strings.Join(out, "; ")
}

func sortedProps(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func hasString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// jsonText is v as compact JSON, for a table cell.
func jsonText(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}
