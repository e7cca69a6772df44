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
	"regexp"
	"strings"
	"testing"
)

func TestPureCanonicalNames(t *testing.T) {
	cases := []struct{ got, want string }{
		{CanonicalVerb("entity", "create"), "sandbar.entity.create"},
		{CanonicalVerb("class", "direct-slots"), "sandbar.class.direct-slots"},
		{CanonicalClassTool("zorp", "SpaceBoot"), "sandbar.class.zorp.SpaceBoot"},
		{CanonicalClassTool("space-fleet", "Boot"), "sandbar.class.space-fleet.Boot"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("canonical name = %q, want %q", tc.got, tc.want)
		}
	}
}

func TestPureEncode(t *testing.T) {
	cases := []struct {
		name      string
		style     NameStyle
		canonical string
		want      string
	}{
		{"verb underscore", StyleUnderscore, CanonicalVerb("entity", "create"), "sandbar_entity_create"},
		{"verb dotted", StyleDotted, CanonicalVerb("entity", "create"), "sandbar.entity.create"},
		{"dashed verb underscore", StyleUnderscore, CanonicalVerb("class", "direct-slots"), "sandbar_class_direct-slots"},
		{"dashed verb dotted", StyleDotted, CanonicalVerb("class", "direct-slots"), "sandbar.class.direct-slots"},
		{"class tool underscore", StyleUnderscore, CanonicalClassTool("zorp", "SpaceBoot"), "sandbar_class_zorp_SpaceBoot"},
		{"class tool dotted", StyleDotted, CanonicalClassTool("zorp", "SpaceBoot"), "sandbar.class.zorp.SpaceBoot"},
		{"dashed prefix underscore", StyleUnderscore, CanonicalClassTool("space-fleet", "Boot"), "sandbar_class_space-fleet_Boot"},
		{"dashed prefix dotted", StyleDotted, CanonicalClassTool("space-fleet", "Boot"), "sandbar.class.space-fleet.Boot"},
		{"unknown style spells underscores", NameStyle(""), CanonicalVerb("entity", "get"), "sandbar_entity_get"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Encode(tc.style, tc.canonical)
			if got != tc.want {
				t.Errorf("Encode(%q, %q) = %q, want %q", tc.style, tc.canonical, got, tc.want)
			}
			if tc.style != StyleDotted && !ClientSafeName.MatchString(got) {
				t.Errorf("Encode(%q, %q) = %q, which does not match %s", tc.style, tc.canonical, got, ClientSafeName)
			}
		})
	}
}

// exactly64 is a canonical class-tool name of exactly 64 characters.
var exactly64 = CanonicalClassTool("zorp", "K"+strings.Repeat("x", 64-len("sandbar.class.zorp.")-1))

// A name that needs no shortening keeps its length, and its separators are all
// Encode changes: it reads back as its canonical name.
func TestPureEncodeChangesOnlyTheSeparators(t *testing.T) {
	if len(exactly64) != 64 {
		t.Fatalf("test setup: len(exactly64) = %d", len(exactly64))
	}
	names := []string{
		CanonicalVerb("entity", "create"),
		CanonicalVerb("class", "direct-slots"),
		CanonicalVerb("workflow", "list"),
		CanonicalClassTool("zorp", "SpaceBoot"),
		CanonicalClassTool("space-fleet", "Boot"),
		exactly64,
	}
	for _, style := range []NameStyle{StyleUnderscore, StyleDotted} {
		for _, canonical := range names {
			t.Run(string(style)+"/"+canonical, func(t *testing.T) {
				enc := Encode(style, canonical)
				if len(enc) != len(canonical) {
					t.Errorf("Encode(%q, %q) = %q changed the length", style, canonical, enc)
				}
				if got := strings.ReplaceAll(enc, "_", "."); got != canonical {
					t.Errorf("Encode(%q, %q) = %q, which reads back as %q", style, canonical, enc, got)
				}
			})
		}
	}
}

func TestPureEncodeShortensLongNames(t *testing.T) {
	long65 := CanonicalClassTool("zorp", "K"+strings.Repeat("x", 65-len("sandbar.class.zorp.")-1))
	common := strings.Repeat("A", 60)
	a := CanonicalClassTool("zorp", common+"One")
	b := CanonicalClassTool("zorp", common+"Two")
	huge := CanonicalClassTool("a-very-long-prefix", strings.Repeat("Kind", 50))
	hashTail := regexp.MustCompile(`_[0-9a-f]{8}$`)
	cases := []struct {
		name      string
		canonical string
	}{
		{"65 characters", long65},
		{"common start one", a},
		{"common start two", b},
		{"200+ characters", huge},
	}
	for _, style := range []NameStyle{StyleUnderscore, StyleDotted} {
		for _, tc := range cases {
			t.Run(string(style)+"/"+tc.name, func(t *testing.T) {
				if len(tc.canonical) <= 64 {
					t.Fatalf("test setup: %q is not long", tc.canonical)
				}
				got := Encode(style, tc.canonical)
				if len(got) != 64 {
					t.Errorf("Encode(%q, %q) = %q of %d characters, want 64", style, tc.canonical, got, len(got))
				}
				if again := Encode(style, tc.canonical); again != got {
					t.Errorf("Encode is not deterministic: %q then %q", got, again)
				}
				if !hashTail.MatchString(got) {
					t.Errorf("Encode(%q, %q) = %q does not end in _ and 8 hex digits", style, tc.canonical, got)
				}
				if style == StyleUnderscore && !ClientSafeName.MatchString(got) {
					t.Errorf("Encode(%q, %q) = %q, which does not match %s", style, tc.canonical, got, ClientSafeName)
				}
				wantStart := "sandbar.class."
				if style == StyleUnderscore {
					wantStart = "sandbar_class_"
				}
				if !strings.HasPrefix(got, wantStart) {
					t.Errorf("Encode(%q, %q) = %q lost its readable start %q", style, tc.canonical, got, wantStart)
				}
			})
		}
		if ea, eb := Encode(style, a), Encode(style, b); ea == eb {
			t.Errorf("%s: two long names with a common 60-character start both encode to %q", style, ea)
		}
	}
	if got := Encode(StyleUnderscore, exactly64); got != strings.ReplaceAll(exactly64, ".", "_") {
		t.Errorf("a name of exactly 64 characters was changed: %q", got)
	}
}
