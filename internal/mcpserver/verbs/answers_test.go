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

package verbs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
)

// A verb row calls one verb with the arguments its setup makes and checks the
// answer a model reads and, for a verb that writes, the object in the cluster.
// Rows share nothing: each makes what it needs under names of its own.
type verbRow struct {
	verb string
	// args makes what the call needs and its arguments (nil: none).
	args func(f *fixture) map[string]any
	// check asserts the answer (a result that is not an error); errText, when check
	// is nil, is what the isError result must say.
	check   func(f *fixture, out map[string]any)
	errText string
}

// fixture is one row's run: its client, the fake cluster and a name of its own.
type fixture struct {
	g      Gomega
	t      *testing.T
	cs     *mcp.ClientSession
	server *mcptest.Server
	// outputs are the output schemas of the tools, as the client saw them in tools/list.
	outputs map[string]*jsonschema.Resolved
	// id tells this row's objects from every other row's and run's.
	id string
	// task is the task a row's setup started, for its check.
	task string
}

var runs atomic.Int64

// server is the MCP server over a fake cluster that runs workflows, shared by the
// rows of this process.
func server(t *testing.T) *mcptest.Server { return mcptest.Running(t) }

// Every verb answers, through a go-sdk client of each revision, what a model would
// read, and writes what it should; a verb without a row fails the test. Every
// answer, the rows' own calls and those that make what a row needs, is structured
// content that the output schema the client saw in tools/list accepts, and its
// text is that same JSON; a tool without an output schema fails the test. These run
// without a control plane: what needs admission, RBAC, watches or the API server's
// own behaviour is tested in internal/mcpserver (TestEveryVerbAnswers and the rest).
func TestEveryVerb(t *testing.T) {
	s := server(t)
	rows := verbRows()
	covered := map[string]bool{}
	for _, row := range rows {
		if covered[row.verb] {
			t.Errorf("two rows for %s", row.verb)
		}
		covered[row.verb] = true
	}
	for _, name := range s.Tools {
		if !strings.HasPrefix(name, "sandbar_class_") || len(strings.Split(name, "_")) == 3 {
			if !covered[name] {
				t.Errorf("the verb %s has no row in TestEveryVerb", name)
			}
		}
		delete(covered, name) // a class's own create tool may have a row
	}
	for name := range covered {
		t.Errorf("the row %s names no verb the sample account is served", name)
	}
	for _, revision := range []string{mcptest.SessionRevision, mcptest.StatelessRevision} {
		t.Run(revision, func(t *testing.T) {
			cs := s.Client(t, revision)
			outputs := outputSchemas(t, cs)
			for _, row := range rows {
				t.Run(strings.TrimPrefix(row.verb, "sandbar_"), func(t *testing.T) {
					f := &fixture{g: NewWithT(t), t: t, cs: cs, server: s, outputs: outputs, id: fmt.Sprintf("v%d", runs.Add(1))}
					var args map[string]any
					if row.args != nil {
						args = row.args(f)
					}
					res, text := f.call(row.verb, args)
					if row.check == nil {
						f.g.Expect(res.IsError).To(BeTrue(), "%s answers a result, not an error: %s", row.verb, text)
						f.g.Expect(text).To(ContainSubstring(row.errText))
						return
					}
					f.g.Expect(res.IsError).To(BeFalse(), "%s: %s", row.verb, text)
					var out map[string]any
					f.g.Expect(json.Unmarshal([]byte(text), &out)).To(Succeed(), "%s answers JSON text: %s", row.verb, text)
					row.check(f, out)
				})
			}
		})
	}
	s.CheckHome(t)
}

// outputSchemas are the output schemas tools/list gives the client, by tool; a
// tool without one, or with one that is not an object's, fails the test.
func outputSchemas(t *testing.T, cs *mcp.ClientSession) map[string]*jsonschema.Resolved {
	t.Helper()
	out := map[string]*jsonschema.Resolved{}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if tl.OutputSchema == nil {
			t.Errorf("the tool %s declares no outputSchema", tl.Name)
			continue
		}
		raw, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Errorf("the outputSchema of %s is not a JSON Schema: %v: %s", tl.Name, err, raw)
			continue
		}
		if s.Type != "object" {
			t.Errorf("the outputSchema of %s is not an object's (MCP's structuredContent is an object): %s", tl.Name, raw)
		}
		if p := booleanProperty(tl.OutputSchema, ""); p != "" {
			t.Errorf("the outputSchema of %s gives the property %s a schema that is not an object, which the TypeScript SDK refuses: %s", tl.Name, p, raw)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Errorf("the outputSchema of %s does not resolve: %v: %s", tl.Name, err, raw)
			continue
		}
		out[tl.Name] = rs
	}
	return out
}

