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
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

func TestInitializeAnswersWithServerInfoAndCapabilities(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	init := cs.InitializeResult()
	g.Expect(init.ServerInfo.Name).To(Equal("sandbar"))
	g.Expect(init.ServerInfo.Version).To(Equal("test"))
	g.Expect(init.Capabilities.Tools).NotTo(BeNil())
	g.Expect(init.Capabilities.Tools.ListChanged).To(BeTrue())
	g.Expect(init.Capabilities.Logging).NotTo(BeNil()) //nolint:staticcheck // served for the revisions before 2026-07-28
	g.Expect(init.Capabilities.Completions).NotTo(BeNil())
	g.Expect(init.Instructions).To(ContainSubstring("sandbar_schema_classes"))
}

func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		tools[tool.Name] = tool
	}
	return tools
}

func TestToolsListShowsVerbsAndClassesWithUsableNames(t *testing.T) {
	g := NewWithT(t)
	tools := listTools(t, connect(t, mcpURL, token, nil))
	for _, name := range []string{
		"sandbar_schema_classes", "sandbar_class_describe", "sandbar_class_direct-slots", "sandbar_types_subclass-of",
		"sandbar_property_range", "sandbar_entity_create", "sandbar_entity_find", "sandbar_entity_update",
		"sandbar_entity_validate", "sandbar_class_zorp_SpaceBoot", "sandbar_class_zorp_Wearer", "sandbar_class_order_Order",
	} {
		g.Expect(tools).To(HaveKey(name))
	}
	g.Expect(tools).NotTo(HaveKey("sandbar_class_zorp_Footwear"), "abstract classes get no create tool")
	for name, t := range tools {
		g.Expect(tool.ClientSafeName.MatchString(name)).To(BeTrue(), "tool name %q", name)
		g.Expect(t.Annotations).NotTo(BeNil(), name)
		g.Expect(t.Annotations.Title).NotTo(BeEmpty(), name)
		g.Expect(t.Annotations.DestructiveHint).NotTo(BeNil(), name)
	}
	g.Expect(tools["sandbar_entity_find"].Annotations.ReadOnlyHint).To(BeTrue())
	g.Expect(tools["sandbar_entity_create"].Annotations.ReadOnlyHint).To(BeFalse())

	var in struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	raw, _ := json.Marshal(tools["sandbar_class_zorp_SpaceBoot"].InputSchema)
	g.Expect(json.Unmarshal(raw, &in)).To(Succeed())
	g.Expect(in.Required).To(Equal([]string{"name"}))
	g.Expect(in.Properties["name"]).To(HaveKeyWithValue("type", "string"))
	g.Expect(in.Properties["name"]).To(HaveKeyWithValue("maxLength", 200.0))
	g.Expect(in.Properties["price"]).To(HaveKeyWithValue("type", "number"))
	g.Expect(in.Properties["price"]).To(HaveKeyWithValue("minimum", 0.0))
	g.Expect(in.Properties["tentacleCount"]).To(HaveKeyWithValue("type", "integer"))
	g.Expect(in.Properties["vacuumRated"]).To(HaveKeyWithValue("type", "boolean"))
	g.Expect(in.Properties).To(HaveKey("metadata"))

	raw, _ = json.Marshal(tools["sandbar_class_order_Order"].InputSchema)
	g.Expect(json.Unmarshal(raw, &in)).To(Succeed())
	g.Expect(in.Properties["placedAt"]).To(HaveKeyWithValue("format", "date-time"))
	g.Expect(in.Properties["trackingId"]).To(HaveKeyWithValue("format", "uuid"))
	g.Expect(in.Properties["items"]).To(HaveKeyWithValue("type", "array"))
	g.Expect(in.Properties["customer"]["description"]).To(ContainSubstring("zorp.wearer"))

	raw, _ = json.Marshal(tools["sandbar_entity_create"].InputSchema)
	g.Expect(string(raw)).To(ContainSubstring(`"zorp/SpaceBoot"`), "the class argument lists the classes")
}

func getBoot(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u)).To(Succeed())
	return u
}

func TestCreateToolsMakeKubernetesObjects(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)

	moonwalker, stardust, fromJSON := unique("moonwalker"), unique("stardust"), unique("from-json")
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{
		"name": "Moonwalker", "price": "12.5", "tentacleCount": 8, "vacuumRated": "true",
		"metadata": map[string]any{"name": moonwalker},
	})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	boot := getBoot(t, moonwalker)
	g.Expect(boot.Object["spec"]).To(Equal(map[string]any{
		"name": "Moonwalker", "price": 12.5, "tentacleCount": int64(8), "vacuumRated": true,
	}), "arguments are coerced to the slot types")

	res = callTool(t, cs, "sandbar_entity_create", map[string]any{
		"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "Stardust"}, "metadata": map[string]any{"name": stardust},
	})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(getBoot(t, stardust).Object["spec"]).To(HaveKeyWithValue("name", "Stardust"))

	res = callTool(t, cs, "sandbar_entity_create", map[string]any{
		"class": "zorp.spaceboot", "format": "json",
		"source": `{"metadata": {"name": "` + fromJSON + `"}, "spec": {"name": "From JSON", "tentacleCount": 2}}`,
	})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(getBoot(t, fromJSON).Object["spec"]).To(HaveKeyWithValue("tentacleCount", int64(2)))

	// A generated name when none is given.
	res = callTool(t, cs, "sandbar_class_zorp_Wearer", map[string]any{"handle": ":zorp/glorbo", "homePlanets": "glorb"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var out map[string]any
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed())
	g.Expect(out["name"]).To(HavePrefix("wearer-"))
	g.Expect(out["attributes"]).To(Equal(map[string]any{"handle": "zorp/glorbo", "homePlanets": []any{"glorb"}}))
}

