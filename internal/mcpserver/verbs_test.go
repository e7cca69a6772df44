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

package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/rand"
)

// verbRow is one call of an operational verb and what its answer must hold.
type verbRow struct {
	verb string // served name
	args func() map[string]any
	// check reads the answer (nil for one that must be an error: then errText says what).
	check   func(g Gomega, out map[string]any)
	errText string
}

// TestEveryVerbAnswers calls every operational verb the server lists against the
// control plane (its admission, RBAC and watches; TestEveryVerb in package verbs
// checks each verb's answer over a fake cluster, row by row, in make test-unit), in
// an order that lets writers feed readers, and checks each answer. A verb without a row
// fails the test, so a new verb comes with its check.
func TestEveryVerbAnswers(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	run := rand.String(5)
	boot := "every-verb-" + run
	var validation, process, workflowName = "", "", "every-verb-" + run
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) float64 { f, _ := v.(float64); return f }
	taskOf := func(out map[string]any) string { return str(out["taskId"]) }
	items := func(out map[string]any, key string) []any { l, _ := out[key].([]any); return l }
	containsClass := func(list []any, ident string) bool {
		for _, c := range list {
			if m, ok := c.(map[string]any); ok && m["class"] == ident {
				return true
			}
			if c == ident {
				return true
			}
		}
		return false
	}

	// settled is true for a define answer with its verdict. A define call waits
	// defineWait for the reconcilers; on a loaded machine the answer may instead say
	// the object is pending and name the verb that shows it: then settled checks
	// that it names names, calls verb until its answer passes ready, as a client told
	// to look would, and is false.
	settled := func(g Gomega, out map[string]any, names, verb string, args map[string]any, ready func(Gomega, map[string]any)) bool {
		pending := str(out["pending"])
		if pending == "" {
			return true
		}
		g.Expect(pending).To(ContainSubstring(names))
		g.Eventually(func(g Gomega) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: verb, Arguments: args})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.IsError).To(BeFalse(), text(res))
			var answer map[string]any
			g.Expect(json.Unmarshal([]byte(text(res)), &answer)).To(Succeed())
			ready(g, answer)
		}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return false
	}

	deleteMetamodelAfter(t, []string{"every" + run + ".gauge"}, []string{"every" + run + ".gauge-depth"})
	rows := []verbRow{
		{verb: "sandbar_schema_classes", check: func(g Gomega, out map[string]any) {
			g.Expect(containsClass(items(out, "classes"), "zorp/SpaceBoot")).To(BeTrue())
			g.Expect(containsClass(items(out, "classes"), "zorp/Footwear")).To(BeTrue())
		}},
		{verb: "sandbar_schema_properties", check: func(g Gomega, out map[string]any) {
			var fields []string
			for _, p := range items(out, "properties") {
				fields = append(fields, str(p.(map[string]any)["property"]))
			}
			g.Expect(fields).To(ContainElements("footwear.name", "footwear.tentacle-count", "order.number"))
		}},
		{verb: "sandbar_schema_datatypes", check: func(g Gomega, out map[string]any) {
			g.Expect(items(out, "datatypes")).To(HaveLen(10))
		}},
		{verb: "sandbar_schema_define-property", args: func() map[string]any {
			return map[string]any{"name": "every" + run + ".gauge-depth", "spec": map[string]any{"range": "integer"}, "confirm": true}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["field"]).To(Equal("gaugeDepth"))
			if settled(g, out, "sandbar_schema_properties", "sandbar_property_range", propertyArg("every"+run+".gauge-depth")(), func(g Gomega, range_ map[string]any) {
				g.Expect(range_).To(HaveKeyWithValue("range", "integer"))
			}) {
				g.Expect(out["ready"]).To(HaveKeyWithValue("status", "True"))
			}
		}},
		{verb: "sandbar_schema_define-class", args: func() map[string]any {
			return map[string]any{"name": "every" + run + ".gauge", "confirm": true, "spec": map[string]any{"prefix": "every" + run, "kind": "Gauge",
				"slots": []any{map[string]any{"property": "every" + run + ".gauge-depth"}}}}
		}, check: func(g Gomega, out map[string]any) {
			gauge := "sandbar_class_every" + run + "_Gauge"
			if settled(g, out, "sandbar_class_describe", "sandbar_class_describe", classArg("every"+run+"/Gauge")(), func(g Gomega, class map[string]any) {
				g.Expect(class).To(HaveKeyWithValue("ready", true))
				var names []string
				for tool, err := range cs.Tools(t.Context(), nil) {
					g.Expect(err).NotTo(HaveOccurred())
					names = append(names, tool.Name)
				}
				g.Expect(names).To(ContainElement(gauge))
			}) {
				g.Expect(out["ready"]).To(HaveKeyWithValue("status", "True"))
				g.Expect(out["tool"]).To(HaveKeyWithValue("name", gauge))
			}
		}},
		{verb: "sandbar_entity_create", args: func() map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Every-" + run, "tentacleCount": 3},
				"metadata": map[string]any{"name": boot}}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["name"]).To(Equal(boot))
			g.Expect(out["attributes"]).To(HaveKeyWithValue("tentacleCount", 3.0))
		}},
		{verb: "sandbar_schema_entities", args: func() map[string]any {
			return map[string]any{"entities": []any{
				map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Two"}, "metadata": map[string]any{"name": boot + "-2"}},
				map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{}},
			}}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["created"]).To(Equal(1.0))
			g.Expect(out["failed"]).To(Equal(1.0))
			g.Expect(fmt.Sprint(items(out, "results")[1])).To(ContainSubstring(`missing required slot(s): "name"`))
		}},
		{verb: "sandbar_entity_find", args: func() map[string]any {
			return map[string]any{"class": "zorp/Footwear", "where": map[string]any{"name": "Every-" + run}}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["count"]).To(Equal(1.0))
			g.Expect(items(out, "items")[0]).To(HaveKeyWithValue("name", boot))
		}},
		{verb: "sandbar_entity_update", args: func() map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": boot, "attributes": map[string]any{"tentacleCount": 4}}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["attributes"]).To(HaveKeyWithValue("tentacleCount", 4.0))
		}},
		{verb: "sandbar_entity_validate", args: func() map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Dry"}}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["valid"]).To(BeTrue())
		}},
		{verb: "sandbar_entity_schema", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["tool"]).To(Equal("sandbar_entity_create"))
			g.Expect(out).To(HaveKeyWithValue("inputSchema", HaveKeyWithValue("properties",
				HaveKeyWithValue("attributes", HaveKeyWithValue("required", Equal([]any{"name"}))))))
		}},
		{verb: "sandbar_class_describe", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["class"]).To(Equal("zorp/SpaceBoot"))
			g.Expect(out["ancestors"]).To(ContainElement("zorp/Footwear"))
		}},
		{verb: "sandbar_class_slots", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			g.Expect(fieldsOf(items(out, "slots"))).To(ContainElements("name", "tentacleCount", "vacuumRated"))
		}},
		{verb: "sandbar_class_direct-slots", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			g.Expect(fieldsOf(items(out, "slots"))).To(Equal([]string{"vacuumRated"}))
		}},
		{verb: "sandbar_class_required-slots", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["required"]).To(Equal([]any{"name"}))
		}},
		{verb: "sandbar_class_instances", args: func() map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": boot}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["count"]).To(Equal(1.0))
		}},
		{verb: "sandbar_class_subclasses", args: classArg("zorp/Footwear"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["subclasses"]).To(Equal([]any{"zorp/SpaceBoot"}))
		}},
		{verb: "sandbar_class_parents", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["parents"]).To(Equal([]any{"zorp/Footwear"}))
		}},
		{verb: "sandbar_types_instance-of", args: func() map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": boot, "of": "zorp/Footwear"}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["instanceOf"]).To(BeTrue())
		}},
		{verb: "sandbar_types_subclass-of", args: func() map[string]any {
			return map[string]any{"class": "zorp/Footwear", "of": "zorp/SpaceBoot"}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["subclassOf"]).To(BeFalse())
		}},
		{verb: "sandbar_property_domain", args: propertyArg("footwear.name"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["declaredBy"]).To(Equal([]any{"zorp/Footwear"}))
			g.Expect(out["inheritedBy"]).To(Equal([]any{"zorp/SpaceBoot"}))
		}},
		{verb: "sandbar_property_range", args: propertyArg("footwear.tentacle-count"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["range"]).To(Equal("integer"))
		}},
		{verb: "sandbar_property_cardinality", args: propertyArg("wearer.home-planets"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["cardinality"]).To(Equal("many"))
		}},
		{verb: "sandbar_codec_list", check: func(g Gomega, out map[string]any) {
			codecs := items(out, "codecs")
			g.Expect(codecs).To(HaveLen(2))
			g.Expect(codecs[1].(map[string]any)["classes"]).To(ContainElement("zorp/Review"))
		}},
		{verb: "sandbar_validation_start", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			validation = taskOf(out)
			g.Expect(validation).To(HavePrefix("task-"))
		}},
		{verb: "sandbar_tasks_get", args: func() map[string]any { return map[string]any{"taskId": validation} },
			check: func(g Gomega, out map[string]any) {
				g.Expect(out["workflow"]).To(Equal("sandbar.validate-instances"))
			}},
		{verb: "sandbar_tasks_result", args: func() map[string]any { return map[string]any{"taskId": validation, "waitSeconds": 30} },
			check: func(g Gomega, out map[string]any) {
				g.Expect(out["result"]).To(HaveKey("checked"))
				g.Expect(num(out["result"].(map[string]any)["checked"])).To(BeNumerically(">=", 2))
			}},
		{verb: "sandbar_validation_results", args: func() map[string]any { return map[string]any{"taskId": validation} },
			check: func(g Gomega, out map[string]any) {
				g.Expect(out["result"]).To(HaveKeyWithValue("invalid", 0.0))
			}},
		{verb: "sandbar_validation_retry", args: func() map[string]any { return map[string]any{"taskId": validation} },
			check: func(g Gomega, out map[string]any) {
				g.Expect(taskOf(out)).To(HavePrefix("task-"))
				g.Expect(taskOf(out)).NotTo(Equal(validation))
			}},
		{verb: "sandbar_validation_run", args: classArg("zorp/Wearer"), check: func(g Gomega, out map[string]any) {
			g.Expect(out["task"]).To(HaveKeyWithValue("status", "completed"))
		}},
		{verb: "sandbar_class_validate-all-instances", args: classArg("order/Order"), check: func(g Gomega, out map[string]any) {
			g.Expect(taskOf(out)).To(HavePrefix("task-"))
		}},
		{verb: "sandbar_validation_cancel", args: func() map[string]any { return map[string]any{"taskId": validation} },
			errText: "cannot cancel: the process already ended"},
		{verb: "sandbar_validation_history", check: func(g Gomega, out map[string]any) {
			var ids []string
			for _, p := range items(out, "processes") {
				ids = append(ids, str(p.(map[string]any)["task"].(map[string]any)["taskId"]))
			}
			g.Expect(ids).To(ContainElement(validation))
		}},
		{verb: "sandbar_tasks_list", check: func(g Gomega, out map[string]any) {
			g.Expect(len(items(out, "tasks"))).To(BeNumerically(">=", 3))
		}},
		{verb: "sandbar_project_export", args: classArg("zorp/SpaceBoot"), check: func(g Gomega, out map[string]any) {
			g.Expect(taskOf(out)).To(HavePrefix("task-"))
		}},
		{verb: "sandbar_project_import", args: func() map[string]any {
			return map[string]any{"bundle": map[string]any{"items": []any{
				map[string]any{"class": "zorp/SpaceBoot", "name": boot + "-imported", "attributes": map[string]any{"name": "Imported"}}}}}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(taskOf(out)).To(HavePrefix("task-"))
		}},
		{verb: "sandbar_workflow_find", check: func(g Gomega, out map[string]any) {
			var names []string
			for _, w := range items(out, "workflows") {
				names = append(names, str(w.(map[string]any)["name"]))
			}
			g.Expect(names).To(ContainElements("order.fulfillment", "sandbar.import"))
		}},
		{verb: "sandbar_workflow_define", args: func() map[string]any {
			return map[string]any{"name": workflowName, "spec": map[string]any{"initial": "open",
				"states":      []any{map[string]any{"name": "open"}, map[string]any{"name": "done", "terminal": "success"}, map[string]any{"name": "dropped", "terminal": "cancelled"}},
				"transitions": []any{map[string]any{"name": "close", "from": []any{"open"}, "to": "done"}, map[string]any{"name": "drop", "from": []any{"open"}, "to": "dropped"}}}}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["defined"]).To(Equal(workflowName))
			g.Eventually(func() bool { _, ok := store.Load().Workflows[workflowName]; return ok }).WithTimeout(timeout).Should(BeTrue())
		}},
		{verb: "sandbar_workflow_start-process", args: func() map[string]any {
			return map[string]any{"workflow": "order.fulfillment", "input": map[string]any{"note": "every verb"}}
		}, check: func(g Gomega, out map[string]any) {
			process = taskOf(out)
			g.Expect(process).To(HavePrefix("task-"))
		}},
		{verb: "sandbar_workflow_transition", args: func() map[string]any {
			return map[string]any{"taskId": process, "transition": "confirm", "reason": "paid"}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out["state"]).To(Equal("confirmed"))
			g.Expect(out["transitions"]).To(ContainElement("ship"))
		}},
		{verb: "sandbar_workflow_process-state", args: func() map[string]any { return map[string]any{"taskId": process} },
			check: func(g Gomega, out map[string]any) {
				g.Expect(out["state"]).To(Equal("confirmed"))
			}},
		{verb: "sandbar_workflow_process-history", args: func() map[string]any { return map[string]any{"taskId": process} },
			check: func(g Gomega, out map[string]any) {
				history := items(out, "history")
				g.Expect(history).To(HaveLen(2))
				g.Expect(history[1]).To(HaveKeyWithValue("reason", "paid"))
			}},
		{verb: "sandbar_workflow_active-processes", args: func() map[string]any { return map[string]any{"workflow": "order.fulfillment"} },
			check: func(g Gomega, out map[string]any) {
				var ids []string
				for _, p := range items(out, "processes") {
					ids = append(ids, str(p.(map[string]any)["task"].(map[string]any)["taskId"]))
				}
				g.Expect(ids).To(ContainElement(process))
			}},
		{verb: "sandbar_tasks_cancel", args: func() map[string]any { return map[string]any{"taskId": process} },
			check: func(g Gomega, out map[string]any) {
				g.Expect(out["task"]).To(HaveKeyWithValue("status", "cancelled"))
			}},
		{verb: "sandbar_entity_delete", args: func() map[string]any {
			return map[string]any{"class": "zorp/SpaceBoot", "name": boot + "-2", "confirm": true}
		}, check: func(g Gomega, out map[string]any) {
			g.Expect(out).To(And(HaveKeyWithValue("deleted", true), HaveKeyWithValue("name", boot+"-2"), HaveKey("uid")))
		}},
	}

	listed := map[string]bool{}
	for name := range listTools(t, cs) {
		if !strings.HasPrefix(name, "sandbar_class_") || len(strings.Split(name, "_")) == 3 {
			listed[name] = true
		}
	}
	covered := map[string]bool{}
	for _, row := range rows {
		covered[row.verb] = true
	}
	for name := range listed {
		g.Expect(covered).To(HaveKey(name), "the verb %s has no row in TestEveryVerbAnswers", name)
	}
	g.Expect(len(listed)).To(Equal(len(rows)), "every row names a listed verb once")

	// One subtest per row, so a failure names its verb and the walk goes on; the rows
	// are a walk (writers feed the readers after them), so one failure may bring
	// others: read the first.
	for _, row := range rows {
		t.Run(row.verb, func(t *testing.T) {
			g := NewWithT(t)
			var args map[string]any
			if row.args != nil {
				args = row.args()
			}
			res := callTool(t, cs, row.verb, args)
			if row.check == nil {
				g.Expect(res.IsError).To(BeTrue(), text(res))
				g.Expect(text(res)).To(ContainSubstring(row.errText))
				return
			}
			g.Expect(res.IsError).To(BeFalse(), text(res))
			var out map[string]any
			g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed())
			row.check(g, out)
		})
	}
}

func classArg(ident string) func() map[string]any {
	return func() map[string]any { return map[string]any{"class": ident} }
}

func propertyArg(name string) func() map[string]any {
	return func() map[string]any { return map[string]any{"property": name} }
}

func fieldsOf(slots []any) []string {
	var out []string
	for _, s := range slots {
		out = append(out, s.(map[string]any)["field"].(string))
	}
	return out
}