// booleanProperty is the path of a property whose schema is not an object (true
// or false), if any.
func booleanProperty(schema any, path string) string {
	s, _ := schema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if _, ok := props[name].(map[string]any); !ok {
			return path + name
		}
		if p := booleanProperty(props[name], path+name+"."); p != "" {
			return p
		}
	}
	if items, ok := s["items"]; ok {
		return booleanProperty(items, path+"[].")
	}
	return ""
}

// call calls a verb and answers its result and text. An answer that is not an
// error must be structured content that the verb's output schema accepts, with
// that same JSON as its text.
func (f *fixture) call(verb string, args map[string]any) (*mcp.CallToolResult, string) {
	f.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: verb, Arguments: args})
	f.g.Expect(err).NotTo(HaveOccurred(), verb)
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if !res.IsError {
		f.typed(verb, res, b.String())
	}
	return res, b.String()
}

// typed checks an answer against the output schema of its verb. A fixture made
// without the schemas (a test of something else, whose account may not be listed
// every verb) checks none: TestEveryVerb's always has them.
func (f *fixture) typed(verb string, res *mcp.CallToolResult, text string) {
	f.t.Helper()
	if f.outputs == nil {
		return
	}
	schema := f.outputs[verb]
	f.g.Expect(schema).NotTo(BeNil(), "%s has no output schema to check its answer against", verb)
	structured, ok := res.StructuredContent.(map[string]any)
	f.g.Expect(ok).To(BeTrue(), "%s answers structuredContent that is not a JSON object: %#v", verb, res.StructuredContent)
	f.g.Expect(schema.Validate(structured)).To(Succeed(), "%s answers structuredContent its outputSchema refuses: %s", verb, text)
	var fromText map[string]any
	f.g.Expect(json.Unmarshal([]byte(text), &fromText)).To(Succeed(), "%s answers JSON text: %s", verb, text)
	f.g.Expect(fromText).To(Equal(structured), "the text of %s is its structured content", verb)
}

// answer calls a verb that must succeed and answers its JSON.
func (f *fixture) answer(verb string, args map[string]any) map[string]any {
	f.t.Helper()
	res, text := f.call(verb, args)
	f.g.Expect(res.IsError).To(BeFalse(), "%s: %s", verb, text)
	var out map[string]any
	f.g.Expect(json.Unmarshal([]byte(text), &out)).To(Succeed(), text)
	return out
}

// pages are the items under key of a listing verb's answer out and of the pages
// after it, as a model would page through them (nextCursor or continue).
func (f *fixture) pages(verb string, args map[string]any, out map[string]any, key string) []any {
	f.t.Helper()
	all := items(out, key)
	for range 100 {
		next := map[string]any{}
		for k, v := range args {
			next[k] = v
		}
		switch {
		case str(out["nextCursor"]) != "":
			next["cursor"] = out["nextCursor"]
		case str(out["continue"]) != "":
			next["continue"] = out["continue"]
		default:
			return all
		}
		out = f.answer(verb, next)
		all = append(all, items(out, key)...)
	}
	f.t.Fatalf("%s: more than 100 pages", verb)
	return nil
}

