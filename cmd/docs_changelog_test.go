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
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A release's notes on GitHub are its section of CHANGELOG.md, which
// hack/release-notes.sh reads when a tag is pushed: these tests keep the changelog in
// the shape the script reads, and the script reading what a maintainer writes.

// releaseNotes runs hack/release-notes.sh and returns what it prints, what it says on
// stderr, and whether it succeeded.
func releaseNotes(t *testing.T, version, changelog string) (string, string, bool) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "hack", "release-notes.sh"), version, changelog)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running hack/release-notes.sh: %v", err)
	}
	return stdout.String(), stderr.String(), err == nil
}

var changelogHeading = regexp.MustCompile(`(?m)^## (.*)$`)

// releaseHeading is the heading of a released version, as "[0.2.0] - 2026-12-01".
var releaseHeading = regexp.MustCompile(`^\[(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\] - \d{4}-\d{2}-\d{2}$`)

// TestDocsChangelog checks that CHANGELOG.md starts with an Unreleased section, that
// every other section is a version with its date, and that every version has notes the
// release can print.
func TestDocsChangelog(t *testing.T) {
	path := filepath.Join(repoRoot, "CHANGELOG.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	headings := changelogHeading.FindAllStringSubmatch(string(raw), -1)
	if len(headings) == 0 || headings[0][1] != "[Unreleased]" {
		t.Fatalf("CHANGELOG.md: the first section must be \"## [Unreleased]\", where changes are noted until a release")
	}
	for _, h := range headings[1:] {
		m := releaseHeading.FindStringSubmatch(h[1])
		if m == nil {
			t.Errorf("CHANGELOG.md: %q is not a release heading, as \"## [0.2.0] - 2026-12-01\"", h[0])
			continue
		}
		notes, stderr, ok := releaseNotes(t, m[1], path)
		if !ok || strings.TrimSpace(notes) == "" {
			t.Errorf("CHANGELOG.md: the release notes of %s cannot be read: %s", m[1], stderr)
		}
	}
}

// TestDocsReleaseNotes checks that the script prints exactly one version's section,
// with or without the tag's v and the section's date, and refuses a version without
// notes.
func TestDocsReleaseNotes(t *testing.T) {
	changelog := filepath.Join(t.TempDir(), "CHANGELOG.md")
	const text = `# Changelog

Intro text.

## [Unreleased]

## [1.0.0-rc.1] - 2026-12-02

### Fixed

- A fix of the release candidate.

## [0.2.0] - 2026-12-01

### Added

- A feature.
- Another, with [a link](https://example.com).

### Changed

- A change.


## [0.1.0]

- The first release.

[Unreleased]: https://github.com/sandbar-dev/sandbar/compare/v0.2.0...HEAD
[0.2.0]: https://github.com/sandbar-dev/sandbar/releases/tag/v0.2.0
`
	if err := os.WriteFile(changelog, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ version, want string }{
		{"1.0.0-rc.1", "### Fixed\n\n- A fix of the release candidate.\n"},
		{"0.2.0", "### Added\n\n- A feature.\n- Another, with [a link](https://example.com).\n\n### Changed\n\n- A change.\n"},
		{"v0.2.0", "### Added\n\n- A feature.\n- Another, with [a link](https://example.com).\n\n### Changed\n\n- A change.\n"},
		{"0.1.0", "- The first release.\n"},
	} {
		got, stderr, ok := releaseNotes(t, c.version, changelog)
		if !ok || got != c.want {
			t.Errorf("notes of %s: got %q (ok %v, stderr %q), want %q", c.version, got, ok, stderr, c.want)
		}
	}
	for _, version := range []string{"0.3.0", "Unreleased", "0.2"} {
		got, stderr, ok := releaseNotes(t, version, changelog)
		if ok || got != "" || !strings.Contains(stderr, "has no notes for "+version) {
			t.Errorf("notes of %s: got %q (ok %v, stderr %q), want a failure that says there are none", version, got, ok, stderr)
		}
	}
}
