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
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// BreakingChanges lists the differences between the spec schemas of two versions of a
// class's instance API that stored instances may not survive: a slot removed, a slot's
// type changed (including one value versus many), a slot newly required. Loosening
// changes (a new optional slot, a slot no longer required) are not breaking.
func BreakingChanges(old, next *apiextensionsv1.JSONSchemaProps) []string {
	oldSpec, newSpec := specOf(old), specOf(next)
	var out []string
	for _, field := range sortedFields(oldSpec.Properties) {
		o := oldSpec.Properties[field]
		n, ok := newSpec.Properties[field]
		if !ok {
			out = append(out, fmt.Sprintf("slot %q is removed", field))
			continue
		}
		if a, b := typeOf(o), typeOf(n); a != b {
			out = append(out, fmt.Sprintf("slot %q changes type from %s to %s", field, a, b))
		}
	}
	wasRequired := map[string]bool{}
	for _, f := range oldSpec.Required {
		wasRequired[f] = true
	}
	for _, f := range newSpec.Required {
		if !wasRequired[f] {
			out = append(out, fmt.Sprintf("slot %q becomes required", f))
		}
	}
	return out
}

func specOf(root *apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	if root == nil {
		return apiextensionsv1.JSONSchemaProps{}
	}
	return root.Properties["spec"]
}

// typeOf describes a schema's type for comparison: "string", "string/date-time",
// "array of integer", "any".
func typeOf(s apiextensionsv1.JSONSchemaProps) string {
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		return "array of " + typeOf(*s.Items.Schema)
	}
	if s.Type == "" {
		return "any"
	}
	if s.Format != "" && s.Format != "int64" && s.Format != "double" {
		return s.Type + "/" + s.Format
	}
	return s.Type
}

func sortedFields(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
