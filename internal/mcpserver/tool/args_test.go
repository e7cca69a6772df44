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
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

type meta struct {
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

type findArgs struct {
	Class  string         `json:"class" jsonschema:"The class."`
	Where  map[string]any `json:"where,omitempty"`
	Limit  int64          `json:"limit,omitempty"`
	Format string         `json:"format,omitempty"`
	Meta   *meta          `json:"metadata,omitempty"`
	Items  []meta         `json:"items,omitempty"`
	Any    any            `json:"input,omitempty" jsonschema:"Any JSON value."`
}

func TestArgumentsAreCheckedAndDecodedInOnePlace(t *testing.T) {
	var got findArgs
	d := Verb(Spec{Group: "entity", Name: "find"}, func(_ context.Context, _ *Call, in findArgs) (struct{ OK bool }, error) {
		got = in
		return struct{ OK bool }{true}, nil
	}, Between("limit", 1, 200), OneOf("format", "json", "markdown"), MaxItems("items", 2))
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	for _, tc := range []struct {
		name, args string
		want       []string // parts of the error; none for a call that runs
	}{
		{"the minimum", `{"class": "zorp/SpaceBoot"}`, nil},
		{"everything", `{"class": "c", "where": {"a": null, "b": [1]}, "limit": 5, "format": "json", "metadata": {"name": "x", "labels": {"k": "v"}}, "items": [{}], "input": [1, "two"]}`, nil},
		{"null is absent", `{"class": "c", "limit": null, "metadata": null}`, nil},
		{"no arguments", ``, []string{`invalid arguments: missing argument "class"`}},
		{"unknown, with what there is", `{"class": "c", "filter": {"a": 1}}`,
			[]string{`unknown argument "filter"; sandbar_entity_find takes: class, where, limit, format, metadata, items, input`}},
		{"several unknown", `{"class": "c", "x": 1, "y": 2}`, []string{`unknown arguments "x", "y"`}},
		{"nested unknown", `{"class": "c", "metadata": {"nmae": "b"}}`, []string{`unknown argument "metadata.nmae"; metadata takes: name, labels`}}, //nolint:misspell // on purpose
		{"wrong type", `{"class": 42}`, []string{`argument "class" must be a string, got number 42`}},
		{"not an integer", `{"class": "c", "limit": "ten"}`, []string{`argument "limit" must be an integer, got string "ten"`}},
		{"a fraction is not an integer", `{"class": "c", "limit": 1.5}`, []string{`argument "limit" must be an integer`}},
		{"out of range", `{"class": "c", "limit": 500}`, []string{`argument "limit" must be at most 200, got 500`}},
		{"below range", `{"class": "c", "limit": 0}`, []string{`argument "limit" must be at least 1, got 0`}},
		{"not allowed", `{"class": "c", "format": "yaml"}`, []string{`argument "format" must be one of "json", "markdown", got string "yaml"`}},
		{"object expected", `{"class": "c", "metadata": "my-boot"}`, []string{`argument "metadata" must be an object, got string "my-boot"`}},
		{"map values", `{"class": "c", "metadata": {"labels": {"k": 1}}}`, []string{`argument "metadata.labels.k" must be a string, got number 1`}},
		{"list items", `{"class": "c", "items": [{"name": 1}]}`, []string{`argument "items[0].name" must be a string`}},
		{"too many items", `{"class": "c", "items": [{}, {}, {}]}`, []string{`argument "items" takes at most 2 items, got 3`}},
		{"every problem at once", `{"limit": "x", "zz": 1}`, []string{`missing argument "class"`, `argument "limit" must be an integer`, `unknown argument "zz"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = findArgs{}
			out, err := d.Run(context.Background(), &Call{Tool: "sandbar_entity_find"}, json.RawMessage(tc.args))
			if tc.want == nil {
				if err != nil || out != (struct{ OK bool }{true}) {
					t.Fatalf("the call did not run: %v", err)
				}
				return
			}
			var de *DomainError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T), want a domain error", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(de.Message, w) {
					t.Errorf("error %q does not say %q", de.Message, w)
				}
			}
		})
	}
	if _, err := d.Run(context.Background(), &Call{Tool: "t"}, json.RawMessage(`{"class": "c", "limit": 7, "where": {"gone": null}}`)); err != nil {
		t.Fatal(err)
	}
	if got.Class != "c" || got.Limit != 7 || len(got.Where) != 1 {
		t.Errorf("decoded %+v", got)
	}
}

func TestArgumentsThatAreNotAnObjectAreAProtocolFault(t *testing.T) {
	d := Verb(Spec{Group: "g", Name: "n"}, func(context.Context, *Call, findArgs) (struct{}, error) { return struct{}{}, nil })
	for _, raw := range []string{`[1]`, `"x"`, `42`, `{`} {
		_, err := d.Run(context.Background(), &Call{Tool: "t"}, json.RawMessage(raw))
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("arguments %s: %v, want -32602", raw, err)
		}
	}
}

func TestGeneratedSchemaNamesTypesAndRequiredArguments(t *testing.T) {
	d := Verb(Spec{Group: "g", Name: "n"}, func(context.Context, *Call, findArgs) (struct{}, error) { return struct{}{}, nil }, Between("limit", 1, 200))
	b, err := json.Marshal(d.InputSchema(nil))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Type                 string                    `json:"type"`
		Required             []string                  `json:"required"`
		AdditionalProperties any                       `json:"additionalProperties"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Required) != 1 || s.Required[0] != "class" || s.AdditionalProperties != false {
		t.Errorf("schema %s: want an object requiring class only, with no other properties", b)
	}
	if s.Properties["limit"]["type"] != "integer" || s.Properties["limit"]["maximum"] != 200.0 {
		t.Errorf("limit = %v, want an integer at most 200", s.Properties["limit"])
	}
	if s.Properties["metadata"]["type"] != "object" {
		t.Errorf("an optional object is %v, want type object (not [null, object])", s.Properties["metadata"])
	}
	if s.Properties["class"]["description"] != "The class." {
		t.Errorf("class = %v, want the jsonschema tag as its description", s.Properties["class"])
	}
}

func TestAConstraintOnAMissingArgumentIsAnErrorNotAPanic(t *testing.T) {
	d := Verb(Spec{Group: "entity", Name: "find"}, func(context.Context, *Call, findArgs) (struct{}, error) { return struct{}{}, nil },
		Between("limt", 1, 200))
	if d.Err() == nil || !strings.Contains(d.Err().Error(), `tool entity.find: a constraint names the argument "limt"`) {
		t.Errorf("Err() = %v", d.Err())
	}
}
