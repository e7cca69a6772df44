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
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

const (
	// maxPrinterSlots is how many slot columns kubectl get shows for instances.
	maxPrinterSlots = 4
	// maxSelectableSlots is how many slots a field selector can filter on: the API
	// server allows eight selectable fields per version.
	maxSelectableSlots = 8
	// CategoryAll is the kubectl category of every instance of every class.
	CategoryAll = "sandbar-instances"
)

// SlotSchema is the OpenAPI schema of one slot's value, following the metamodel's
// type table: string, integer, number and boolean map to their JSON types; date-time,
// uuid and uri are strings with that format; keyword is a string of the keyword shape;
// ref is the name of an instance of the target class; json is any value; cardinality
// many wraps the value schema in an array. Constraints carry through.
func SlotSchema(s catalog.Slot) apiextensionsv1.JSONSchemaProps {
	// An unknown range is stored as text and says so in its description (see
	// catalog.RangeOf); coercion refuses its values.
	info, _ := catalog.SlotRange(s)
	v := apiextensionsv1.JSONSchemaProps{Type: info.CRDType, Format: info.CRDFormat, Pattern: info.CRDPattern}
	if info.AnyJSON {
		v.XPreserveUnknownFields = ptr(true)
	}
	if s.Pattern != "" {
		v.Pattern = s.Pattern
	}
	v.MaxLength = s.MaxLength
	v.Minimum = s.Minimum
	v.Maximum = s.Maximum
	for _, e := range s.Enum {
		raw, _ := json.Marshal(e) // a string always marshals
		v.Enum = append(v.Enum, apiextensionsv1.JSON{Raw: raw})
	}
	desc := strings.TrimSpace(s.Description + " " + info.CRDHint)
	if s.Many() {
		return apiextensionsv1.JSONSchemaProps{
			Type:        "array",
			Description: desc,
			Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &v},
		}
	}
	v.Description = desc
	return v
}

// Schema is the OpenAPI schema of a class's instances: the effective slots under
// spec, required slots required, and a free-form status.
func Schema(c *catalog.Class) *apiextensionsv1.JSONSchemaProps {
	spec := apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: fmt.Sprintf("The slot values of this %s.", c.Ident()),
		Properties:  map[string]apiextensionsv1.JSONSchemaProps{},
	}
	for _, s := range c.Slots {
		spec.Properties[s.Field] = SlotSchema(*s)
	}
	spec.Required = append([]string(nil), c.Required...)
	root := &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: classDescription(c),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			// The API server publishes apiVersion, kind and metadata with the
			// standard descriptions (kubectl explain shows those): repeating them in
			// every generated CRD would only cost its bytes.
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       spec,
			"status": {
				Type:                   "object",
				Description:            "Status written by tools and controllers that work on the instance.",
				XPreserveUnknownFields: ptr(true),
			},
		},
	}
	if len(spec.Required) > 0 {
		root.Required = []string{"spec"}
	}
	return root
}

func classDescription(c *catalog.Class) string {
	d := fmt.Sprintf("An instance of the Sandbar class %s", c.Ident())
	if len(c.Ancestors) > 0 {
		d += " (a kind of " + strings.Join(c.Ancestors, ", ") + ")"
	}
	d += "."
	if c.Description != "" {
		d += " " + c.Description
	}
	return d
}

// PrinterColumns shows up to four single-valued slots, required ones first, and the age.
func PrinterColumns(c *catalog.Class) []apiextensionsv1.CustomResourceColumnDefinition {
	var picked []*catalog.Slot
	column := func(s *catalog.Slot) string {
		info, _ := catalog.RangeOf(s.Range) // an unknown range has no column
		return info.Column
	}
	for _, required := range []bool{true, false} {
		for _, s := range c.Slots {
			if len(picked) < maxPrinterSlots && s.Required == required && !s.Many() && column(s) != "" {
				picked = append(picked, s)
			}
		}
	}
	var cols []apiextensionsv1.CustomResourceColumnDefinition
	for _, s := range picked {
		cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{
			Name:     columnName(s.Field),
			Type:     column(s),
			JSONPath: ".spec." + s.Field,
		})
	}
	return append(cols, apiextensionsv1.CustomResourceColumnDefinition{
		Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
	})
}

// SelectableSlots are the fields of the slots the API server can filter instances by
// with a field selector (spec.<field>=<value>): up to eight single-valued slots stored
// as a string, an integer or a boolean, required ones first, in slot order.
func SelectableSlots(c *catalog.Class) []string {
	var out []string
	for _, required := range []bool{true, false} {
		for _, s := range c.Slots {
			info, known := catalog.SlotRange(*s)
			if len(out) == maxSelectableSlots || s.Required != required || s.Many() || !known || info.AnyJSON {
				continue
			}
			switch info.CRDType {
			case "string", "integer", "boolean":
				out = append(out, s.Field)
			}
		}
	}
	return out
}

// SelectableFields declares SelectableSlots in a CRD version.
func SelectableFields(c *catalog.Class) []apiextensionsv1.SelectableField {
	var out []apiextensionsv1.SelectableField
	for _, f := range SelectableSlots(c) {
		out = append(out, apiextensionsv1.SelectableField{JSONPath: ".spec." + f})
	}
	return out
}

// columnName turns tentacleCount into Tentacle-Count, in the style of kubectl's
// headers; a slot named like one of kubectl's own columns gets a "Spec-" prefix.
func columnName(field string) string {
	var b strings.Builder
	switch field {
	case "name", "namespace", "age":
		b.WriteString("Spec-")
	}
	for i, r := range field {
		if r >= 'A' && r <= 'Z' && i > 0 {
			b.WriteByte('-')
		}
		if i == 0 && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Categories puts instances in "sandbar-instances", in their prefix ("kubectl get zorp")
// and in the lower-case kind of every ancestor ("kubectl get footwear" lists every
// SpaceBoot when SpaceBoot inherits from Footwear).
func Categories(c *catalog.Class, ancestorKinds []string) []string {
	seen := map[string]bool{}
	out := []string{CategoryAll}
	seen[CategoryAll] = true
	add := func(s string) {
		s = strings.ToLower(s)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	add(c.Prefix)
	kinds := append([]string(nil), ancestorKinds...)
	sort.Strings(kinds)
	for _, k := range kinds {
		add(k)
	}
	return out
}

// CRD synthesises the CustomResourceDefinition that serves the instances of a
// resolved, concrete class. ancestorKinds are the kinds of its ancestors.
func CRD(c *catalog.Class, ancestorKinds []string) *apiextensionsv1.CustomResourceDefinition {
	n := catalog.NamesFor(c)
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name: n.CRDName,
			Labels: map[string]string{
				metav1alpha1.LabelClass:     c.Name,
				metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue,
			},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: n.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     n.Plural,
				Singular:   n.Singular,
				Kind:       n.Kind,
				ListKind:   n.ListKind,
				ShortNames: c.InstanceAPIOptions.ShortNames,
				Categories: Categories(c, ancestorKinds),
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:                     n.Version,
				Served:                   true,
				Storage:                  true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: Schema(c)},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: PrinterColumns(c),
				SelectableFields:         SelectableFields(c),
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }
