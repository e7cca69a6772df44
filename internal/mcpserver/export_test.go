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
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// storedResultCap is the suite manager's --max-stored-result-bytes.
const storedResultCap = 8 << 20

// createInstances creates n instances of a zorp class in default, concurrently,
// through the API (not MCP: the test is about exporting them).
func createInstances(t *testing.T, kind string, n int, name func(i int) string, spec func(i int) map[string]any) {
	t.Helper()
	ctx := context.Background()
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				u := &unstructured.Unstructured{Object: map[string]any{"spec": spec(i)}}
				u.SetAPIVersion("zorp.sandbar.dev/v1")
				u.SetKind(kind)
				u.SetNamespace("default")
				u.SetName(name(i))
				if err := k8s.Create(ctx, u); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating %s instances: %v", kind, err)
	}
}

// startExport starts an export of a class through MCP and waits for its process to end.
func startExport(t *testing.T, cs *mcp.ClientSession, class string, wait time.Duration) *metav1alpha1.WorkflowProcess {
	t.Helper()
	g := NewWithT(t)
	res := callTool(t, cs, "sandbar_project_export", map[string]any{"class": class})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	id, _ := res.StructuredContent.(map[string]any)["taskId"].(string)
	g.Expect(id).To(HavePrefix("task-"))
	var p metav1alpha1.WorkflowProcess
	g.Eventually(func() metav1alpha1.ProcessPhase {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p); err != nil {
			return ""
		}
		return p.Status.Phase
	}).WithTimeout(wait).WithPolling(200*time.Millisecond).Should(Or(Equal(metav1alpha1.PhaseSucceeded), Equal(metav1alpha1.PhaseFailed)),
		func() string { return fmt.Sprintf("progress: %+v", p.Status.Progress) })
	return &p
}

// resultChunks are the Secrets that hold a process's stored result.
func resultChunks(t *testing.T, id string) []corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	NewWithT(t).Expect(k8s.List(context.Background(), &list, client.InNamespace("default"),
		client.MatchingLabels{builtin.LabelResultOf: id})).To(Succeed())
	return list.Items
}

