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

package telemetry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An audit file is appended to (a restart keeps what was written), readable by its
// owner only, and "off" opens nothing.
func TestAuditFileIsAppendedAndPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := 0; i < 2; i++ {
		sink, err := OpenSink(path)
		if err != nil {
			t.Fatal(err)
		}
		(&auditor{out: sink}).write(&Event{Outcome: Denied, Method: "http POST", Reason: "no bearer token"})
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || lines[0] == lines[1] {
		t.Fatalf("want two events with their own ids, got:\n%s", b)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Fatalf("the audit file has mode %v, want 0600", mode)
	}
	if sink, err := OpenSink("off"); sink != nil || err != nil {
		t.Fatalf("off opened %v, %v", sink, err)
	}
	if _, err := OpenSink(filepath.Join(t.TempDir(), "missing", "audit.jsonl")); err == nil || !strings.Contains(err.Error(), "--audit-log") {
		t.Fatalf("an unwritable path is refused naming the flag, got %v", err)
	}
}
