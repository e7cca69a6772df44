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

// Clients drop what exceeds their limits without telling anyone: a tool name longer
// than 64 characters with the client's prefix, an input schema over 16 KiB, tools past
// the count a client takes. The server keeps within them, serves the operational verbs
// instead, and the status of the Class or ServiceAccount says so.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// zorpClass creates a concrete zorp class (which the sample account may edit) with one
// optional slot of a property of its own, and waits until the catalog serves it.
func zorpClass(t *testing.T, kind string, prop metav1alpha1.PropertySpec) *metav1alpha1.Class {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	p := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: "lim." + strings.ToLower(kind)}, Spec: prop}
	c := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: "zorp." + strings.ToLower(kind)}, Spec: metav1alpha1.ClassSpec{
		Prefix: "zorp", Kind: kind, Slots: []metav1alpha1.SlotRef{{Property: p.Name}},
	}}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	g.Expect(k8s.Create(ctx, c)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), c); _ = k8s.Delete(context.Background(), p) })
	g.Eventually(func() bool {
		cl := store.Load().Classes[c.Name]
		return cl != nil && cl.Servable()
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "class %s is served", c.Name)
	return c
}

// clientLimits is the ClientLimits condition of an object, once it is written.
func clientLimits(t *testing.T, obj client.Object, conds func() []metav1.Condition) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	NewWithT(t).Eventually(func() *metav1.Condition {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil
		}
		cond = meta.FindStatusCondition(conds(), metav1alpha1.ConditionClientLimits)
		return cond
	}).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeNil(), "%s has a ClientLimits condition", obj.GetName())
	return cond
}

// withheldClassIsServedThroughEntityCreate checks what a client sees of a class whose
// own tool clients would drop: the Class's condition, no tool of its own in tools/list
// (both name styles, and the per-class surface keeps the operational verbs for it),
// and sandbar_entity_create creates its instances.
func withheldClassIsServedThroughEntityCreate(t *testing.T, c *metav1alpha1.Class, reason string, attrs map[string]any) {
	g := NewWithT(t)
	var cond *metav1.Condition
	g.Eventually(func() string {
		cond = clientLimits(t, c, func() []metav1.Condition { return c.Status.Conditions })
		return cond.Reason
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(reason))
	own := "sandbar_class_zorp_" + c.Spec.Kind
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Message).To(And(ContainSubstring("is not served"), ContainSubstring("sandbar_entity_create"),
		ContainSubstring("zorp/"+c.Spec.Kind)))
	ready := meta.FindStatusCondition(c.Status.Conditions, metav1alpha1.ConditionReady)
	g.Expect(ready.Message).To(ContainSubstring("is not served"), "kubectl get classes -o wide shows it")

	cs := connect(t, mcpURL, token, nil)
	tools := listTools(t, cs)
	g.Expect(tools).To(HaveKey("sandbar_class_zorp_SpaceBoot"), "other classes keep their tools")
	for name := range tools {
		g.Expect(name).NotTo(HavePrefix(own[:min(len(own), 40)]), "no tool of the class is listed")
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: own, Arguments: map[string]any{}})
	g.Expect(err).To(MatchError(ContainSubstring("unknown tool")), "its tool is not served")

	dotted := listTools(t, connect(t, serve(t, mcpserver.Options{NameStyle: mcpserver.StyleDotted}), token, nil))
	g.Expect(dotted).To(HaveKey("sandbar.class.zorp.SpaceBoot"))
	g.Expect(dotted).NotTo(HaveKey("sandbar.class.zorp." + c.Spec.Kind))
	perClass := listTools(t, connect(t, serve(t, mcpserver.Options{ToolSurface: mcpserver.SurfacePerClass}), token, nil))
	g.Expect(perClass).To(HaveKey("sandbar_class_zorp_SpaceBoot"))
	g.Expect(perClass).To(HaveKey("sandbar_entity_create"), "the class stays reachable on a per-class surface")

	name := unique("withheld")
	res := callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/" + c.Spec.Kind,
		"attributes": attrs, "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(text(res)).To(ContainSubstring(name))
}

