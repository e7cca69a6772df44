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

// Schema evolution over MCP: sandbar_schema_define-class and define-property write
// real Class and Property objects, as the account's Kubernetes identity, with the
// API server's validation, the reconcilers' conditions and the instance API's
// breaking-change guard. Refusals leave the cluster as it was.

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

const (
	defineClass    = "sandbar_schema_define-class"
	defineProperty = "sandbar_schema_define-property"
)

// metamodelAuthor may call every tool, the define tools by name. It acts as the
// sample's Kubernetes ServiceAccount default/claude, bound to sandbar-metamodel-author.
var metamodelAuthor = metav1alpha1.Permissions{Tools: []string{"*", defineClass, defineProperty}}

// answer is a tool result's JSON; the call must have succeeded.
func answer(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	g := NewWithT(t)
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var out map[string]any
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed(), text(res))
	return out
}

// refused asserts a call failed and returns its message.
func refused(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	NewWithT(t).Expect(res.IsError).To(BeTrue(), text(res))
	return text(res)
}

func metaObject(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKey{Name: obj.GetName()}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return true
}

func classNamed(t *testing.T, name string) (*metav1alpha1.Class, bool) {
	t.Helper()
	c := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return c, metaObject(t, c)
}

func propertyNamed(t *testing.T, name string) (*metav1alpha1.Property, bool) {
	t.Helper()
	p := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return p, metaObject(t, p)
}

// deleteMetamodelAfter deletes Classes and Properties when the test ends.
func deleteMetamodelAfter(t *testing.T, classes, properties []string) {
	t.Cleanup(func() {
		for _, n := range classes {
			_ = k8s.Delete(context.Background(), &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		for _, n := range properties {
			_ = k8s.Delete(context.Background(), &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})
}

// classUnchanged asserts that a Class is as it was: generation, spec, annotations.
func classUnchanged(t *testing.T, before *metav1alpha1.Class) {
	t.Helper()
	now, ok := classNamed(t, before.Name)
	g := NewWithT(t)
	g.Expect(ok).To(BeTrue(), before.Name)
	g.Expect(now.Generation).To(Equal(before.Generation), "%s: nothing changed", before.Name)
	g.Expect(now.Spec).To(Equal(before.Spec), before.Name)
	g.Expect(now.Annotations).To(Equal(before.Annotations), before.Name)
}

func propertyUnchanged(t *testing.T, before *metav1alpha1.Property) {
	t.Helper()
	now, ok := propertyNamed(t, before.Name)
	g := NewWithT(t)
	g.Expect(ok).To(BeTrue(), before.Name)
	g.Expect(now.Generation).To(Equal(before.Generation), "%s: nothing changed", before.Name)
	g.Expect(now.Spec).To(Equal(before.Spec), before.Name)
	g.Expect(now.Annotations).To(Equal(before.Annotations), before.Name)
}

func gaugeSpec(prefix string, slots ...any) map[string]any {
	return map[string]any{"prefix": prefix, "kind": "Gauge", "description": "A gauge.", "slots": slots}
}

func slot(property string, required bool) map[string]any {
	return map[string]any{"property": property, "required": required}
}

func m(v any) map[string]any { out, _ := v.(map[string]any); return out }

// An AI client grows the metamodel: a Property, then a Class that uses it. The
// answers carry the Ready conditions, the property's schema, and the new create
// tool with its input schema, which tools/list then offers.
func TestDefineClassServesItsToolWithReadyAndInputSchema(t *testing.T) {
	g := NewWithT(t)
	acct, tok := newAccount(t, unique("author"), metamodelAuthor)
	cs := connect(t, mcpURL, tok, nil)
	prefix := unique("p")
	prop, cls := prefix+".depth", prefix+".gauge"
	deleteMetamodelAfter(t, []string{cls}, []string{prop})

	out := answer(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": prop,
		"spec": map[string]any{"range": "integer", "minimum": 0, "description": "How deep."}}))
	g.Expect(out).To(HaveKeyWithValue("created", true))
	g.Expect(out).To(HaveKeyWithValue("field", "depth"))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	g.Expect(m(out["schema"])).To(HaveKeyWithValue("type", "integer"))

	out = answer(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "spec": gaugeSpec(prefix, slot(prop, true))}))
	g.Expect(out).To(HaveKeyWithValue("created", true))
	g.Expect(out).To(HaveKeyWithValue("ident", prefix+"/Gauge"))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	own := "sandbar_class_" + prefix + "_Gauge"
	g.Expect(m(out["tool"])).To(HaveKeyWithValue("name", own), "%v", out)
	schema := m(m(out["tool"])["inputSchema"])
	g.Expect(m(schema["properties"])).To(HaveKey("depth"))
	g.Expect(m(m(schema["properties"])["depth"])).To(HaveKeyWithValue("type", "integer"))
	g.Expect(schema["required"]).To(Equal([]any{"depth"}))

	made, ok := classNamed(t, cls)
	g.Expect(ok).To(BeTrue())
	g.Expect(made.Annotations).To(HaveKeyWithValue(metav1alpha1.AnnotationDefinedBy, "default/"+acct.Name))
	// The answer comes once the tool is served: a client calls it at once.
	tools := listTools(t, cs)
	g.Expect(tools).To(HaveKey(own), "the define answer came before its tool was served")
	listed, _ := json.Marshal(tools[own].InputSchema)
	g.Expect(string(listed)).To(ContainSubstring(`"depth"`))

	// Defining it again as it is changes nothing and answers the same.
	again := answer(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "spec": gaugeSpec(prefix, slot(prop, true))}))
	g.Expect(again).To(HaveKeyWithValue("created", false))
	g.Expect(m(again["ready"])).To(HaveKeyWithValue("status", "True"))
	classUnchanged(t, made)
}