func TestDomainErrorsSayWhatToFix(t *testing.T) {
	cs := connect(t, mcpURL, token, nil)
	taken := unique("taken")
	for _, tc := range []struct {
		desc string
		tool string
		args map[string]any
		want []string
	}{
		{"missing required slot", "sandbar_class_zorp_SpaceBoot", map[string]any{"price": 3},
			[]string{`missing required slot(s): "name" (string)`, "Example:"}},
		{"wrong type", "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "x", "price": "cheap"},
			[]string{`slot "price": expected number, got string "cheap"`}},
		{"unknown slot", "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "x", "colour": "red"},
			[]string{`"colour" is not a slot of zorp/SpaceBoot`, "tentacleCount (integer)"}},
		{"constraint", "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "x", "tentacleCount": 65},
			[]string{"65 is greater than the maximum 64"}},
		{"enum", "sandbar_class_zorp_Wearer", map[string]any{"handle": "a/b", "homePlanets": []any{"venus"}},
			[]string{`"venus" is not one of the allowed values: "zorp-prime", "glorb", "earth"`}},
		{"pattern", "sandbar_entity_create",
			map[string]any{"class": "order/Order", "attributes": map[string]any{"number": "123", "customer": "x"}},
			[]string{"does not match the pattern ^ORD-[0-9]+$"}},
		{"abstract class", "sandbar_entity_create", map[string]any{"class": "zorp/Footwear", "attributes": map[string]any{"name": "x"}},
			[]string{"cannot instantiate abstract class zorp/Footwear; concrete subclasses: zorp/SpaceBoot"}},
		{"unknown class", "sandbar_entity_create", map[string]any{"class": "zorp/Hat"},
			[]string{`unknown class "zorp/Hat"; known classes:`, "zorp/SpaceBoot"}},
		{"bad JSON source", "sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "format": "json", "source": "{\n  \"name\": }"},
			[]string{"source (json): line 2: not valid JSON"}},
		{"not found", "sandbar_entity_update", map[string]any{"class": "zorp/SpaceBoot", "name": "ghost", "attributes": map[string]any{"price": 1}},
			[]string{`no zorp/SpaceBoot named "ghost"`}},
		{"another namespace", "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": "kube-system"},
			[]string{`forbidden: this account may act in namespace "default"`}},
		{"already exists", "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "dup", "metadata": map[string]any{"name": taken}},
			nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			res := callTool(t, cs, tc.tool, tc.args)
			if tc.want == nil {
				NewWithT(t).Expect(res.IsError).To(BeFalse(), text(res))
				res = callTool(t, cs, tc.tool, tc.args)
				tc.want = []string{`a zorp/SpaceBoot named "` + taken + `" already exists`}
			}
			NewWithT(t).Expect(res.IsError).To(BeTrue(), text(res))
			for _, w := range tc.want {
				NewWithT(t).Expect(text(res)).To(ContainSubstring(w))
			}
		})
	}
}

func TestProtocolFaultsAreJSONRPCErrorsAndBadArgumentsAreResults(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_no_such_tool", Arguments: map[string]any{}})
	var rpc *jsonrpc.Error
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))

	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sandbar_class_describe", Arguments: []int{1}})
	g.Expect(asRPC(err, &rpc)).To(BeTrue(), "%v", err)
	g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))

	// Arguments that do not fit the input schema come back as results the model can
	// read and act on (protocol revision 2025-11-25).
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"sandbar_class_describe", map[string]any{}, `invalid arguments: missing argument "class"`},
		{"sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "limit": "ten"}, `argument "limit" must be an integer`},
		// An unknown key is refused, not ignored: a filter that silently did nothing
		// would return unfiltered instances the model trusts.
		{"sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "filter": map[string]any{"name": "x"}},
			`unknown argument "filter"; sandbar_entity_find takes: class, where, name, labelSelector, namespace, limit, continue, format`},
		{"sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "limit": 500}, `argument "limit" must be at most 200, got 500`},
		{"sandbar_tasks_get", map[string]any{"taskId": 7}, `argument "taskId" must be a string, got number 7`},
		{"sandbar_class_zorp_SpaceBoot", map[string]any{"name": "x", "metadata": "my-boot"}, `argument "metadata" must be an object`},
		{"sandbar_class_zorp_SpaceBoot", map[string]any{"name": "x", "metadata": map[string]any{"nmae": "b"}}, `unknown argument "metadata.nmae"; metadata takes: name, namespace, labels`}, //nolint:misspell // a misspelt key, on purpose
		{"sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "x"}, "metadata": map[string]any{"name": 42}},
			`argument "metadata.name" must be a string, got number 42`},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		g.Expect(res.IsError).To(BeTrue(), text(res))
		g.Expect(text(res)).To(ContainSubstring(tc.want))
	}
}