func TestClassWhoseToolNameIsTooLongForClaudeCodeIsServedThroughEntityCreate(t *testing.T) {
	// sandbar_class_zorp_<Kind>: 56 characters; with mcp__sandbar__, 70.
	kind := "ClientLimitsKindWithAVeryLongName" + strings.ToUpper(rand.String(4))
	c := zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString})
	withheldClassIsServedThroughEntityCreate(t, c, metav1alpha1.ReasonNameTooLong, map[string]any{strings.ToLower(kind): "x"})
}

func TestClassWhoseInputSchemaExceeds16KiBIsServedThroughEntityCreate(t *testing.T) {
	// One keyword slot with 256 long values: about 20 KB of input schema.
	var values []string
	for i := range 256 {
		values = append(values, fmt.Sprintf("value-%03d-%s", i, strings.Repeat("x", 64)))
	}
	kind := "Huge" + strings.ToUpper(rand.String(4))
	c := zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeKeyword, Enum: values})
	withheldClassIsServedThroughEntityCreate(t, c, metav1alpha1.ReasonSchemaTooLarge, map[string]any{})
}

func TestClassesWithinClientLimitsSayHowTheirToolMeasures(t *testing.T) {
	boot := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: "zorp.spaceboot"}}
	cond := clientLimits(t, boot, func() []metav1.Condition { return boot.Status.Conditions })
	g := NewWithT(t)
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Reason).To(Equal(metav1alpha1.ReasonWithinClientLimits))
	g.Expect(cond.Message).To(ContainSubstring("sandbar_class_zorp_SpaceBoot fits every client"))
}

// toolAccount creates an account in a namespace of its own that may edit instances
// there, and answers it with its token once it is ready.
func toolAccount(t *testing.T, prefix string, spec metav1alpha1.ServiceAccountSpec) (*metav1alpha1.ServiceAccount, string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns, name := unique(prefix), unique(prefix)
	spec.ServiceName, spec.ServiceAccountName, spec.APIKeySecretRef = name, "agent", metav1alpha1.SecretKeyRef{Name: name + "-key"}
	sa := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-editor"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-editor"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}},
		sa,
	}
	for _, o := range objs {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), objs[0]) })
	return sa, issueWhenReady(t, ns, name)
}

