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
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/testenv"
	"github.com/sandbar-dev/sandbar/internal/testenv/faults"
)

// statelessThroughReplicas starts a second replica of the manager (the first is at
// first) and puts both behind a balancer without affinity: a client of the stateless
// revision 2026-07-28 lists, creates, reads what it created and follows a task to
// its end through whichever replica each request reaches. args start the second
// replica as the first was started, but for its addresses.
func statelessThroughReplicas(t *testing.T, c client.Client, manager string, args []string, log *os.File, first, token, namespace string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	mcpAddr, probeAddr := freeAddr(t), freeAddr(t)
	second := exec.Command(manager, append(args, "--mcp-bind-address="+mcpAddr, "--health-probe-bind-address="+probeAddr,
		"--metrics-bind-address=0")...)
	second.Stdout, second.Stderr = log, log
	g.Expect(second.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = second.Process.Signal(os.Interrupt)
		_ = second.Wait()
	})
	secondURL := "http://" + mcpAddr + "/mcp"
	waitForMCP(t, secondURL, token)
	// A replica answers as soon as its catalog has the account, and serves the
	// catalog's tools a moment after: wait for the class's tool on the second replica
	// itself before the client goes through both.
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "sandbar-e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: secondURL, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: testenv.Bearer{Token: token}}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() []*mcp.Tool {
		tools, err := direct.ListTools(ctx, nil)
		if err != nil {
			return nil
		}
		return tools.Tools
	}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(ContainElement(HaveField("Name", "sandbar_class_zorp_SpaceBoot")),
		"the second replica serves the class's tool")
	_ = direct.Close()

	lb, stop, err := faults.Balance(first, secondURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer stop()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandbar-e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: lb, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: testenv.Bearer{Token: token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cs.Close() }()
	g.Expect(cs.InitializeResult().ProtocolVersion).To(Equal("2026-07-28"))

	for i := range 4 {
		tools, err := cs.ListTools(ctx, nil)
		g.Expect(err).NotTo(HaveOccurred(), "tools/list #%d", i)
		g.Expect(tools.Tools).To(ContainElement(HaveField("Name", "sandbar_class_zorp_SpaceBoot")), "tools/list #%d", i)
	}
	call := func(name string, args map[string]any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(res.IsError).To(BeFalse(), "%s: %s", name, resultText(res))
		out, _ := res.StructuredContent.(map[string]any)
		return out
	}
	for i := range 4 {
		call("sandbar_class_zorp_SpaceBoot", map[string]any{"name": fmt.Sprintf("Balanced %d", i),
			"metadata": map[string]any{"name": fmt.Sprintf("balanced-%d", i)}})
	}
	for i := range 4 {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("zorp.sandbar.dev/v1")
		u.SetKind("SpaceBoot")
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("balanced-%d", i)}, u)).To(Succeed(),
			"each create made one object, whichever replica took it")
	}
	started := call("sandbar_project_export", map[string]any{"class": "zorp/SpaceBoot"})
	taskID, _ := started["taskId"].(string)
	g.Expect(taskID).NotTo(BeEmpty(), "%v", started)
	g.Eventually(func() any {
		task, _ := call("sandbar_tasks_get", map[string]any{"taskId": taskID})["task"].(map[string]any)
		return task["status"]
	}).WithTimeout(timeout).WithPolling(500*time.Millisecond).Should(Equal("completed"), "the task, read on either replica")
	result := call("sandbar_tasks_result", map[string]any{"taskId": taskID})
	g.Expect(fmt.Sprint(result)).To(ContainSubstring("balanced-3"), "the export's result, read on either replica")
}