func TestFindUpdateValidate(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	batch := unique("find")
	findA, findB, findC := batch+"-a", batch+"-b", batch+"-c"
	for i, n := range []string{findA, findB, findC} {
		res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{
			"name": n, "tentacleCount": i, "metadata": map[string]any{"name": n, "labels": map[string]any{"batch": batch}},
		})
		g.Expect(res.IsError).To(BeFalse(), text(res))
	}
	find := func(args map[string]any) map[string]any {
		res := callTool(t, cs, "sandbar_entity_find", args)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		var out map[string]any
		g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed())
		return out
	}
	out := find(map[string]any{"class": "zorp/SpaceBoot", "labelSelector": "batch=" + batch, "where": map[string]any{"tentacleCount": 1}})
	g.Expect(out["count"]).To(Equal(1.0))

	// Pages of two, through the continue token, across the superclass query.
	var names []any
	args := map[string]any{"class": "zorp/Footwear", "labelSelector": "batch=" + batch, "limit": 2}
	for {
		out = find(args)
		for _, it := range out["items"].([]any) {
			names = append(names, it.(map[string]any)["name"])
		}
		next, ok := out["continue"].(string)
		if !ok {
			break
		}
		args["continue"] = next
	}
	g.Expect(names).To(Equal([]any{findA, findB, findC}))

	// Update with optimistic concurrency.
	out = find(map[string]any{"class": "zorp/SpaceBoot", "name": findA})
	item := out["items"].([]any)[0].(map[string]any)
	rv := item["resourceVersion"].(string)
	res := callTool(t, cs, "sandbar_entity_update", map[string]any{
		"class": "zorp/SpaceBoot", "name": findA, "attributes": map[string]any{"price": 9, "tentacleCount": nil}, "resourceVersion": rv,
	})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(getBoot(t, findA).Object["spec"]).To(Equal(map[string]any{"name": findA, "price": int64(9)}))
	res = callTool(t, cs, "sandbar_entity_update", map[string]any{
		"class": "zorp/SpaceBoot", "name": findA, "attributes": map[string]any{"price": 10}, "resourceVersion": rv,
	})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring("conflict"))
	res = callTool(t, cs, "sandbar_entity_update", map[string]any{
		"class": "zorp/SpaceBoot", "name": findA, "attributes": map[string]any{"name": nil},
	})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring(`slot "name" is required and cannot be removed`))

	// Validation saves nothing.
	res = callTool(t, cs, "sandbar_entity_validate", map[string]any{
		"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "dry"}, "metadata": map[string]any{"name": "dry-run"},
	})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "dry-run"}, u)).NotTo(Succeed())
}

func TestIntrospectionVerbs(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	res := callTool(t, cs, "sandbar_class_describe", map[string]any{"class": "zorp/Footwear"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(text(res)).To(ContainSubstring(`"concreteSubclasses": [`))
	res = callTool(t, cs, "sandbar_types_subclass-of", map[string]any{"class": "zorp/SpaceBoot", "of": "zorp/Footwear"})
	g.Expect(res.StructuredContent).To(HaveKeyWithValue("subclassOf", true))
	res = callTool(t, cs, "sandbar_property_domain", map[string]any{"property": "footwear.name"})
	g.Expect(res.StructuredContent).To(HaveKeyWithValue("inheritedBy", ContainElement("zorp/SpaceBoot")))
	res = callTool(t, cs, "sandbar_class_required-slots", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.StructuredContent).To(HaveKeyWithValue("required", []any{"name"}))
}

func asRPC(err error, target **jsonrpc.Error) bool {
	return errors.As(err, target)
}

// An empty tool list allows no tool, whether the account was written with kubectl or
// with a Go client (whose empty list must not be left out of the object and so
// defaulted to every tool); a list left unset allows every tool.
func TestAnEmptyToolListFromAGoClientAllowsNone(t *testing.T) {
	g := NewWithT(t)
	sa, tok := newAccount(t, "no-tools", metav1alpha1.Permissions{Tools: []string{}})
	var stored metav1alpha1.ServiceAccount
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(sa), &stored)).To(Succeed())
	g.Expect(stored.Spec.Permissions.Tools).To(BeEmpty(), "stored as an empty list, not defaulted to every tool")
	g.Expect(listTools(t, connect(t, mcpURL, tok, nil))).To(BeEmpty())

	_, all := newAccount(t, "unset-tools", metav1alpha1.Permissions{})
	g.Expect(listTools(t, connect(t, mcpURL, all, nil))).To(HaveKey("sandbar_entity_find"))
}
