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
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

// The request log's modes decide the level of each outcome: with failures, errors
// and refusals are info lines and the rest debug lines; all logs everything at info;
// off nothing. A name the client chose is cut.
func TestRequestLogLevels(t *testing.T) {
	if _, err := NewRequestLog("verbose"); err == nil || !strings.Contains(err.Error(), "--mcp-request-log") {
		t.Fatalf("an unknown mode is refused, naming the flag: %v", err)
	}
	ok, refused, toolErr := outcome{}, outcome{denied: true, message: "forbidden: no"}, outcome{errorType: toolError}
	invalid := outcome{errorType: "-32602", code: "-32602"}
	for _, c := range []struct {
		mode string
		o    outcome
		want string // "" for no line
	}{
		{"", ok, `"level":1`}, {LogFailures, toolErr, `"level":1`}, {LogFailures, refused, `"level":0`},
		{LogFailures, invalid, `"level":0`}, {LogAll, ok, `"level":0`}, {LogOff, refused, ""},
	} {
		var lines []string
		l, err := NewRequestLog(c.mode)
		if err != nil {
			t.Fatal(err)
		}
		l.SetLogger(funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{Verbosity: 1}))
		l.line(&request{id: "r1", method: "tools/call", tool: strings.Repeat("x", 1000)}, c.o, "", time.Millisecond)
		switch {
		case c.want == "" && len(lines) != 0:
			t.Errorf("mode %q: %v", c.mode, lines)
		case c.want != "" && (len(lines) != 1 || !strings.Contains(lines[0], c.want)):
			t.Errorf("mode %q, outcome %+v: want %s in %v", c.mode, c.o, c.want, lines)
		case c.want != "" && strings.Contains(lines[0], strings.Repeat("x", 129)):
			t.Errorf("the tool name is not cut: %s", lines[0])
		}
	}
	l, _ := NewRequestLog(LogAll)
	var lines []string
	l.SetLogger(funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{}))
	l.line(&request{id: "r2", method: "notifications/initialized"}, ok, "", time.Millisecond)
	if len(lines) != 0 {
		t.Errorf("a notification is not a request: %v", lines)
	}
}
