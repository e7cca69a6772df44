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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client is asked with a form only when its elicitation capability takes forms:
// one that names no mode, or names form; not one that names url alone.
func TestTakesFormsReadsTheElicitationModes(t *testing.T) {
	for raw, want := range map[string]bool{
		`{}`:                                   false,
		`{"elicitation":{}}`:                   true,
		`{"elicitation":{"form":{}}}`:          true,
		`{"elicitation":{"form":{},"url":{}}}`: true,
		`{"elicitation":{"url":{}}}`:           false,
		`{"sampling":{}}`:                      false,
	} {
		var caps mcp.ClientCapabilities
		if err := json.Unmarshal([]byte(raw), &caps); err != nil {
			t.Fatal(err)
		}
		if got := TakesForms(&caps); got != want {
			t.Errorf("TakesForms(%s) = %v, want %v", raw, got, want)
		}
	}
	if TakesForms(nil) {
		t.Error("no capabilities take no forms")
	}
}

// The confirm argument is taken out of the arguments the verb decodes; a value
// that is not a boolean is refused.
func TestReadConfirm(t *testing.T) {
	for raw, want := range map[string]bool{`{"class":"a/B","confirm":true}`: true, `{"confirm":false}`: false, `{"class":"a/B"}`: false} {
		got, rest, err := readConfirm(json.RawMessage(raw))
		if err != nil || got != want || !json.Valid(rest) || strings.Contains(string(rest), ConfirmArg) {
			t.Errorf("readConfirm(%s) = %v, %s, %v", raw, got, rest, err)
		}
	}
	if _, _, err := readConfirm(json.RawMessage(`{"confirm":"yes"}`)); err == nil {
		t.Error(`confirm: "yes" is refused`)
	}
}