// dryRun validates with the API server and previews the Property's schema and the
// Class's tool, and writes nothing; what the API server refuses is refused the same.
func TestDefineDryRunWritesNothingAndPreviews(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, unique("author"), metamodelAuthor)
	cs := connect(t, mcpURL, tok, nil)
	prefix := unique("p")
	prop, cls := prefix+".depth", prefix+".gauge"
	deleteMetamodelAfter(t, []string{cls}, []string{prop})

	out := answer(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": prop, "dryRun": true,
		"spec": map[string]any{"range": "string", "enum": []any{"shallow", "deep"}}}))
	g.Expect(out).To(HaveKeyWithValue("dryRun", true))
	g.Expect(out).To(HaveKeyWithValue("valid", true))
	g.Expect(m(out["schema"])).To(HaveKeyWithValue("enum", ConsistOf("shallow", "deep")))
	_, exists := propertyNamed(t, prop)
	g.Expect(exists).To(BeFalse(), "a dry run writes nothing")

	// A class whose property does not exist yet: valid for the API server, but it
	// would not resolve.
	out = answer(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "dryRun": true, "spec": gaugeSpec(prefix, slot(prop, false))}))
	g.Expect(out).To(HaveKeyWithValue("valid", false))
	g.Expect(m(out["problem"])).To(HaveKeyWithValue("reason", metav1alpha1.ReasonUnknownProperty))
	g.Expect(out).NotTo(HaveKey("tool"))

	answer(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": prop, "spec": map[string]any{"range": "string", "enum": []any{"shallow", "deep"}}}))
	out = answer(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "dryRun": true, "spec": gaugeSpec(prefix, slot(prop, true))}))
	g.Expect(out).To(HaveKeyWithValue("dryRun", true))
	g.Expect(out).To(HaveKeyWithValue("valid", true))
	g.Expect(m(out["tool"])).To(HaveKeyWithValue("name", "sandbar_class_"+prefix+"_Gauge"))
	schema := m(m(out["tool"])["inputSchema"])
	g.Expect(m(m(schema["properties"])["depth"])).To(HaveKeyWithValue("enum", ConsistOf("shallow", "deep")))
	g.Expect(schema["required"]).To(Equal([]any{"depth"}))
	_, exists = classNamed(t, cls)
	g.Expect(exists).To(BeFalse(), "a dry run writes nothing")

	// The API server's rules apply: a kind must be UpperCamelCase, prefix meta is reserved.
	for _, spec := range []map[string]any{{"prefix": prefix, "kind": "gauge"}, {"prefix": "meta", "kind": "Gauge"}} {
		for _, dry := range []bool{true, false} {
			msg := refused(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "dryRun": dry, "spec": spec}))
			g.Expect(msg).To(And(ContainSubstring("the API server refused the Class "+cls), ContainSubstring("nothing was written")))
			_, exists = classNamed(t, cls)
			g.Expect(exists).To(BeFalse())
		}
	}
	msg := refused(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": prefix + ".bad", "spec": map[string]any{"range": "integer", "enum": []any{"1"}}}))
	g.Expect(msg).To(ContainSubstring("enum applies only to ranges string, keyword, uri and uuid"))
	_, exists = propertyNamed(t, prefix+".bad")
	g.Expect(exists).To(BeFalse())
}