// connectNamed is a go-sdk client that names itself name in initialize.
func connectNamed(t *testing.T, tok, name string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: &http.Client{Transport: testenv.Bearer{Token: tok}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		t.Fatalf("connecting as %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// An account past the most tools its clients take is listed the core verbs with the
// generic create and the verb that gives a class's create schema, in place of the
// per-class tools: a client learns a class's arguments in one call and creates with
// them; the per-class tool, called anyway, says what to call instead.
func TestAccountPastItsToolLimitIsServedACreateSchemaInPlaceOfClassTools(t *testing.T) {
	g := NewWithT(t)
	// The ten verbs of the core toolset it may call (no glob grants
	// sandbar_entity_delete) and the samples' four classes are fourteen tools,
	// once the server serves the four (the suite waits for SpaceBoot alone).
	for _, kind := range []string{"zorp_SpaceBoot", "zorp_Wearer", "zorp_Review", "order_Order"} {
		waitForTool(t, "sandbar_class_"+kind)
	}
	limit := int32(13)
	sa, tok := toolAccount(t, "narrow", metav1alpha1.ServiceAccountSpec{MaxTools: &limit})
	ns := sa.Namespace

	var cond *metav1.Condition
	g.Eventually(func() string {
		cond = clientLimits(t, sa, func() []metav1.Condition { return sa.Status.Conditions })
		return cond.Reason
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(metav1alpha1.ReasonTooManyTools))
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Message).To(And(ContainSubstring("would see 14 tools, more than the 13 its clients take (spec.maxTools)"),
		ContainSubstring("served 12 tools"), ContainSubstring("may be called by name")))

	cs := connect(t, mcpURL, tok, nil)
	tools := listTools(t, cs)
	g.Expect(tools).To(HaveLen(12))
	g.Expect(tools).To(And(HaveKey("sandbar_entity_create"), HaveKey("sandbar_entity_schema"), HaveKey("sandbar_entity_find")))
	g.Expect(tools).NotTo(HaveKey("sandbar_class_zorp_SpaceBoot"))
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Narrow", "metadata": map[string]any{"name": unique("narrow")}})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(And(ContainSubstring("not served to this account"), ContainSubstring("sandbar_entity_create"),
		ContainSubstring(`"zorp/SpaceBoot"`)))
	g.Expect(boots(t, ns)).To(BeEmpty(), "nothing was created")

	res = callTool(t, cs, "sandbar_entity_schema", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var learned struct {
		Tool        string `json:"tool"`
		InputSchema struct {
			Properties struct {
				Attributes struct {
					Properties map[string]any `json:"properties"`
					Required   []string       `json:"required"`
				} `json:"attributes"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	g.Expect(json.Unmarshal([]byte(text(res)), &learned)).To(Succeed())
	g.Expect(learned.Tool).To(Equal("sandbar_entity_create"))
	g.Expect(learned.InputSchema.Properties.Attributes.Required).To(Equal([]string{"name"}))
	g.Expect(learned.InputSchema.Properties.Attributes.Properties).To(HaveKey("vacuumRated"))
	res = callTool(t, cs, learned.Tool, map[string]any{"class": "zorp/SpaceBoot",
		"attributes": map[string]any{"name": "Narrow", "vacuumRated": true}, "metadata": map[string]any{"name": unique("narrow")}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(boots(t, ns)).To(HaveLen(1))

	// A verb its toolsets do not list is still called by name.
	res = callTool(t, cs, "sandbar_class_required-slots", map[string]any{"class": "zorp/SpaceBoot"})
	g.Expect(res.IsError).To(BeFalse(), text(res))

	// Within its limit, from 80% of it, the condition warns before the cut.
	g.Expect(k8s.Patch(context.Background(), sa, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxTools":16}}`)))).To(Succeed())
	g.Eventually(func() string {
		cond = clientLimits(t, sa, func() []metav1.Condition { return sa.Status.Conditions })
		return cond.Reason
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(metav1alpha1.ReasonNearToolLimit))
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Message).To(ContainSubstring("the account sees 14 tools, 87% of the 16 its clients take (spec.maxTools): near the limit, " +
		"past which it is served the operational verbs instead of its 4 per-class tools"))
	g.Expect(listTools(t, connect(t, mcpURL, tok, nil))).To(HaveKey("sandbar_class_zorp_SpaceBoot"))
}

// An account that declares no clients is listed as many tools as the client it uses
// takes, as the client names itself in initialize: every verb and every class's tool
// for Claude Code and VS Code (the verbs alone past a client's limit:
// TestToolsetsAndTheClientsLimitShapeTheList, over a fake cluster with 74 classes).
// What the account declares wins.
func TestToolLimitFollowsTheClientThatAsks(t *testing.T) {
	g := NewWithT(t)
	for _, kind := range []string{"zorp_SpaceBoot", "zorp_Wearer", "zorp_Review", "order_Order"} {
		waitForTool(t, "sandbar_class_"+kind)
	}
	_, tok := toolAccount(t, "named", metav1alpha1.ServiceAccountSpec{Toolsets: []string{"all"}})
	for _, name := range []string{"claude-code", "Visual Studio Code", "sandbar-test"} {
		g.Expect(listTools(t, connectNamed(t, tok, name))).To(HaveKey("sandbar_class_zorp_SpaceBoot"), "%s takes every tool", name)
	}

	// An account for Claude Code alone is listed every tool, whatever the client says.
	_, tok = toolAccount(t, "declared", metav1alpha1.ServiceAccountSpec{Toolsets: []string{"all"}, Clients: []string{"claude-code"}})
	g.Expect(listTools(t, connectNamed(t, tok, "cursor-vscode"))).To(HaveKey("sandbar_class_zorp_SpaceBoot"))

	// An account as config/samples declares one (no toolsets, no clients): the core
	// verbs and every class's tool, for every client.
	plain, tok := toolAccount(t, "plain", metav1alpha1.ServiceAccountSpec{})
	for _, name := range []string{"cursor-vscode", "sandbar-test"} {
		tools := listTools(t, connectNamed(t, tok, name))
		g.Expect(tools).To(And(HaveKey("sandbar_class_zorp_SpaceBoot"), HaveKey("sandbar_entity_find"),
			Not(HaveKey("sandbar_schema_classes")), Not(HaveKey("sandbar_entity_create"))), name)
	}
	g.Eventually(func() string {
		return clientLimits(t, plain, func() []metav1.Condition { return plain.Status.Conditions }).Reason
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(metav1alpha1.ReasonWithinClientLimits))
}

// The clients a ServiceAccount may declare are the clients whose limits the server knows.
func TestDeclarableClientsAreTheKnownClients(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "meta.sandbar.dev_serviceaccounts.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	NewWithT(t).Expect(yaml.Unmarshal(raw, &crd)).To(Succeed())
	var enum []string
	for _, v := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["clients"].Items.Schema.Enum {
		var s string
		NewWithT(t).Expect(json.Unmarshal(v.Raw, &s)).To(Succeed())
		enum = append(enum, s)
	}
	NewWithT(t).Expect(enum).To(ConsistOf(tool.ClientNames()))
}

// A result longer than the server's byte bound comes in parts no longer than the
// bound, each with a note and the token of the next; the parts joined are the result
// a server without the bound gives, byte for byte.
func TestResultPastTheByteBoundIsCutWithAContinuationThatGivesTheRest(t *testing.T) {
	g := NewWithT(t)
	var values []string
	for i := range 256 {
		values = append(values, fmt.Sprintf("colour-%03d-%s", i, strings.Repeat("y", 48)))
	}
	c := zorpClass(t, "Palette"+strings.ToUpper(rand.String(4)), metav1alpha1.PropertySpec{Range: metav1alpha1.RangeKeyword, Enum: values})
	args := map[string]any{"class": "zorp/" + c.Spec.Kind}
	whole := text(callTool(t, connect(t, mcpURL, token, nil), "sandbar_class_describe", args))
	g.Expect(len(whole)).To(BeNumerically(">", 16<<10))

	const bound = 4096
	cs := connect(t, serve(t, mcpserver.Options{MaxResultBytes: bound}), token, nil)
	continueArg := regexp.MustCompile(`"resultContinue": "([A-Za-z0-9_-]+)"`)
	joined, parts := "", 0
	for {
		res := callTool(t, cs, "sandbar_class_describe", args)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		g.Expect(res.Content).To(HaveLen(2), "a part and a note")
		part, note := res.Content[0].(*mcp.TextContent).Text, res.Content[1].(*mcp.TextContent).Text
		g.Expect(len(part)).To(BeNumerically("<=", bound))
		joined += part
		parts++
		m := continueArg.FindStringSubmatch(note)
		if m == nil {
			g.Expect(note).To(ContainSubstring("the end of the result"))
			break
		}
		g.Expect(note).To(ContainSubstring("result cut: bytes"))
		args = map[string]any{"class": "zorp/" + c.Spec.Kind, "resultContinue": m[1]}
	}
	g.Expect(parts).To(BeNumerically(">", 4))
	g.Expect(joined).To(Equal(whole), "nothing lost, nothing repeated")

	res := callTool(t, cs, "sandbar_class_describe", map[string]any{"class": "zorp/SpaceBoot", "resultContinue": args["resultContinue"]})
	g.Expect(res.IsError).To(BeTrue(), "a token of another result is refused, not spliced")
	g.Expect(text(res)).To(ContainSubstring("not a token this server gave out for these arguments"))
}

// Lists come in pages of at most the server's page size, each with a continue token;
// the pages together are the whole list.
func TestListsComeInPagesWithAContinueToken(t *testing.T) {
	g := NewWithT(t)
	classesOf := func(res *mcp.CallToolResult) ([]string, string) {
		var out struct {
			Classes []struct {
				Class string `json:"class"`
			} `json:"classes"`
			Continue string `json:"continue"`
			Total    int    `json:"total"`
		}
		g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed(), text(res))
		var names []string
		for _, c := range out.Classes {
			names = append(names, c.Class)
		}
		return names, out.Continue
	}
	all, next := classesOf(callTool(t, connect(t, mcpURL, token, nil), "sandbar_schema_classes", map[string]any{}))
	g.Expect(next).To(BeEmpty())
	g.Expect(len(all)).To(BeNumerically(">=", 5))

	cs := connect(t, serve(t, mcpserver.Options{MaxResultItems: 2}), token, nil)
	var paged []string
	args := map[string]any{}
	for {
		res := callTool(t, cs, "sandbar_schema_classes", args)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		names, next := classesOf(res)
		g.Expect(len(names)).To(BeNumerically("<=", 2))
		paged = append(paged, names...)
		if next == "" {
			break
		}
		g.Expect(text(res)).To(ContainSubstring(`pass \"continue\" for the next page`))
		args = map[string]any{"continue": next}
	}
	g.Expect(paged).To(Equal(all))

	names, _ := classesOf(callTool(t, cs, "sandbar_schema_classes", map[string]any{"limit": 1}))
	g.Expect(names).To(HaveLen(1), "a smaller limit")
	res := callTool(t, cs, "sandbar_schema_classes", map[string]any{"continue": "not-a-token"})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring(`"continue" is not a token this server gave out`))
}