// An export of 10,000 instances (several MiB, far past the 512 KiB a process's
// status may hold) completes; its WorkflowProcess stays small, the items sit in
// compressed chunks owned by the process (so that deleting it deletes them), and a
// client gets every one of them, page by page within the server's bounds, through
// sandbar_tasks_result, and again through tasks/result on another server that
// shares nothing with the first but the cluster.
func TestExportOf10000InstancesIsStoredOutsideTheProcessAndPagedInFull(t *testing.T) {
	g := NewWithT(t)
	const n = 10000
	kind := "Bulk" + strings.ToUpper(rand.String(4))
	zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString})
	field := strings.ToLower(kind)
	name := func(i int) string { return fmt.Sprintf("bulk-%05d", i) }
	createInstances(t, kind, n, name, func(i int) map[string]any {
		return map[string]any{field: fmt.Sprintf("%05d ", i) + strings.Repeat("lorem ipsum ", 40)}
	})

	const bytesBound, itemsBound = 64 << 10, 100
	url := serve(t, mcpserver.Options{MaxResultBytes: bytesBound, MaxResultItems: itemsBound})
	cs := connect(t, url, token, nil)
	p := startExport(t, cs, "zorp/"+kind, 2*time.Minute)
	g.Expect(p.Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded), p.Status.StatusMessage)
	g.Expect(p.Status.StatusMessage).To(ContainSubstring("exported 10000 instances"))

	// The process stays small: its status keeps a summary of the chunks.
	whole, _ := json.Marshal(p)
	g.Expect(len(whole)).To(BeNumerically("<", 16<<10), "the WorkflowProcess is %d bytes", len(whole))
	st := builtin.StoredOf(p.Status.Result.Raw)
	g.Expect(st).NotTo(BeNil())
	g.Expect(st.Count()).To(Equal(n))
	g.Expect(st.Bytes).To(BeNumerically(">", 4<<20), "the export is several MiB")
	g.Expect(st.StoredBytes).To(BeNumerically("<", st.Bytes), "compressed")
	g.Expect(len(st.Chunks)).To(BeNumerically(">=", 2))

	// Each chunk is a Secret owned by the process: the garbage collector deletes it
	// with the process (envtest runs no garbage collector, so the owner reference is
	// what is checked here).
	chunks := resultChunks(t, p.Name)
	g.Expect(chunks).To(HaveLen(len(st.Chunks)))
	for _, c := range chunks {
		g.Expect(c.Type).To(Equal(builtin.ResultChunkType))
		g.Expect(c.OwnerReferences).To(ConsistOf(And(
			HaveField("APIVersion", metav1alpha1.GroupVersion.String()), HaveField("Kind", "WorkflowProcess"),
			HaveField("Name", p.Name), HaveField("UID", p.UID))))
		g.Expect(len(c.Data["items.json.gz"])).To(BeNumerically("<=", 900<<10))
	}

	// Page by page through sandbar_tasks_result, each page within the bounds and not cut.
	seen := map[string]bool{}
	args := map[string]any{"taskId": p.Name}
	pages := 0
	for {
		res := callTool(t, cs, "sandbar_tasks_result", args)
		g.Expect(res.IsError).To(BeFalse(), text(res))
		g.Expect(res.Content).To(HaveLen(1), "the page is not cut: %s", text(res))
		g.Expect(len(text(res))).To(BeNumerically("<=", bytesBound))
		var out struct {
			Result struct {
				Count    int              `json:"count"`
				Items    []map[string]any `json:"items"`
				Continue string           `json:"continue"`
			} `json:"result"`
		}
		g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed())
		g.Expect(out.Result.Count).To(Equal(n))
		g.Expect(len(out.Result.Items)).To(And(BeNumerically(">", 0), BeNumerically("<=", itemsBound)))
		for _, it := range out.Result.Items {
			name, _ := it["name"].(string)
			if seen[name] {
				t.Fatalf("item %q came twice", name)
			}
			seen[name] = true
		}
		pages++
		if out.Result.Continue == "" {
			break
		}
		args = map[string]any{"taskId": p.Name, "continue": out.Result.Continue}
	}
	g.Expect(seen).To(HaveLen(n), "every instance, in %d pages", pages)
	g.Expect(seen).To(HaveKey(name(0)))
	g.Expect(seen).To(HaveKey(name(n - 1)))

	// Through tasks/result on another server (a replica that never saw the export,
	// with larger bounds): its first page says how to ask for the next.
	other := newRawSession(t, serve(t, mcpserver.Options{MaxResultBytes: 1 << 20, MaxResultItems: 1000}), token)
	again := map[string]bool{}
	params := map[string]any{"taskId": p.Name}
	for {
		reply := other.call("tasks/result", params)
		g.Expect(reply.Error).To(BeNil())
		var out struct {
			Content           []map[string]any `json:"content"`
			StructuredContent struct {
				Items    []map[string]any `json:"items"`
				Continue string           `json:"continue"`
				Note     string           `json:"note"`
			} `json:"structuredContent"`
			IsError bool `json:"isError"`
		}
		g.Expect(json.Unmarshal(reply.Result, &out)).To(Succeed())
		g.Expect(out.IsError).To(BeFalse())
		g.Expect(out.Content).To(HaveLen(1), "the page is not cut")
		for _, it := range out.StructuredContent.Items {
			again[it["name"].(string)] = true
		}
		if out.StructuredContent.Continue == "" {
			break
		}
		g.Expect(out.StructuredContent.Note).To(ContainSubstring(`sandbar_tasks_result with {"taskId": "` + p.Name + `", "continue": "`))
		params = map[string]any{"taskId": p.Name, "continue": out.StructuredContent.Continue}
	}
	g.Expect(again).To(Equal(seen))

	// A client of the stateless revision gets the first page in tasks/get, and the
	// next through the tool its note names.
	stateless := newStatelessRaw(t, url, token, true)
	got := stateless.result("tasks/get", p.Name, map[string]any{"taskId": p.Name})
	g.Expect(got).To(HaveKeyWithValue("status", "completed"))
	first, _ := got["result"].(map[string]any)["structuredContent"].(map[string]any)
	g.Expect(len(first["items"].([]any))).To(And(BeNumerically(">", 0), BeNumerically("<=", itemsBound)))
	g.Expect(first["note"]).To(ContainSubstring(`sandbar_tasks_result with {"taskId": "` + p.Name + `"`))
	next := stateless.result("tools/call", "sandbar_tasks_result", map[string]any{"name": "sandbar_tasks_result",
		"arguments": map[string]any{"taskId": p.Name, "continue": first["continue"]}})
	page := next["structuredContent"].(map[string]any)["result"].(map[string]any)
	g.Expect(page["items"]).NotTo(BeEmpty())
	g.Expect(page["note"]).To(ContainSubstring(fmt.Sprintf("items %d to ", len(first["items"].([]any))+1)))
}

