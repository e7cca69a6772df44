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
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

// A workflow's prompt names the tools, in the served name style, and the arguments
// that start a process and move it; following it word for word works.
func TestWorkflowPromptSaysHowToStartAndMoveAProcess(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cs := connect(t, mcpURL, token, nil)
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sandbar_workflow_order_fulfillment", Arguments: map[string]string{"order": "ord-9"}})
	g.Expect(err).NotTo(HaveOccurred())
	prompt := res.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{
		"call `sandbar_workflow_start-process` with " +
			`{"input":{"order":"ord-9"},"subject":{"class":"order/Order","name":"<instance name>"},"workflow":"order.fulfillment"}`,
		"it starts in `pending`",
		"call `sandbar_workflow_transition` with " + `{"taskId":"<taskId>","transition":"<transition>"}`,
		"- `confirm`: from `pending` to `confirmed`",
		"- `cancel`: from `pending` or `confirmed` to `cancelled`",
		"call `sandbar_workflow_process-state` with " + `{"taskId":"<taskId>"}`,
		"To create one, call `sandbar_class_order_Order` with " + `{"customer":"<customer>","metadata":{"name":"<instance name>"},"number":"<number>"}`,
	} {
		g.Expect(prompt).To(ContainSubstring(want))
	}

	// Doing what it says starts a process and moves it.
	started := callTool(t, cs, "sandbar_workflow_start-process", map[string]any{
		"workflow": "order.fulfillment", "input": map[string]any{"order": "ord-9"}})
	g.Expect(started.IsError).To(BeFalse(), text(started))
	taskID, _ := started.StructuredContent.(map[string]any)["taskId"].(string)
	g.Expect(taskID).NotTo(BeEmpty(), text(started))
	moved := callTool(t, cs, "sandbar_workflow_transition", map[string]any{"taskId": taskID, "transition": "confirm", "reason": "as the prompt says"})
	g.Expect(moved.IsError).To(BeFalse(), text(moved))
	g.Expect(text(moved)).To(ContainSubstring("confirmed"))

	// A server with dotted names spells them so in the prompt.
	dotted := connect(t, serve(t, mcpserver.Options{NameStyle: mcpserver.StyleDotted}), token, nil)
	res, err = dotted.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sandbar.workflow.order.fulfillment", Arguments: map[string]string{"order": "ord-9"}})
	g.Expect(err).NotTo(HaveOccurred())
	prompt = res.Messages[0].Content.(*mcp.TextContent).Text
	g.Expect(prompt).To(ContainSubstring("call `sandbar.workflow.start-process` with {"))
	g.Expect(prompt).To(ContainSubstring("call `sandbar.workflow.transition` with {"))
	g.Expect(prompt).NotTo(ContainSubstring("sandbar_"))
}