// A task's result past the byte bound: tasks/result, which has no way to ask for
// more, gives the first part and names the verb that gives the rest; that verb gives
// the whole result in parts, joined equal to what a server without the bound gives.
func TestTaskResultPastTheByteBoundNamesWhereTheRestIs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	kind := "Essay" + strings.ToUpper(rand.String(4))
	c := zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString})
	main := connect(t, mcpURL, token, nil)
	const n = 60
	createInstances(t, c.Spec.Kind, n, func(i int) string { return fmt.Sprintf("essay-with-a-long-name-%03d", i) },
		func(i int) map[string]any {
			return map[string]any{strings.ToLower(kind): strings.Repeat("essay. ", 10)}
		})
	// Tighten the slot: every essay fails validation, and the report lists them all.
	prop := &metav1alpha1.Property{}
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: "lim." + strings.ToLower(kind)}, prop); err != nil {
			return err
		}
		five := int64(5)
		prop.Spec.MaxLength = &five
		return k8s.Update(ctx, prop)
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func() bool {
		cl := store.Load().Classes[c.Name]
		if cl == nil || len(cl.Slots) == 0 {
			return false
		}
		return cl.Slots[0].MaxLength != nil
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())

	const bound = 4096
	url := serve(t, mcpserver.Options{MaxResultBytes: bound})
	s := newRawSession(t, url, token)
	res := s.call("tools/call", map[string]any{"name": "sandbar_validation_start",
		"arguments": map[string]any{"class": "zorp/" + c.Spec.Kind}, "task": map[string]any{}})
	g.Expect(res.Error).To(BeNil())
	var created struct {
		Task map[string]any `json:"task"`
	}
	g.Expect(json.Unmarshal(res.Result, &created)).To(Succeed())
	id := created.Task["taskId"].(string)
	g.Eventually(func() any {
		got, _ := s.task("tasks/get", id)
		return got["status"]
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("completed"))

	var cut struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent any `json:"structuredContent"`
	}
	g.Expect(json.Unmarshal(s.call("tasks/result", map[string]any{"taskId": id}).Result, &cut)).To(Succeed())
	g.Expect(cut.Content).To(HaveLen(2))
	g.Expect(len(cut.Content[0].Text)).To(BeNumerically("<=", bound))
	g.Expect(cut.StructuredContent).To(Equal(map[string]any{}), "the whole result does not ride along")
	g.Expect(cut.Content[1].Text).To(And(ContainSubstring("result cut"),
		ContainSubstring(`sandbar_tasks_result with {"taskId": "`+id+`"}`)))

	whole := text(callTool(t, main, "sandbar_tasks_result", map[string]any{"taskId": id}))
	g.Expect(len(whole)).To(BeNumerically(">", 2*bound))
	cs := connect(t, url, token, nil)
	continueArg := regexp.MustCompile(`"resultContinue": "([A-Za-z0-9_-]+)"`)
	args := map[string]any{"taskId": id}
	joined := ""
	for {
		res := callTool(t, cs, "sandbar_tasks_result", args)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		joined += res.Content[0].(*mcp.TextContent).Text
		m := continueArg.FindStringSubmatch(res.Content[1].(*mcp.TextContent).Text)
		if m == nil {
			break
		}
		args = map[string]any{"taskId": id, "resultContinue": m[1]}
	}
	g.Expect(joined).To(Equal(whole))
	var out struct {
		Result struct {
			Failures []any `json:"failures"`
		} `json:"result"`
	}
	g.Expect(json.Unmarshal([]byte(joined), &out)).To(Succeed())
	g.Expect(out.Result.Failures).To(HaveLen(n), "every failure, nothing lost")
}

