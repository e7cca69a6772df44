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
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

// Whatever an instance holds, credentials do not leave the server: not the server's
// own tokens, not key hashes, not common key formats.
func TestCredentialsAreRedacted(t *testing.T) {
	g := NewWithT(t)
	hash, _ := bcrypt.GenerateFromPassword([]byte("k"), bcrypt.MinCost)
	secrets := []string{
		token,
		string(hash),
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
		"AKIAIOSFODNN7EXAMPLE",
		"ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	}
	order := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"number": "ORD-42", "customer": "leaky " + secrets[0],
		"notes": map[string]any{"hash": secrets[1], "pem": secrets[2], "list": []any{secrets[3], secrets[4]}, "jwt": secrets[5]},
	}}}
	order.SetAPIVersion("order.sandbar.dev/v1")
	order.SetKind("Order")
	order.SetNamespace("default")
	order.SetName("leaky")
	g.Expect(k8s.Create(context.Background(), order)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), order) })

	cs := connect(t, mcpURL, token, nil)
	res := findSeeing(t, cs, map[string]any{"class": "order/Order", "name": "leaky"}, "ORD-42")
	g.Expect(res.IsError).To(BeFalse(), text(res))
	out := text(res)
	g.Expect(out).To(ContainSubstring("ORD-42"))
	g.Expect(out).To(ContainSubstring(redact.Redacted))
	structured, _ := res.StructuredContent.(map[string]any)
	g.Expect(structured).NotTo(BeNil())

	var read *mcp.ReadResourceResult
	g.Eventually(func() error {
		var err error
		read, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.InstanceURI("order", "Order", "default", "leaky")})
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	for _, s := range secrets {
		for _, where := range []string{out, read.Contents[0].Text, fmtJSON(structured)} {
			for _, line := range strings.Split(s, "\n") {
				g.Expect(where).NotTo(ContainSubstring(line))
			}
		}
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// leakedToken is a token in the format the server issues, planted where a client
// must never read it; its key is what the assertions look for.
func leakedToken(t *testing.T) (tok, key string) {
	t.Helper()
	key, _, err := apikey.Generate()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return apikey.Format("vault", key), key
}

// noKey asserts that what a client received has no trace of the key and says
// that something was redacted.
func noKey(g Gomega, key string, received any, what string) {
	s, ok := received.(string)
	if !ok {
		s = fmtJSON(received)
	}
	g.Expect(s).NotTo(ContainSubstring(key), "%s carries the planted key", what)
	g.Expect(s).To(ContainSubstring(redact.Redacted), "%s says what it redacted", what)
}

// A description, an enum value or a state description that a user writes into a
// Property, Class or WorkflowDefinition is served in many places: every list and
// every structured result that shows it says [REDACTED] instead of a credential.
func TestCredentialsInMetamodelTextsAreRedacted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	leak, key := leakedToken(t)
	prop := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: "vaultleak.code"}, Spec: metav1alpha1.PropertySpec{
		Range: metav1alpha1.RangeString, Description: "The door code; the old one was " + leak + " until it leaked.",
		Enum: []string{"red", leak},
	}}
	vault := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: "vaultleak.vault"}, Spec: metav1alpha1.ClassSpec{
		Prefix: "vaultleak", Kind: "Vault", Description: "Keeps the spare key " + leak + " safe.",
		Slots: []metav1alpha1.SlotRef{{Property: "vaultleak.code", Required: true}},
	}}
	wd := &metav1alpha1.WorkflowDefinition{ObjectMeta: metav1.ObjectMeta{Name: "vaultleak.rotate"}, Spec: metav1alpha1.WorkflowDefinitionSpec{
		Description: "Rotates " + leak + " every month.", SubjectClass: "vaultleak.vault", Initial: "open",
		States:      []metav1alpha1.WorkflowState{{Name: "open", Description: "Waiting; the key is " + leak}, {Name: "done", Terminal: metav1alpha1.TerminalSuccess}},
		Transitions: []metav1alpha1.WorkflowTransition{{Name: "finish", From: []string{"open"}, To: "done"}},
		Arguments:   []metav1alpha1.WorkflowArgument{{Name: "vault", Description: "The vault that holds " + leak, Required: true}},
	}}
	for _, o := range []client.Object{prop, vault, wd} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{wd, vault, prop} {
			_ = k8s.Delete(ctx, o)
		}
	})
	cs := connect(t, mcpURL, token, nil)

	t.Run("tool descriptions and input schemas in tools/list", func(t *testing.T) {
		g := NewWithT(t)
		var tools map[string]*mcp.Tool
		g.Eventually(func() map[string]*mcp.Tool { tools = listTools(t, cs); return tools }).
			WithTimeout(timeout).WithPolling(poll).Should(HaveKey("sandbar_class_vaultleak_Vault"))
		noKey(g, key, tools, "tools/list")
		g.Expect(tools["sandbar_class_vaultleak_Vault"].Description).To(ContainSubstring("Keeps the spare key " + redact.Redacted + " safe."))
		g.Expect(fmtJSON(tools["sandbar_class_vaultleak_Vault"].InputSchema)).To(ContainSubstring(`"red"`))
	})
	t.Run("descriptions in resources/list and resources/templates/list", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() string { return fmtJSON(listResources(t, cs)) }).WithTimeout(timeout).WithPolling(poll).
			Should(And(ContainSubstring("Keeps the spare key "+redact.Redacted), ContainSubstring("Rotates "+redact.Redacted),
				ContainSubstring("the old one was "+redact.Redacted)))
		noKey(g, key, listResources(t, cs), "resources/list")
		var templates []*mcp.ResourceTemplate
		for tpl, err := range cs.ResourceTemplates(ctx, nil) {
			g.Expect(err).NotTo(HaveOccurred())
			templates = append(templates, tpl)
		}
		g.Expect(fmtJSON(templates)).NotTo(ContainSubstring(key))
	})
	t.Run("descriptions in prompts/list and prompts/get", func(t *testing.T) {
		g := NewWithT(t)
		var prompts []*mcp.Prompt
		g.Eventually(func() string {
			prompts = nil
			for p, err := range cs.Prompts(ctx, nil) {
				if err == nil {
					prompts = append(prompts, p)
				}
			}
			return fmtJSON(prompts)
		}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("sandbar_workflow_vaultleak_rotate"))
		noKey(g, key, prompts, "prompts/list")
		got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sandbar_workflow_vaultleak_rotate", Arguments: map[string]string{"vault": "v1"}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fmtJSON(got)).NotTo(ContainSubstring(key))
		g.Expect(fmtJSON(got)).To(ContainSubstring("v1"))
	})
	t.Run("string lists and typed structs in structured results", func(t *testing.T) {
		g := NewWithT(t)
		var res *mcp.CallToolResult
		g.Eventually(func() bool {
			res = callTool(t, cs, "sandbar_class_describe", map[string]any{"class": "vaultleak/Vault"})
			return res.IsError
		}).WithTimeout(timeout).WithPolling(poll).Should(BeFalse())
		noKey(g, key, res.StructuredContent, "class.describe (slot enum)")
		g.Expect(fmtJSON(res.StructuredContent)).To(ContainSubstring(`"red"`))
		g.Expect(text(res)).NotTo(ContainSubstring(key))

		res = callTool(t, cs, "sandbar_workflow_find", nil)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		noKey(g, key, res.StructuredContent, "workflow.find (state descriptions)")
		g.Expect(fmtJSON(res.StructuredContent)).To(ContainSubstring("Waiting; the key is " + redact.Redacted))
	})
}