// A new required slot on a class whose instances are stored is a breaking change: as
// the reconciler's guard would, define-class refuses it with the list and writes
// nothing; so does define-property for a type change of a slot a class uses. The
// dry run shows the same list.
func TestDefineRefusesABreakingChangeAndLeavesTheClass(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, unique("author"), metamodelAuthor)
	cs := connect(t, mcpURL, tok, nil)
	prefix := unique("p")
	depth, width, cls := prefix+".depth", prefix+".width", prefix+".gauge"
	deleteMetamodelAfter(t, []string{cls}, []string{depth, width})
	for _, p := range []string{depth, width} {
		answer(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": p, "spec": map[string]any{"range": "integer"}}))
	}
	out := answer(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "spec": gaugeSpec(prefix, slot(depth, false))}))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	before, _ := classNamed(t, cls)

	breaking := map[string]any{"confirm": true, "name": cls, "spec": gaugeSpec(prefix, slot(depth, false), slot(width, true))}
	msg := refused(t, callTool(t, cs, defineClass, breaking))
	g.Expect(msg).To(And(ContainSubstring("refused: the change to the Class "+cls+" is breaking"),
		ContainSubstring(`class `+cls+`: slot "width" becomes required`), ContainSubstring("Nothing was written"),
		ContainSubstring("allowBreakingChanges")))
	classUnchanged(t, before)

	breaking["dryRun"] = true
	out = answer(t, callTool(t, cs, defineClass, breaking))
	g.Expect(out).To(HaveKeyWithValue("valid", false))
	g.Expect(m(out["breakingChanges"])).To(HaveKeyWithValue(cls, []any{`slot "width" becomes required`}))
	classUnchanged(t, before)

	depthBefore, _ := propertyNamed(t, depth)
	msg = refused(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": depth, "spec": map[string]any{"range": "string"}}))
	g.Expect(msg).To(And(ContainSubstring("refused: the change to the Property "+depth),
		ContainSubstring(`class `+cls+`: slot "depth" changes type from integer to string`)))
	propertyUnchanged(t, depthBefore)
	classUnchanged(t, before)

	// A compatible change goes through: the new slot optional.
	out = answer(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "spec": gaugeSpec(prefix, slot(depth, false), slot(width, false))}))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	g.Expect(m(m(m(out["tool"])["inputSchema"])["properties"])).To(HaveKey("width"))
}