// A credential in a result that is cut where the cut falls inside it: the result is
// redacted before it is cut, so neither part carries half of it.
func TestCutFallingInsideACredentialLeaksNoHalf(t *testing.T) {
	g := NewWithT(t)
	leak, key := leakedToken(t)
	// The name and the description, which the answer shows first, put the key past
	// the smallest bound (a description holds at most 4096 bytes).
	name := "zorp.cutleak" + rand.String(4) + "." + strings.Repeat("p", 60) + "." + strings.Repeat("q", 60)
	c := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: metav1alpha1.ClassSpec{
		Prefix: "zorp", Kind: "CutLeak" + strings.ToUpper(rand.String(4)), Abstract: true,
		Description: strings.Repeat("filler ", 560) + leak + " ends here.",
	}}
	g.Expect(k8s.Create(context.Background(), c)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), c) })
	args := map[string]any{"class": "zorp/" + c.Spec.Kind}
	// Once the class is ready its description no longer changes between the calls below.
	var whole string
	g.Eventually(func() string {
		whole = text(callTool(t, connect(t, mcpURL, token, nil), "sandbar_class_describe", args))
		return whole
	}).WithTimeout(timeout).WithPolling(poll).Should(And(ContainSubstring(redact.Redacted), ContainSubstring(`"ready": true`)))
	// Where the key stands in the text before redaction, and a bound that cuts it in two.
	at := strings.Index(whole, redact.Redacted)
	bound := at + len(leak)/2
	g.Expect(bound).To(BeNumerically(">=", tool.MinResultBytes), "the key stands past the smallest bound")

	cs := connect(t, serve(t, mcpserver.Options{MaxResultBytes: bound}), token, nil)
	continueArg := regexp.MustCompile(`"resultContinue": "([A-Za-z0-9_-]+)"`)
	joined := ""
	for {
		res := callTool(t, cs, "sandbar_class_describe", args)
		part := res.Content[0].(*mcp.TextContent).Text
		g.Expect(part).NotTo(Or(ContainSubstring(key[:len(key)/2]), ContainSubstring(key[len(key)/2:])), "no half of the key")
		joined += part
		m := continueArg.FindStringSubmatch(res.Content[1].(*mcp.TextContent).Text)
		if m == nil {
			break
		}
		args = map[string]any{"class": "zorp/" + c.Spec.Kind, "resultContinue": m[1]}
	}
	g.Expect(joined).To(Equal(whole))
}