// A continue token is only good for the result it came from: another task's, or a
// made-up one, is refused; and no token lets another account read an export.
func TestExportPageTokenOfAnotherResultIsRefused(t *testing.T) {
	g := NewWithT(t)
	kind := "Pager" + strings.ToUpper(rand.String(4))
	zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString})
	createInstances(t, kind, 5, func(i int) string { return fmt.Sprintf("pg-%d", i) },
		func(i int) map[string]any { return map[string]any{strings.ToLower(kind): "x"} })
	url := serve(t, mcpserver.Options{MaxResultItems: 2})
	cs := connect(t, url, token, nil)
	a := startExport(t, cs, "zorp/"+kind, timeout)
	createInstances(t, kind, 1, func(int) string { return "pg-late" },
		func(int) map[string]any { return map[string]any{strings.ToLower(kind): "y"} })
	b := startExport(t, cs, "zorp/"+kind, timeout)
	res := callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": a.Name})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	tok := res.StructuredContent.(map[string]any)["result"].(map[string]any)["continue"].(string)
	g.Expect(tok).NotTo(BeEmpty())
	for _, bad := range []string{tok, "bm90IGEgdG9rZW4"} {
		res = callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": b.Name, "continue": bad})
		g.Expect(res.IsError).To(BeTrue())
		g.Expect(text(res)).To(ContainSubstring(`argument "continue" is not a continue token this server gave out for this task's result`))
	}
	res = callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": a.Name, "continue": tok})
	g.Expect(res.IsError).To(BeFalse(), "the token is good for its own result: %s", text(res))

	// Another account of the same namespace reads none of it, with or without a token.
	_, snoopTok := newAccount(t, unique("snoop"), metav1alpha1.Permissions{})
	snoop := connect(t, url, snoopTok, nil)
	for _, args := range []map[string]any{{"taskId": a.Name}, {"taskId": a.Name, "continue": tok}} {
		res = callTool(t, snoop, "sandbar_tasks_result", args)
		g.Expect(res.IsError).To(BeTrue())
		g.Expect(text(res)).To(ContainSubstring(`unknown task "` + a.Name + `"`))
		g.Expect(text(res)).NotTo(ContainSubstring("pg-"))
	}
	raw := newRawSession(t, url, snoopTok)
	reply := raw.call("tasks/result", map[string]any{"taskId": a.Name, "continue": tok})
	g.Expect(reply.Error).NotTo(BeNil())
	g.Expect(reply.Error.Message).To(Equal(`unknown task "` + a.Name + `"`))
}

// An export that would store more than the manager's cap fails with a message that
// says why and what to do, and stores nothing more.
func TestExportPastTheStoreCapFailsAndSaysWhy(t *testing.T) {
	g := NewWithT(t)
	kind := "Tome" + strings.ToUpper(rand.String(4))
	zorpClass(t, kind, metav1alpha1.PropertySpec{Range: metav1alpha1.RangeString})
	const n, each = 12, 800 << 10 // 9.6 MB, past the suite's 8 MiB cap
	createInstances(t, kind, n, func(i int) string { return fmt.Sprintf("tome-%02d", i) },
		func(i int) map[string]any { return map[string]any{strings.ToLower(kind): strings.Repeat("z", each)} })
	cs := connect(t, mcpURL, token, nil)
	p := startExport(t, cs, "zorp/"+kind, time.Minute)
	g.Expect(p.Status.Phase).To(Equal(metav1alpha1.PhaseFailed))
	g.Expect(p.Status.StatusMessage).To(ContainSubstring(
		"the export is larger than 8 MiB, the most one process may store (--max-stored-result-bytes); nothing more was stored: " +
			"export one class at a time, or ask an admin to raise the limit"))
	g.Expect(resultChunks(t, p.Name)).To(BeEmpty(), "nothing was stored")
	// The API server has the end; the manager's cache may see it a moment later.
	res := callTool(t, cs, "sandbar_tasks_result", map[string]any{"taskId": p.Name, "waitSeconds": 10})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring("--max-stored-result-bytes"))
}