// "*" or a glob over the schema tools does not grant the define tools, though the
// account's Kubernetes identity may write Classes: the account's permissions must
// name them, and a read-only account never has them.
func TestDefineClassIsNotGrantedByGlobs(t *testing.T) {
	g := NewWithT(t)
	prefix := unique("p")
	cls := prefix + ".gauge"
	for _, globs := range [][]string{nil, {"*"}, {"sandbar_schema_*"}, {"sandbar.schema.*"}} {
		_, tok := newAccount(t, unique("globber"), metav1alpha1.Permissions{Tools: globs})
		cs := connect(t, mcpURL, tok, nil)
		tools := listTools(t, cs)
		g.Expect(tools).NotTo(HaveKey(defineClass), "globs %v", globs)
		g.Expect(tools).NotTo(HaveKey(defineProperty), "globs %v", globs)
		g.Expect(callTool(t, cs, "sandbar_schema_classes", nil).IsError).To(BeFalse(), "globs %v grant the other schema tools", globs)
		msg := refused(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "spec": gaugeSpec(prefix)}))
		g.Expect(msg).To(ContainSubstring(`the tool "sandbar_schema_define-class" is granted only by name: no glob such as "*" allows it`))
		msg = refused(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": prefix + ".depth", "spec": map[string]any{"range": "integer"}}))
		g.Expect(msg).To(ContainSubstring("granted only by name"))
		_, exists := classNamed(t, cls)
		g.Expect(exists).To(BeFalse(), "globs %v: nothing was defined", globs)
		_, exists = propertyNamed(t, prefix+".depth")
		g.Expect(exists).To(BeFalse(), "globs %v: nothing was defined", globs)
	}

	_, tok := newAccount(t, unique("reader"), metav1alpha1.Permissions{Tools: []string{defineClass, defineProperty}, ReadOnly: true})
	tools := listTools(t, connect(t, mcpURL, tok, nil))
	g.Expect(tools).NotTo(HaveKey(defineClass), "a read-only account never has it")
	g.Expect(tools).NotTo(HaveKey(defineProperty), "a read-only account never has it")

	_, tok = newAccount(t, unique("dotted"), metav1alpha1.Permissions{Tools: []string{"sandbar.schema.define-class"}})
	tools = listTools(t, connect(t, mcpURL, tok, nil))
	g.Expect(tools).To(HaveKey(defineClass), "the dotted name grants it too")
	g.Expect(tools).NotTo(HaveKey(defineProperty))
	g.Expect(tools[defineClass].Annotations.ReadOnlyHint).To(BeFalse())
	g.Expect(tools[defineClass].Annotations.IdempotentHint).To(BeTrue())
	g.Expect(*tools[defineClass].Annotations.DestructiveHint).To(BeTrue(), "it changes what exists")
}

// An account granted the tools by name, whose Kubernetes identity may read but not
// create Classes and Properties, is refused by the API server, in its words, and
// nothing is created.
func TestDefineWithoutRBACOnTheMetamodelIsForbidden(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tn := newTenant(t, metamodelAuthor)
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: unique("metamodel-reader")},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{metav1alpha1.GroupVersion.Group}, Resources: []string{"classes", "properties"},
			Verbs: []string{"get", "list", "watch"}}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: reader.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: tn.namespace}}}
	for _, o := range []client.Object{reader, crb} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	cs := connect(t, mcpURL, tn.token, nil)
	prefix := unique("p")
	cls, prop := prefix+".gauge", prefix+".depth"
	deleteMetamodelAfter(t, []string{cls}, []string{prop})
	// Its permissions grant the define tools beside "*" (not listed: its toolsets
	// are core). RBAC decisions are cached for a few seconds: the binding above may
	// not be seen at once (until then the read is refused, and nothing is created).
	g.Eventually(func() string {
		return refused(t, callTool(t, cs, defineClass, map[string]any{"confirm": true, "name": cls, "spec": gaugeSpec(prefix)}))
	}).WithTimeout(timeout).WithPolling(poll).Should(And(HavePrefix("forbidden: "),
		ContainSubstring(`cannot create resource "classes" in API group "meta.sandbar.dev"`),
		ContainSubstring("system:serviceaccount:"+tn.namespace+":agent")))
	_, exists := classNamed(t, cls)
	g.Expect(exists).To(BeFalse(), "nothing was created")

	msg := refused(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": prop, "spec": map[string]any{"range": "integer"}}))
	g.Expect(msg).To(And(HavePrefix("forbidden: "), ContainSubstring(`cannot create resource "properties"`)))
	_, exists = propertyNamed(t, prop)
	g.Expect(exists).To(BeFalse(), "nothing was created")
}

