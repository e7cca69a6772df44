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
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type sample struct {
	Name  string            `json:"name"`
	Items []string          `json:"items"`
	TTL   *int64            `json:"ttl"`
	Inner *struct{ N int }  `json:"inner,omitempty"`
	When  metav1.Time       `json:"when"`
	Attrs map[string]any    `json:"attrs,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Note  string            `json:"note,omitempty"`
}

// An answer's output schema is its Go type's, as lean as it says the same: open
// objects, lists that are never null, null only where the answer can hold it.
func TestOutputSchemaIsTheAnswersType(t *testing.T) {
	s, err := OutputSchema[sample](false)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(s)
	got := string(raw)
	for _, want := range []string{
		`"items":{"type":"array","items":{"type":"string"}}`,
		`"ttl":{"type":["null","integer"]}`,
		`"inner":{"type":"object","properties":{"N":{"type":"integer"}},"required":["N"]}`,
		`"when":{"type":"string"}`,
		`"attrs":{"type":"object"}`,
		`"tags":{"type":"object","additionalProperties":{"type":"string"}}`,
		`"required":["name","items","ttl","when"]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output schema has no %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"not"`) {
		t.Errorf("the output schema closes an object, which a later property would break:\n%s", got)
	}
	kept, err := OutputSchema[Kept[sample]](false)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := json.Marshal(kept); string(raw) != got {
		t.Errorf("a kept answer's schema is\n%s\nnot its type's\n%s", raw, got)
	}
	long, err := OutputSchema[sample](true)
	if err != nil || len(long.Required) != 0 {
		t.Errorf("a task-running tool's schema requires %v (%v): as a task it answers the process's result", long.Required, err)
	}
}

// An answer that is not a JSON object cannot be declared: the server would not start.
func TestAnAnswerThatIsNotAnObjectIsRefused(t *testing.T) {
	for name, d := range map[string]*Def{
		"any": Verb(Spec{Group: "t", Name: "any"}, func(context.Context, *Call, struct{}) (any, error) { return nil, nil }),
		"a list": Verb(Spec{Group: "t", Name: "list"}, func(context.Context, *Call, struct{}) ([]string, error) {
			return nil, nil
		}),
		"a string": Raw("t.string", Spec{}, map[string]any{"type": "object"}, func(context.Context, *Call, map[string]any) (string, error) {
			return "", nil
		}),
	} {
		if err := d.Err(); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("an answer of %s is declared: %v", name, err)
		}
	}
	untold := Verb(Spec{Group: "t", Name: "untold"}, func(context.Context, *Call, struct{}) (struct {
		Result any `json:"result"`
	}, error) {
		return struct {
			Result any `json:"result"`
		}{}, nil
	})
	if err := untold.Err(); err == nil || !strings.Contains(err.Error(), `the property "result" may be any JSON value`) {
		t.Errorf("a property of any JSON value without a description is declared (its schema would be true, which clients refuse): %v", err)
	}
	ok := Verb(Spec{Group: "t", Name: "ok"}, func(context.Context, *Call, struct{}) (sample, error) { return sample{}, nil })
	if err := ok.Err(); err != nil || ok.Tool(StyleUnderscore, nil).OutputSchema == nil {
		t.Errorf("a struct answer is declared with its schema: %v", err)
	}
}
