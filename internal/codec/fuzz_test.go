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
	"testing"
)

// Any text is either a document or an error with a place: never a panic.
func FuzzDecodeMarkdown(f *testing.F) {
	f.Add(canonical)
	f.Add("---\n---\n")
	f.Add("---\nmetadata: 3\n---\n# body\n")
	f.Add("---\ntitle: [1,\n")
	f.Fuzz(func(t *testing.T, src string) {
		doc, err := DecodeMarkdown(review, src)
		if err == nil && doc == nil {
			t.Fatal("no document and no error")
		}
		if err == nil {
			if _, err := EncodeMarkdown(review, "x", doc.Attributes); err != nil {
				t.Fatalf("a decoded document does not encode: %v", err)
			}
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add(`{"spec": {"title": "x"}}`)
	f.Add("{")
	f.Add("[]")
	f.Fuzz(func(t *testing.T, src string) {
		doc, err := DecodeJSON(src)
		if err == nil && doc == nil {
			t.Fatal("no document and no error")
		}
	})
}