// An account cannot change, through the define tools, a Class or Property an admin
// made with kubectl, or one another account made; it stays as it was.
func TestDefineCannotChangeAKubectlMadeClass(t *testing.T) {
	g := NewWithT(t)
	owner, ownerTok := newAccount(t, unique("owner"), metamodelAuthor)
	_, otherTok := newAccount(t, unique("other"), metamodelAuthor)
	mine, other := connect(t, mcpURL, ownerTok, nil), connect(t, mcpURL, otherTok, nil)

	boot, _ := classNamed(t, "zorp.spaceboot")
	spec := map[string]any{"prefix": "zorp", "kind": "SpaceBoot", "description": "Mine now.", "parents": []any{"zorp.footwear"}}
	msg := refused(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": "zorp.spaceboot", "spec": spec}))
	g.Expect(msg).To(And(ContainSubstring("forbidden: the Class zorp.spaceboot was not defined through MCP (an admin made it with kubectl or Helm)"),
		ContainSubstring("choose another name, or ask a cluster admin")))
	refused(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": "zorp.spaceboot", "spec": spec, "dryRun": true}))
	classUnchanged(t, boot)

	name, _ := propertyNamed(t, "footwear.name")
	msg = refused(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": "footwear.name", "spec": map[string]any{"range": "integer"}}))
	g.Expect(msg).To(ContainSubstring("forbidden: the Property footwear.name was not defined through MCP"))
	propertyUnchanged(t, name)

	prefix := unique("p")
	cls := prefix + ".base"
	deleteMetamodelAfter(t, []string{cls}, nil)
	abstract := map[string]any{"prefix": prefix, "kind": "Base", "abstract": true}
	out := answer(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": cls, "spec": abstract}))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	g.Expect(out).NotTo(HaveKey("tool"), "an abstract class has no create tool")
	made, _ := classNamed(t, cls)
	abstract["description"] = "Hijacked."
	msg = refused(t, callTool(t, other, defineClass, map[string]any{"confirm": true, "name": cls, "spec": abstract}))
	g.Expect(msg).To(And(ContainSubstring("forbidden: the Class "+cls+" was defined by the account default/"+owner.Name),
		ContainSubstring("ask the owner")))
	classUnchanged(t, made)

	abstract["description"] = "Still the owner's."
	answer(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": cls, "spec": abstract}))
	changed, _ := classNamed(t, cls)
	g.Expect(changed.Spec.Description).To(Equal("Still the owner's."))
}

// A Property whose ref target does not exist is written, and the answer is the
// Ready condition that says what is wrong.
func TestDefinePropertyAnswersTheConditionThatSaysWhatIsWrong(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, unique("author"), metamodelAuthor)
	cs := connect(t, mcpURL, tok, nil)
	prop := unique("p") + ".wearer"
	deleteMetamodelAfter(t, nil, []string{prop})
	out := answer(t, callTool(t, cs, defineProperty, map[string]any{"confirm": true, "name": prop, "spec": map[string]any{"range": "ref", "target": "zorp.nobody"}}))
	g.Expect(out).To(HaveKeyWithValue("created", true))
	g.Expect(m(out["problem"])).To(HaveKeyWithValue("reason", metav1alpha1.ReasonUnknownClass))
	g.Expect(m(out["ready"])).To(And(HaveKeyWithValue("status", "False"), HaveKeyWithValue("reason", metav1alpha1.ReasonUnknownClass)), "%v", out)
	_, exists := propertyNamed(t, prop)
	g.Expect(exists).To(BeTrue())
}

// A Property's author cannot rewrite, through it, the Classes of other owners that use
// it: once a Class of another account (or an admin's) has it as a slot, a change to
// it is refused with those classes and their owners, even one the breaking-change
// guard would let through, and their create tools stay as they were. A Property only
// its author's own Classes use, it still changes; defining one again as it is changes
// nothing.
func TestDefinePropertyCannotRewriteAnotherOwnersClass(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, authorTok := newAccount(t, unique("author"), metamodelAuthor)
	user, userTok := newAccount(t, unique("user"), metamodelAuthor)
	mine, theirs := connect(t, mcpURL, authorTok, nil), connect(t, mcpURL, userTok, nil)
	prefix := unique("p")
	shared, own, adminUsed := prefix+".depth", prefix+".width", prefix+".height"
	meter, gauge, dial := prefix+".meter", prefix+".gauge", prefix+".dial"
	deleteMetamodelAfter(t, []string{meter, gauge, dial}, []string{shared, own, adminUsed})

	integer := map[string]any{"range": "integer", "description": "A count."}
	for _, p := range []string{shared, own, adminUsed} {
		answer(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": p, "spec": integer}))
	}
	out := answer(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": meter,
		"spec": map[string]any{"prefix": prefix, "kind": "Meter", "slots": []any{slot(shared, false), slot(own, false)}}}))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	out = answer(t, callTool(t, theirs, defineClass, map[string]any{"confirm": true, "name": gauge, "spec": gaugeSpec(prefix, slot(shared, true))}))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	admins := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: dial},
		Spec: metav1alpha1.ClassSpec{Prefix: prefix, Kind: "Dial", Slots: []metav1alpha1.SlotRef{{Property: adminUsed}}}}
	g.Expect(k8s.Create(ctx, admins)).To(Succeed())
	g.Eventually(func() bool { c := store.Load().Classes[dial]; return c != nil && c.Ready }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the admin's class is served")

	gaugeTool := "sandbar_class_" + prefix + "_Gauge"
	schemaOf := func(cs *mcp.ClientSession, name string) string {
		tools := listTools(t, cs)
		g.Expect(tools).To(HaveKey(name))
		b, _ := json.Marshal(tools[name].InputSchema)
		return string(b)
	}
	before := schemaOf(theirs, gaugeTool)
	sharedBefore, _ := propertyNamed(t, shared)
	gaugeBefore, _ := classNamed(t, gauge)

	// A constraint and a description: not breaking, yet they rewrite the other
	// account's create tool.
	rewrite := map[string]any{"range": "integer", "maximum": 3, "description": "Rewritten."}
	for _, dry := range []bool{false, true} {
		msg := refused(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": shared, "spec": rewrite, "dryRun": dry}))
		g.Expect(msg).To(And(HavePrefix("forbidden: the Property "+shared+" is used by classes of other owners"),
			ContainSubstring(gauge+" (the account default/"+user.Name+")"),
			ContainSubstring("Nothing was written"), ContainSubstring("Define a new Property")), "dryRun %v", dry)
		g.Expect(msg).NotTo(ContainSubstring(meter), "the author's own class is not in the way")
	}
	// A breaking change is refused for the same reason, before the guard's list.
	msg := refused(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": shared, "spec": map[string]any{"range": "string"}}))
	g.Expect(msg).To(HavePrefix("forbidden: the Property " + shared + " is used by classes of other owners"))
	propertyUnchanged(t, sharedBefore)
	classUnchanged(t, gaugeBefore)
	g.Consistently(func() string { return schemaOf(theirs, gaugeTool) }).WithTimeout(time.Second).WithPolling(200*time.Millisecond).
		Should(Equal(before), "the other account's create tool is as it was")

	// An admin's class counts as another owner's.
	adminUsedBefore, _ := propertyNamed(t, adminUsed)
	msg = refused(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": adminUsed, "spec": rewrite}))
	g.Expect(msg).To(And(HavePrefix("forbidden: the Property "+adminUsed+" is used by classes of other owners"),
		ContainSubstring(dial+" (made by an admin with kubectl or Helm)")))
	propertyUnchanged(t, adminUsedBefore)

	// Defined again as it is, it changes nothing, and the call succeeds.
	out = answer(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": shared, "spec": integer}))
	g.Expect(out).To(HaveKeyWithValue("created", false))
	propertyUnchanged(t, sharedBefore)

	// A Property only the author's own classes use still changes, and so do their tools.
	out = answer(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": own, "spec": map[string]any{"range": "integer", "maximum": 5}}))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	changed, _ := propertyNamed(t, own)
	g.Expect(changed.Spec.Maximum).NotTo(BeNil())
	g.Eventually(func() string { return schemaOf(mine, "sandbar_class_"+prefix+"_Meter") }).WithTimeout(timeout).WithPolling(poll).
		Should(ContainSubstring(`"maximum":5`))
}

// An account cannot rewrite, through a Class of its own, the subclasses another
// owner made of it: a change to a parent changes every subclass's slots, create
// tool and instance API, which only their owners may change. Defined again as it
// is, the parent is taken; a Class no other owner inherits from still changes.
func TestDefineClassCannotRewriteAnotherOwnersSubclass(t *testing.T) {
	g := NewWithT(t)
	_, authorTok := newAccount(t, unique("author"), metamodelAuthor)
	user, userTok := newAccount(t, unique("user"), metamodelAuthor)
	mine, theirs := connect(t, mcpURL, authorTok, nil), connect(t, mcpURL, userTok, nil)
	prefix := unique("c")
	width, depth := prefix+".width", prefix+".depth"
	base, sub, alone := prefix+".base", prefix+".sub", prefix+".alone"
	deleteMetamodelAfter(t, []string{sub, base, alone}, []string{width, depth})

	integer := map[string]any{"range": "integer", "description": "A count."}
	for _, p := range []string{width, depth} {
		answer(t, callTool(t, mine, defineProperty, map[string]any{"confirm": true, "name": p, "spec": integer}))
	}
	baseSpec := map[string]any{"prefix": prefix, "kind": "Base", "abstract": true, "slots": []any{slot(width, false)}}
	answer(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": base, "spec": baseSpec}))
	out := answer(t, callTool(t, theirs, defineClass, map[string]any{"confirm": true, "name": sub,
		"spec": map[string]any{"prefix": prefix, "kind": "Sub", "parents": []any{base}, "slots": []any{slot(depth, false)}}}))
	g.Expect(m(out["ready"])).To(HaveKeyWithValue("status", "True"), "%v", out)
	baseBefore, _ := classNamed(t, base)
	subBefore, _ := classNamed(t, sub)

	for _, dry := range []bool{false, true} {
		msg := refused(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": base, "dryRun": dry,
			"spec": map[string]any{"prefix": prefix, "kind": "Base", "abstract": true, "slots": []any{slot(width, true)}}}))
		g.Expect(msg).To(And(HavePrefix("forbidden: the Class "+base+" is inherited by classes of other owners"),
			ContainSubstring(sub+" (the account default/"+user.Name+")"), ContainSubstring("Nothing was written")), "dryRun %v", dry)
	}
	classUnchanged(t, baseBefore)
	classUnchanged(t, subBefore)

	out = answer(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": base, "spec": baseSpec}))
	g.Expect(out).To(HaveKeyWithValue("created", false))
	classUnchanged(t, baseBefore)

	aloneSpec := map[string]any{"prefix": prefix, "kind": "Alone", "slots": []any{slot(width, false)}}
	answer(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": alone, "spec": aloneSpec}))
	aloneSpec["slots"] = []any{slot(width, false), slot(depth, false)}
	out = answer(t, callTool(t, mine, defineClass, map[string]any{"confirm": true, "name": alone, "spec": aloneSpec}))
	g.Expect(out).To(HaveKeyWithValue("created", false))
	changed, _ := classNamed(t, alone)
	g.Expect(changed.Spec.Slots).To(HaveLen(2))
}
