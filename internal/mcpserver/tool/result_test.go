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

package tool

import (
	"encoding/json"
	"strings"
	"testing"
)

// A result whose JSON is clean is sent as the same bytes, its structured content
// given as that JSON; one whose JSON a scrub would change, or that holds an escape,
// keeps its value, so that redaction walks every string of it.
func TestEncodedOnceResultSendsTheSameBytes(t *testing.T) {
	scrub := func(s string) string { return strings.ReplaceAll(s, "SECRET", "[REDACTED]") }
	value := map[string]any{"class": "zorp/SpaceBoot", "slots": []any{map[string]any{"field": "name", "required": true}},
		"count": 3.5}
	want, err := json.Marshal(JSONResult(value))
	if err != nil {
		t.Fatal(err)
	}
	res, clean := jsonResult(value, scrub)
	if _, ok := res.StructuredContent.(json.RawMessage); !ok || !clean {
		t.Fatalf("a clean result keeps its value: %T, clean %v", res.StructuredContent, clean)
	}
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the settled result is sent as\n%s\nnot\n%s", got, want)
	}

	for name, v := range map[string]any{
		"a credential":        map[string]any{"token": "SECRET"},
		"a line break":        map[string]any{"note": "a\nSECRET"},
		"a tab":               map[string]any{"note": "a\tb"},
		"a \\u escape":        map[string]any{"note": "a\u2028b"},
		"a control character": map[string]any{"note": "a\x01b"},
	} {
		res, clean := jsonResult(v, scrub)
		if _, ok := res.StructuredContent.(map[string]any); !ok {
			t.Errorf("a result with %s is encoded once (%T): redaction would not walk its value", name, res.StructuredContent)
		}
		if clean {
			t.Errorf("a result with %s is vouched for: redaction would not scan it", name)
		}
	}
	// A quote or a backslash is escaped with a character no credential has, and <, >
	// and & are not escaped: the JSON scans as its strings do.
	for name, v := range map[string]any{
		"a quote":     map[string]any{"note": `a keyword such as "ns/name"`},
		"a backslash": map[string]any{"path": `C:\dir`, "both": `\"`},
		"<, > and &":  map[string]any{"note": `say <b> & "hi"`},
	} {
		res, clean := jsonResult(v, scrub)
		raw, ok := res.StructuredContent.(json.RawMessage)
		want, _ := marshal(v)
		if !ok || !clean || string(raw) != string(want) {
			t.Errorf("a clean result with %s: structured content %T %s, want its JSON %s", name, res.StructuredContent, raw, want)
		}
	}
	res, clean = jsonResult(value, nil)
	if _, ok := res.StructuredContent.(map[string]any); !ok || clean {
		t.Errorf("without a scrub a result is encoded once (%T)", res.StructuredContent)
	}
}