// boot creates a SpaceBoot of the row through entity.create and answers its name.
func (f *fixture) boot(attributes map[string]any) string {
	f.t.Helper()
	name := "boot-" + f.id
	if attributes == nil {
		attributes = map[string]any{"name": "Boot " + f.id}
	}
	f.answer("sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "attributes": attributes, "metadata": map[string]any{"name": name}})
	return name
}

// instance reads an instance of a sample class from the fake cluster (nil when
// there is none).
func (f *fixture) instance(kind, name string) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind(kind)
	err := f.server.Cluster.Get(context.Background(), client.ObjectKey{Namespace: mcptest.Home, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	f.g.Expect(err).NotTo(HaveOccurred())
	return u
}

// process reads a process from the fake cluster by its task id.
func (f *fixture) process(taskID string) *metav1alpha1.WorkflowProcess {
	f.t.Helper()
	var p metav1alpha1.WorkflowProcess
	f.g.Expect(f.server.Cluster.Get(context.Background(), client.ObjectKey{Namespace: mcptest.Home, Name: taskID}, &p)).To(Succeed(), taskID)
	return &p
}

// started starts an order.fulfillment process and answers its task id.
func (f *fixture) started() string {
	f.t.Helper()
	return taskOf(f.answer("sandbar_workflow_start-process", map[string]any{"workflow": "order.fulfillment", "input": map[string]any{"note": f.id}}))
}

// validated makes a SpaceBoot, runs a validation of the SpaceBoots to its end and
// answers its task id.
func (f *fixture) validated() string {
	f.t.Helper()
	f.boot(nil)
	id := taskOf(f.answer("sandbar_validation_start", map[string]any{"class": "zorp/SpaceBoot"}))
	f.g.Expect(f.process(id).Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
	return id
}

func str(v any) string { s, _ := v.(string); return s }

func taskOf(out map[string]any) string {
	if t, ok := out["task"].(map[string]any); ok {
		return str(t["taskId"])
	}
	return str(out["taskId"])
}

func items(out map[string]any, key string) []any { l, _ := out[key].([]any); return l }

// field collects one key of each item of a list.
func field(list []any, key string) []string {
	var out []string
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			out = append(out, str(m[key]))
		} else {
			out = append(out, str(it))
		}
	}
	sort.Strings(out)
	return out
}

// taskIDs are the task ids of a list of processes.
func taskIDs(list []any) []string {
	var ids []string
	for _, p := range list {
		ids = append(ids, taskOf(p.(map[string]any)))
	}
	return ids
}

func classArg(ident string) func(*fixture) map[string]any {
	return func(*fixture) map[string]any { return map[string]any{"class": ident} }
}

func propertyArg(name string) func(*fixture) map[string]any {
	return func(*fixture) map[string]any { return map[string]any{"property": name} }
}

func verbRows() []verbRow {
	return []verbRow{
		// The metamodel, read.
		{verb: "sandbar_schema_classes", check: func(f *fixture, out map[string]any) {
			f.g.Expect(field(items(out, "classes"), "class")).To(ContainElements("zorp/SpaceBoot", "zorp/Footwear", "order/Order"))
		}},
		{verb: "sandbar_schema_properties", check: func(f *fixture, out map[string]any) {
			f.g.Expect(field(items(out, "properties"), "property")).To(ContainElements("footwear.name", "footwear.tentacle-count", "order.number"))
		}},
		{verb: "sandbar_schema_datatypes", check: func(f *fixture, out map[string]any) {
			f.g.Expect(field(items(out, "datatypes"), "range")).To(ContainElements("string", "integer", "boolean"))
			f.g.Expect(items(out, "datatypes")).To(HaveLen(10))
		}},
		{verb: "sandbar_class_describe", args: classArg("zorp/SpaceBoot"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["class"]).To(Equal("zorp/SpaceBoot"))
			f.g.Expect(out["ancestors"]).To(ContainElement("zorp/Footwear"))
		}},
		{verb: "sandbar_class_slots", args: classArg("zorp/SpaceBoot"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(field(items(out, "slots"), "field")).To(ContainElements("name", "tentacleCount", "vacuumRated"))
		}},
		{verb: "sandbar_class_direct-slots", args: classArg("zorp/SpaceBoot"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(field(items(out, "slots"), "field")).To(Equal([]string{"vacuumRated"}))
		}},
		{verb: "sandbar_class_required-slots", args: classArg("zorp/SpaceBoot"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["required"]).To(Equal([]any{"name"}))
		}},
		{verb: "sandbar_class_subclasses", args: classArg("zorp/Footwear"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["subclasses"]).To(Equal([]any{"zorp/SpaceBoot"}))
		}},
		{verb: "sandbar_class_parents", args: classArg("zorp/SpaceBoot"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["parents"]).To(Equal([]any{"zorp/Footwear"}))
		}},
		{verb: "sandbar_types_subclass-of", args: func(*fixture) map[string]any {
			return map[string]any{"class": "zorp/Footwear", "of": "zorp/SpaceBoot"}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["subclassOf"]).To(BeFalse())
		}},
		{verb: "sandbar_property_domain", args: propertyArg("footwear.name"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["declaredBy"]).To(Equal([]any{"zorp/Footwear"}))
			f.g.Expect(out["inheritedBy"]).To(Equal([]any{"zorp/SpaceBoot"}))
		}},
		{verb: "sandbar_property_range", args: propertyArg("footwear.tentacle-count"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["range"]).To(Equal("integer"))
		}},
		{verb: "sandbar_property_cardinality", args: propertyArg("wearer.home-planets"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["cardinality"]).To(Equal("many"))
		}},
		{verb: "sandbar_codec_list", check: func(f *fixture, out map[string]any) {
			codecs := items(out, "codecs")
			f.g.Expect(codecs).To(HaveLen(2))
			f.g.Expect(codecs[1].(map[string]any)["classes"]).To(ContainElement("zorp/Review"))
		}},

		// The metamodel, changed, as a dry run: what the answer previews is checked
		// here and nothing is written; a change that is written waits for the Class
		// and Property reconcilers, which run in internal/mcpserver's suite.
		{verb: "sandbar_schema_define-property", args: func(f *fixture) map[string]any {
			return map[string]any{"name": f.id + ".gauge-depth", "spec": map[string]any{"range": "integer"}, "dryRun": true}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out).To(HaveKeyWithValue("field", "gaugeDepth"), "%v", out)
			f.g.Expect(out).To(HaveKeyWithValue("dryRun", true))
			var p metav1alpha1.Property
			f.g.Expect(apierrors.IsNotFound(f.server.Cluster.Get(context.Background(), client.ObjectKey{Name: f.id + ".gauge-depth"}, &p))).To(BeTrue(), "a dry run writes nothing")
		}},
		{verb: "sandbar_schema_define-class", args: func(f *fixture) map[string]any {
			return map[string]any{"name": f.id + ".gauge", "dryRun": true, "spec": map[string]any{"prefix": f.id, "kind": "Gauge",
				"slots": []any{map[string]any{"property": "footwear.name", "required": true}}}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out).To(HaveKeyWithValue("dryRun", true), "%v", out)
			f.g.Expect(out["tool"]).To(HaveKeyWithValue("name", "sandbar_class_"+f.id+"_Gauge"))
			var c metav1alpha1.Class
			f.g.Expect(apierrors.IsNotFound(f.server.Cluster.Get(context.Background(), client.ObjectKey{Name: f.id + ".gauge"}, &c))).To(BeTrue(), "a dry run writes nothing")
		}},

		// Instances.
		{verb: "sandbar_entity_create", args: func(f *fixture) map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Created " + f.id, "tentacleCount": 3},
				"metadata": map[string]any{"name": "created-" + f.id}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["name"]).To(Equal("created-" + f.id))
			f.g.Expect(out["attributes"]).To(HaveKeyWithValue("tentacleCount", 3.0))
			u := f.instance("SpaceBoot", "created-"+f.id)
			f.g.Expect(u).NotTo(BeNil(), "the instance is stored")
			f.g.Expect(u.Object["spec"]).To(HaveKeyWithValue("tentacleCount", BeNumerically("==", 3)))
		}},
		{verb: "sandbar_class_zorp_SpaceBoot", args: func(f *fixture) map[string]any {
			return map[string]any{"name": "Own " + f.id, "metadata": map[string]any{"name": "own-" + f.id}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out).To(And(HaveKeyWithValue("name", "own-"+f.id), HaveKeyWithValue("class", "zorp/SpaceBoot")))
			f.g.Expect(f.instance("SpaceBoot", "own-"+f.id)).NotTo(BeNil(), "the instance is stored")
		}},
		{verb: "sandbar_schema_entities", args: func(f *fixture) map[string]any {
			return map[string]any{"entities": []any{
				map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Two"}, "metadata": map[string]any{"name": "batch-" + f.id}},
				map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{}},
			}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["created"]).To(Equal(1.0))
			f.g.Expect(out["failed"]).To(Equal(1.0))
			f.g.Expect(fmt.Sprint(items(out, "results")[1])).To(ContainSubstring(`missing required slot(s): "name"`))
			f.g.Expect(f.instance("SpaceBoot", "batch-"+f.id)).NotTo(BeNil(), "the valid one is stored")
		}},
		{verb: "sandbar_entity_find", args: func(f *fixture) map[string]any {
			f.boot(map[string]any{"name": "Findable " + f.id})
			return map[string]any{"class": "zorp/Footwear", "where": map[string]any{"name": "Findable " + f.id}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["count"]).To(Equal(1.0))
			f.g.Expect(items(out, "items")[0]).To(HaveKeyWithValue("name", "boot-"+f.id))
		}},
		{verb: "sandbar_entity_update", args: func(f *fixture) map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": f.boot(nil), "attributes": map[string]any{"tentacleCount": 4}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["attributes"]).To(HaveKeyWithValue("tentacleCount", 4.0))
			f.g.Expect(f.instance("SpaceBoot", "boot-"+f.id).Object["spec"]).To(HaveKeyWithValue("tentacleCount", BeNumerically("==", 4)))
		}},
		{verb: "sandbar_entity_validate", args: func(*fixture) map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Dry"}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["valid"]).To(BeTrue())
		}},
		// A class's create schema, and the generic create taking arguments that match it.
		{verb: "sandbar_entity_schema", args: classArg("zorp/SpaceBoot"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["tool"]).To(Equal("sandbar_entity_create"))
			raw, err := json.Marshal(out["inputSchema"])
			f.g.Expect(err).NotTo(HaveOccurred())
			var s jsonschema.Schema
			f.g.Expect(json.Unmarshal(raw, &s)).To(Succeed())
			attrs := s.Properties["attributes"]
			f.g.Expect(attrs.Required).To(Equal([]string{"name"}))
			f.g.Expect(attrs.Properties).To(HaveKey("vacuumRated"))
			resolved, err := s.Resolve(nil)
			f.g.Expect(err).NotTo(HaveOccurred())
			args := map[string]any{"class": *s.Properties["class"].Const, "attributes": map[string]any{"name": "Schema " + f.id, "vacuumRated": true},
				"metadata": map[string]any{"name": "schema-" + f.id}}
			f.g.Expect(resolved.Validate(args)).To(Succeed())
			f.g.Expect(resolved.Validate(map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{}})).NotTo(Succeed(),
				"the schema requires the class's required slots")
			f.answer(out["tool"].(string), args)
			f.g.Expect(f.instance("SpaceBoot", "schema-"+f.id)).NotTo(BeNil(), "the generic create took the arguments")
		}},
		{verb: "sandbar_entity_delete", args: func(f *fixture) map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": f.boot(nil), "confirm": true}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out).To(And(HaveKeyWithValue("deleted", true), HaveKeyWithValue("name", "boot-"+f.id), HaveKey("uid")))
			f.g.Expect(f.instance("SpaceBoot", "boot-"+f.id)).To(BeNil(), "the instance is gone")
		}},
		{verb: "sandbar_class_instances", args: func(f *fixture) map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": f.boot(nil)}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["count"]).To(Equal(1.0))
		}},
		{verb: "sandbar_types_instance-of", args: func(f *fixture) map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": f.boot(nil), "of": "zorp/Footwear"}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["instanceOf"]).To(BeTrue())
		}},

		// Validation: built-in processes, run to their end by the reconciler.
		{verb: "sandbar_validation_start", args: func(f *fixture) map[string]any {
			f.boot(nil)
			return map[string]any{"class": "zorp/SpaceBoot"}
		}, check: func(f *fixture, out map[string]any) {
			p := f.process(taskOf(out))
			f.g.Expect(p.Spec.Definition).To(Equal("sandbar.validate-instances"))
			f.g.Expect(p.Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
		}},
		{verb: "sandbar_validation_run", args: classArg("zorp/Wearer"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["task"]).To(HaveKeyWithValue("status", "completed"))
		}},
		{verb: "sandbar_class_validate-all-instances", args: classArg("order/Order"), check: func(f *fixture, out map[string]any) {
			f.g.Expect(f.process(taskOf(out)).Spec.Definition).To(Equal("sandbar.validate-instances"))
		}},
		{verb: "sandbar_validation_results", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.validated()}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["result"]).To(HaveKeyWithValue("invalid", 0.0))
		}},
		{verb: "sandbar_validation_retry", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.validated()}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(f.process(taskOf(out)).Spec.Definition).To(Equal("sandbar.validate-instances"))
		}},
		{verb: "sandbar_validation_cancel", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.validated()}
		}, errText: "cannot cancel: the process already ended"},
		{verb: "sandbar_validation_history", args: func(f *fixture) map[string]any {
			f.task = f.validated()
			return nil
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(taskIDs(f.pages("sandbar_validation_history", nil, out, "processes"))).To(ContainElement(f.task))
		}},

		// Tasks.
		{verb: "sandbar_tasks_get", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.validated()}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["workflow"]).To(Equal("sandbar.validate-instances"))
			f.g.Expect(out["task"]).To(HaveKeyWithValue("status", "completed"))
			f.g.Expect(out["state"]).To(Equal("succeeded"))
		}},
		{verb: "sandbar_tasks_result", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.validated(), "waitSeconds": 5}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["result"]).To(HaveKeyWithValue("checked", BeNumerically(">=", 1)))
		}},
		{verb: "sandbar_tasks_list", args: func(f *fixture) map[string]any {
			f.task = f.started()
			return nil
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(field(f.pages("sandbar_tasks_list", nil, out, "tasks"), "taskId")).To(ContainElement(f.task))
		}},
		{verb: "sandbar_tasks_cancel", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.started()}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["task"]).To(HaveKeyWithValue("status", "cancelled"))
			f.g.Expect(f.process(taskOf(out)).Status.Phase).To(Equal(metav1alpha1.PhaseCancelled))
		}},

		// Projects: export and import, built-in processes.
		{verb: "sandbar_project_export", args: func(f *fixture) map[string]any {
			f.boot(nil)
			return map[string]any{"class": "zorp/SpaceBoot"}
		}, check: func(f *fixture, out map[string]any) {
			p := f.process(taskOf(out))
			f.g.Expect(p.Spec.Definition).To(Equal("sandbar.export"))
			f.g.Expect(p.Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
		}},
		{verb: "sandbar_project_import", args: func(f *fixture) map[string]any {
			return map[string]any{"bundle": map[string]any{"items": []any{
				map[string]any{"class": "zorp/SpaceBoot", "name": "imported-" + f.id, "attributes": map[string]any{"name": "Imported"}}}}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(f.process(taskOf(out)).Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
			u := f.instance("SpaceBoot", "imported-"+f.id)
			f.g.Expect(u).NotTo(BeNil(), "the imported instance is stored")
			f.g.Expect(u.Object["spec"]).To(HaveKeyWithValue("name", "Imported"))
		}},

		// Workflows.
		{verb: "sandbar_workflow_find", check: func(f *fixture, out map[string]any) {
			f.g.Expect(field(items(out, "workflows"), "name")).To(ContainElements("order.fulfillment", "sandbar.import"))
		}},
		{verb: "sandbar_workflow_define", args: func(f *fixture) map[string]any {
			return map[string]any{"name": f.id + ".review", "spec": map[string]any{"initial": "open",
				"states":      []any{map[string]any{"name": "open"}, map[string]any{"name": "done", "terminal": "success"}},
				"transitions": []any{map[string]any{"name": "close", "from": []any{"open"}, "to": "done"}}}}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["defined"]).To(Equal(f.id + ".review"))
			var wd metav1alpha1.WorkflowDefinition
			f.g.Expect(f.server.Cluster.Get(context.Background(), client.ObjectKey{Name: f.id + ".review"}, &wd)).To(Succeed())
			f.g.Expect(wd.Spec.Initial).To(Equal("open"))
		}},
		{verb: "sandbar_workflow_start-process", args: func(f *fixture) map[string]any {
			return map[string]any{"workflow": "order.fulfillment", "input": map[string]any{"note": f.id}}
		}, check: func(f *fixture, out map[string]any) {
			p := f.process(taskOf(out))
			f.g.Expect(p.Spec.Definition).To(Equal("order.fulfillment"))
			f.g.Expect(p.Status.State).To(Equal("pending"))
		}},
		{verb: "sandbar_workflow_transition", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.started(), "transition": "confirm", "reason": "paid"}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["state"]).To(Equal("confirmed"))
			f.g.Expect(out["transitions"]).To(ContainElement("ship"))
			f.g.Expect(f.process(taskOf(out)).Status.State).To(Equal("confirmed"))
		}},
		{verb: "sandbar_workflow_process-state", args: func(f *fixture) map[string]any {
			return map[string]any{"taskId": f.started()}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(out["state"]).To(Equal("pending"))
			f.g.Expect(out["transitions"]).To(ConsistOf("confirm", "cancel"))
		}},
		{verb: "sandbar_workflow_process-history", args: func(f *fixture) map[string]any {
			id := f.started()
			f.answer("sandbar_workflow_transition", map[string]any{"taskId": id, "transition": "confirm", "reason": "paid"})
			return map[string]any{"taskId": id}
		}, check: func(f *fixture, out map[string]any) {
			history := items(out, "history")
			f.g.Expect(history).To(HaveLen(2))
			f.g.Expect(history[1]).To(HaveKeyWithValue("reason", "paid"))
		}},
		{verb: "sandbar_workflow_active-processes", args: func(f *fixture) map[string]any {
			f.task = f.started()
			return map[string]any{"workflow": "order.fulfillment"}
		}, check: func(f *fixture, out map[string]any) {
			f.g.Expect(taskIDs(f.pages("sandbar_workflow_active-processes", map[string]any{"workflow": "order.fulfillment"}, out, "processes"))).
				To(ContainElement(f.task))
		}},
	}
}