// Labels are served as a map of strings: a credential in one is redacted too. A
// label value cannot hold a Sandbar token (no colon), so a GitHub token stands in.
func TestCredentialsInInstanceLabelsAreRedacted(t *testing.T) {
	g := NewWithT(t)
	gh := "ghp_" + strings.Repeat("aB3", 12)
	name := unique("labelled")
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "Labelled"}}}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	u.SetNamespace("default")
	u.SetName(name)
	u.SetLabels(map[string]string{"ci-token": gh, "team": "boots"})
	g.Expect(k8s.Create(context.Background(), u)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })

	cs := connect(t, mcpURL, token, nil)
	var res *mcp.CallToolResult
	g.Eventually(func() string {
		res = callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "name": name})
		return text(res)
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("boots"))
	noKey(g, gh, res.StructuredContent, "entity.find structuredContent")
	g.Expect(fmtJSON(res.StructuredContent)).To(ContainSubstring(`"team":"boots"`))
	g.Expect(text(res)).NotTo(ContainSubstring(gh))
}

// A process's progress message or status message reaches clients as a task's
// statusMessage (tasks/get, tasks/list, sandbar_tasks_get) and as
// notifications/progress: none of them carries a credential.
func TestCredentialsInTaskStatusAndProgressAreRedacted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	leak, key := leakedToken(t)
	progress := make(chan *mcp.ProgressNotificationParams, 64)
	cs := connect(t, mcpURL, token, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
	})
	params := &mcp.CallToolParams{Name: "sandbar_workflow_start-process", Arguments: map[string]any{
		"workflow": "order.fulfillment"}}
	params.SetProgressToken("leaky-progress")
	res, err := cs.CallTool(ctx, params)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsError).To(BeFalse(), text(res))
	id, _ := res.StructuredContent.(map[string]any)["taskId"].(string)
	g.Expect(id).To(HavePrefix("task-"))
	raw := newRawSession(t, mcpURL, token)
	t.Cleanup(func() { raw.task("tasks/cancel", id) })

	// What a job writes while it works.
	var p metav1alpha1.WorkflowProcess
	g.Eventually(func() string {
		_ = k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: id}, &p)
		return string(p.Status.Phase)
	}).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: id}, &p); err != nil {
			return err
		}
		p.Status.Progress = &metav1alpha1.Progress{Done: 1, Total: 3, Message: "copying with " + leak}
		return k8s.Status().Update(ctx, &p)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	var got *mcp.ProgressNotificationParams
	g.Eventually(func() string {
		select {
		case got = <-progress:
			return got.Message
		default:
			return ""
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(HavePrefix("copying with "))
	g.Expect(got.Message).To(Equal("copying with " + redact.Redacted))
	g.Expect(got.Progress).To(Equal(1.0))

	task, rpcErr := raw.task("tasks/get", id)
	g.Expect(rpcErr).To(BeNil())
	g.Expect(task["statusMessage"]).To(Equal("copying with " + redact.Redacted))
	list, rpcErr := raw.task("tasks/list", "")
	g.Expect(rpcErr).To(BeNil())
	noKey(g, key, list, "tasks/list")
	res = callTool(t, cs, "sandbar_tasks_get", map[string]any{"taskId": id})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	noKey(g, key, res.StructuredContent, "sandbar_tasks_get structuredContent")
	g.Expect(text(res)).NotTo(ContainSubstring(key))
}

// JSON-RPC errors echo what the client sent (a tool name, a task id, a URI) and
// what a handler found: their messages are redacted as results are, whichever
// middleware made them, and keep their codes.
func TestCredentialsInErrorMessagesAreRedacted(t *testing.T) {
	g := NewWithT(t)
	leak, key := leakedToken(t)
	raw := newRawSession(t, mcpURL, token)
	for _, c := range []struct {
		method string
		params map[string]any
		code   int64
	}{
		{"tools/call", map[string]any{"name": "use " + leak, "arguments": map[string]any{}}, -32602},
		{"tasks/get", map[string]any{"taskId": leak}, -32602},
		{"tasks/result", map[string]any{"taskId": leak}, -32602},
		{"prompts/get", map[string]any{"name": leak}, -32602},
	} {
		res := raw.call(c.method, c.params)
		g.Expect(res.Error).NotTo(BeNil(), c.method)
		g.Expect(res.Error.Code).To(Equal(c.code), c.method)
		noKey(g, key, res.Error.Message, c.method+" error")
		g.Expect(string(res.Error.Data)).NotTo(ContainSubstring(key))
	}
}
