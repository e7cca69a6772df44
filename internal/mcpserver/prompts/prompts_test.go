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

package prompts_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
)

// Each workflow of the samples is a prompt with its arguments, and the prompt says
// how to start and move a process of it, in the served tool names; at both
// revisions, through a go-sdk client.
func TestWorkflowsArePrompts(t *testing.T) {
	s := mcptest.Shared(t)
	for _, revision := range []string{mcptest.SessionRevision, mcptest.StatelessRevision} {
		t.Run(revision, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			cs := s.Client(t, revision)

			list, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{})
			g.Expect(err).NotTo(HaveOccurred())
			byName := map[string]*mcp.Prompt{}
			for _, p := range list.Prompts {
				byName[p.Name] = p
			}
			g.Expect(byName).To(HaveKey("sandbar_workflow_order_fulfillment"))
			order := byName["sandbar_workflow_order_fulfillment"]
			g.Expect(order.Description).To(ContainSubstring("Takes an order from placement to delivery"))
			g.Expect(order.Arguments).To(ConsistOf(HaveField("Name", "order")))
			g.Expect(order.Arguments[0].Required).To(BeTrue())

			res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sandbar_workflow_order_fulfillment", Arguments: map[string]string{"order": "ord-9"}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Messages).NotTo(BeEmpty())
			text := res.Messages[0].Content.(*mcp.TextContent).Text
			for _, want := range []string{
				"call `sandbar_workflow_start-process` with " +
					`{"input":{"order":"ord-9"},"subject":{"class":"order/Order","name":"<instance name>"},"workflow":"order.fulfillment"}`,
				"it starts in `pending`",
				"- `confirm`: from `pending` to `confirmed`",
				"- `cancel`: from `pending` or `confirmed` to `cancelled`",
			} {
				g.Expect(text).To(ContainSubstring(want))
			}

			_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sandbar_workflow_no_such"})
			g.Expect(err).To(HaveOccurred(), "an unknown prompt is an error")
		})
	}
}
