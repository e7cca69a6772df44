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

package apps

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// A class's words go into the page as data: a description that closes the model's
// script element and opens one of its own stays text in the model.
func TestAClassCannotWriteScriptIntoItsView(t *testing.T) {
	hostile := `</script><script>parent.postMessage("pwned","*")</script><!--`
	c := &catalog.Class{Name: "zorp.evil", Prefix: "zorp", Kind: "Evil", Description: hostile,
		Slots: []*catalog.Slot{{Definition: &catalog.Definition{Field: "x", Range: "string", Description: hostile, Pattern: `</script>`}}}}
	page, err := Class(&catalog.Snapshot{Classes: map[string]*catalog.Class{c.Name: c}}, c, Tools{Create: "c", Find: "f", Update: "u"})
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if n := strings.Count(html, "</script>"); n != 2 {
		t.Fatalf("the page has %d script ends, want the model's and the bundle's: %s", n, html[:200])
	}
	_, rest, _ := strings.Cut(html, `<script type="application/json" id="sandbar-model">`)
	raw, _, _ := strings.Cut(rest, "</script>")
	var m classModel
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	if m.Description != hostile || m.Fields[0].Description != hostile || m.Fields[0].Pattern != `</script>` {
		t.Fatalf("the model does not carry the class's words as they are: %+v", m)
	}
}

func TestParseClassURI(t *testing.T) {
	for uri, want := range map[string]string{
		ClassURI("zorp", "SpaceBoot"):          "zorp SpaceBoot",
		"ui://sandbar/class/zorp":              "",
		"ui://sandbar/class//SpaceBoot":        "",
		"ui://sandbar/class/zorp/":             "",
		"ui://sandbar/class/zorp/Boot/x":       "",
		"ui://sandbar/class/zorp/Boot?x=1":     "",
		"ui://sandbar/workflows":               "",
		"mcp://sandbar/class/zorp/SpaceBoot":   "",
		"ui://sandbar/class/zorp/Space%2fBoot": "zorp Space%2fBoot", // the caller checks the kind's shape
	} {
		prefix, kind, ok := ParseClassURI(uri)
		got := ""
		if ok {
			got = prefix + " " + kind
		}
		if got != want {
			t.Errorf("ParseClassURI(%q) = %q, want %q", uri, got, want)
		}
	}
}

// A view takes at most MaxBytes: a class of many long-described slots is shown
// without the descriptions, and one too large even so has no view, and says why.
func TestAViewTakesAtMostMaxBytes(t *testing.T) {
	long := strings.Repeat("d", 2048)
	class := func(slots, enum int) *catalog.Class {
		c := &catalog.Class{Name: "zorp.big", Prefix: "zorp", Kind: "Big"}
		for i := range slots {
			d := &catalog.Definition{Field: fmt.Sprintf("f%d", i), Range: "string", Description: long}
			for j := range enum {
				d.Enum = append(d.Enum, fmt.Sprintf("%0250d", j))
			}
			c.Slots = append(c.Slots, &catalog.Slot{Definition: d})
		}
		return c
	}
	view := func(c *catalog.Class) ([]byte, error) {
		return Class(&catalog.Snapshot{Classes: map[string]*catalog.Class{c.Name: c}}, c, Tools{})
	}
	if !Fits(nil, class(1, 0)) {
		t.Fatal("a class measured on its own (no snapshot) has a view")
	}
	page, err := view(class(128, 0))
	if err != nil || len(page) > MaxBytes || strings.Contains(string(page), long) {
		t.Fatalf("128 slots of 2 KiB descriptions: %d bytes, %v; want the view without the descriptions", len(page), err)
	}
	if page, err = view(class(128, 16)); err == nil || !strings.Contains(err.Error(), "more than the 200 KiB a view may") {
		t.Fatalf("a view of %d bytes: %v; want an error that says why there is none", len(page), err)
	}
}
