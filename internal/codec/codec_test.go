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

package codec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

var review = &catalog.Class{
	Prefix: "zorp", Kind: "Review",
	Slots: []*catalog.Slot{
		{Definition: &catalog.Definition{Field: "title", Range: metav1alpha1.RangeString, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &catalog.Definition{Field: "rating", Range: metav1alpha1.RangeInteger, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &catalog.Definition{Field: "tags", Range: metav1alpha1.RangeString, Cardinality: metav1alpha1.CardinalityMany}},
		{Definition: &catalog.Definition{Field: "body", Range: metav1alpha1.RangeString, Cardinality: metav1alpha1.CardinalityOne}},
		{Definition: &catalog.Definition{Field: "summary", Range: metav1alpha1.RangeString, Cardinality: metav1alpha1.CardinalityOne}},
	},
	Codec: metav1alpha1.CodecSpec{Format: metav1alpha1.CodecMarkdown, Sections: []string{"summary", "body"}},
}

const canonical = `---
metadata:
  name: great-boots
title: 'Great boots: would walk again'
rating: 5
tags:
- vacuum
- comfy
---

# summary

Short and sweet.

# body

They fit all eight tentacles.

## Details

Even in hard vacuum.
`

func TestMarkdownRoundTrip(t *testing.T) {
	doc, err := DecodeMarkdown(review, canonical)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Metadata["name"] != "great-boots" || doc.Attributes["rating"] != float64(5) {
		t.Errorf("decoded %+v", doc)
	}
	if got := doc.Attributes["body"]; got != "They fit all eight tentacles.\n\n## Details\n\nEven in hard vacuum." {
		t.Errorf("body = %q", got)
	}
	out, err := EncodeMarkdown(review, "great-boots", doc.Attributes)
	if err != nil {
		t.Fatal(err)
	}
	if out != canonical {
		t.Errorf("round trip changed the document:\n%s\nwant\n%s", out, canonical)
	}
}

func TestMarkdownErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ desc, src, want string }{
		{"no front matter", "title: x\n", "line 1: a Markdown instance starts with a --- line"},
		{"unclosed", "---\ntitle: x\n", "the front matter is not closed"},
		{"bad YAML", "---\ntitle: x\nrating: [1\n---\n", "line 3: front matter:"},
		{"unknown slot", "---\ntitle: x\ncolour: red\n---\n", `line 3, field "colour": not a slot of zorp/Review`},
		{"unknown section", "---\ntitle: x\n---\n\n# verdict\n\ngood\n", `line 5, field "verdict": not a section of zorp/Review; its sections are: summary, body`},
		{"text outside a section", "---\ntitle: x\n---\n\nloose words\n", "line 5: text outside a section"},
		{"section twice", "---\ntitle: x\n---\n# body\na\n# body\nb\n", `line 6, field "body": given twice`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := DecodeMarkdown(review, tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	doc, err := DecodeJSON(`{"metadata": {"name": "a"}, "spec": {"title": "T"}}`)
	if err != nil || doc.Metadata["name"] != "a" || doc.Attributes["title"] != "T" {
		t.Errorf("decoded %+v, %v", doc, err)
	}
	doc, err = DecodeJSON(`{"title": "T"}`)
	if err != nil || doc.Attributes["title"] != "T" || doc.Metadata != nil {
		t.Errorf("decoded %+v, %v", doc, err)
	}
	_, err = DecodeJSON("{\n  \"title\": }")
	if err == nil || !strings.Contains(err.Error(), "line 2: not valid JSON") {
		t.Errorf("error = %v", err)
	}
	out, err := EncodeJSON("a", map[string]any{"title": "T"})
	if err != nil {
		t.Fatal(err)
	}
	if doc, err := DecodeJSON(out); err != nil || doc.Attributes["title"] != "T" || doc.Metadata["name"] != "a" {
		t.Errorf("JSON round trip: %+v, %v", doc, err)
	}
}

// The formats tools offer are the formats a Class may declare: the CRD's enum of
// spec.codec.format.
func TestFormatsAreTheClassCRDsEnum(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "meta.sandbar.dev_classes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	format := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["codec"].Properties["format"]
	var enum []string
	for _, v := range format.Enum {
		enum = append(enum, strings.Trim(string(v.Raw), `"`))
	}
	if got := FormatNames(); !slices.Equal(got, enum) {
		t.Errorf("codec.Formats are %v, the Class CRD's spec.codec.format enum %v", got, enum)
	}
	for _, name := range enum {
		if f, ok := ParseFormat(name); !ok || MIMEType(f) == "" {
			t.Errorf("%s: not parsed, or no MIME type", name)
		}
	}
}
