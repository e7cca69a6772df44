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

package e2e_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// exportThroughMCP exports a class through the manager with an account's token and
// waits for the process to succeed: the manager's own built-in processes pass the
// admission policy.
func exportThroughMCP(t *testing.T, c client.Client, url, token, namespace, class string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	cl := mcp.NewClient(&mcp.Implementation{Name: "sandbar-e2e", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: testenv.Bearer{Token: token}}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbar_project_export", Arguments: map[string]any{"class": class}})
	g.Expect(err).NotTo(HaveOccurred())
	out, _ := res.StructuredContent.(map[string]any)
	g.Expect(res.IsError).To(BeFalse(), "%s", resultText(res))
	taskID, _ := out["taskId"].(string)
	g.Expect(taskID).NotTo(BeEmpty(), "%v", out)
	g.Eventually(func() metav1alpha1.ProcessPhase {
		var p metav1alpha1.WorkflowProcess
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: taskID}, &p); err != nil {
			return ""
		}
		return p.Status.Phase
	}).WithTimeout(timeout).Should(Equal(metav1alpha1.PhaseSucceeded))
}

// resultText is the text of a tool result, for failure messages.
func resultText(res *mcp.CallToolResult) string {
	out := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out += t.Text
		}
	}
	return out
}
