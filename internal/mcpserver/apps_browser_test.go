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
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// envScreenshots names a folder for the browser test's pictures of the views (the
// ones in docs/images are made so).
const envScreenshots = "SANDBAR_SCREENSHOTS"

// A person uses the SpaceBoot view in Chromium, hosted by the official host side of
// MCP Apps: the form shows the server's refusal of a tentacle count on that field,
// in the server's words; the form then creates the SpaceBoot, which the API
// server has; the table lists it, its row opens it in the form, a Review's reference
// to a SpaceBoot offers it, an Order's number is checked against its pattern as it is
// typed, and its time placed is picked with the browser's date and time picker.
func TestTheClassViewCreatesAndListsInChromium(t *testing.T) {
	g := NewWithT(t)
	// (The suite's classes may still be on their way at its start.)
	cs := connect(t, mcpURL, token, nil)
	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey("sandbar_class_zorp_SpaceBoot"))
	host := appsHost(t)

	b := newBrowser(t)
	view, waitView := b.view, b.wait
	name := unique("form-boot")
	b.open(host + "/?tool=sandbar_class_zorp_SpaceBoot&token=" + url.QueryEscape(token))
	waitView(`d.getElementById("results")`)

	view(`d.getElementById("tab-form").click(); return ""`)
	waitView(`d.getElementById("instance-form")`)
	g.Expect(view(`return d.querySelector('[data-field="name"] .req') ? "required" : ""`)).To(Equal("required"), "the required slot is marked")
	g.Expect(view(`return d.getElementById("f-vacuumRated").tagName`)).To(Equal("SELECT"), "a boolean is a choice")
	g.Expect(view(`return d.getElementById("f-tentacleCount").type + " " + d.getElementById("f-tentacleCount").max`)).To(Equal("number 64"))

	fill := `const set = (id, v) => { const e = d.getElementById(id); e.value = v; e.dispatchEvent(new Event("input", {bubbles: true})); };
		set("f-metadata.name", "` + name + `"); set("f-name", "Formed"); set("f-price", "12.5"); set("f-vacuumRated", "true"); `
	view(fill + `set("f-tentacleCount", "99"); d.getElementById("submit").click(); return ""`)
	waitView(`d.getElementById("err-tentacleCount").textContent`)
	g.Expect(view(`return d.getElementById("err-tentacleCount").textContent`)).To(ContainSubstring("64"), "the refusal shows on the field it names")
	g.Expect(view(`return d.getElementById("err-name").textContent`)).To(BeEmpty(), "and on no other")
	shot(t, b.ctx, "view-form-refused")

	view(`const e = d.getElementById("f-tentacleCount"); e.value = "3"; d.getElementById("submit").click(); return ""`)
	waitView(`d.getElementById("form-status").textContent.startsWith("Created")`)
	g.Expect(view(`return d.getElementById("form-status").textContent`)).To(Equal("Created default/" + name))
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	g.Expect(u.Object["spec"]).To(Equal(map[string]any{"name": "Formed", "price": 12.5, "tentacleCount": int64(3), "vacuumRated": true}))
	shot(t, b.ctx, "view-form")

	// The table finds it (once this replica's cache has it) and its row opens the form.
	g.Eventually(func() string {
		view(`d.getElementById("tab-table").click(); return ""`)
		waitView(`d.getElementById("results") && d.querySelector("#results table")`)
		return view(`const r = [...d.querySelectorAll("tr.row")].find(r => r.dataset.name === "` + name + `"); return r ? r.textContent : ""`)
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainSubstring("Formed"))
	shot(t, b.ctx, "view-table")
	view(`[...d.querySelectorAll("tr.row")].find(r => r.dataset.name === "` + name + `").click(); return ""`)
	waitView(`d.getElementById("f-metadata.name") && d.getElementById("f-metadata.name").readOnly`)
	g.Expect(view(`return d.getElementById("f-name").value + " " + d.getElementById("submit").textContent`)).To(Equal("Formed Save"))

	// A Review's boot is a reference to a SpaceBoot: its picker offers the one made.
	b.open(host + "/?tool=sandbar_class_zorp_Review&token=" + url.QueryEscape(token))
	view(`d.getElementById("tab-form").click(); d.getElementById("f-boot").dispatchEvent(new FocusEvent("focus")); return ""`)
	b.wait(`[...d.querySelectorAll("#f-boot-choices option")].some(o => o.value === "` + name + `")`)

	// An Order's number has a pattern, checked as the person types.
	b.open(host + "/?tool=sandbar_class_order_Order&token=" + url.QueryEscape(token))
	typeNumber := func(v string) string {
		return `const e = d.getElementById("f-number"); e.value = "` + v + `"; e.dispatchEvent(new Event("input")); return d.getElementById("err-number").textContent`
	}
	view(`d.getElementById("tab-form").click(); return ""`)
	g.Expect(view(typeNumber("12"))).To(Equal("must match ^ORD-[0-9]+$"))
	g.Expect(view(typeNumber("ORD-12"))).To(BeEmpty())
	g.Expect(view(`return d.getElementById("f-placedAt").type`)).To(Equal("datetime-local"), "a date-time is picked as one")
}

// A person moves an Order's process across the workflows' board in Chromium: the
// host calls active-processes as a model would and hands the board the call; the
// process is a card in its state's column, its transitions are buttons, and a press
// moves it (the server says so too) and its history shows the step.
func TestTheBoardMovesAProcessInChromium(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	task := taskID(t, startOrder(t, cs, map[string]any{"order": unique("board-order")}, nil))
	t.Cleanup(func() { callTool(t, cs, "sandbar_tasks_cancel", map[string]any{"taskId": task}) })
	host := appsHost(t)

	b := newBrowser(t)
	b.open(host + "/?tool=sandbar_workflow_active-processes&args=" + url.QueryEscape(`{"workflow":"order.fulfillment"}`) +
		"&token=" + url.QueryEscape(token))
	card := `d.querySelector('[data-task="` + task + `"]')`
	b.wait(`[...d.querySelectorAll('[data-state="pending"] [data-task]')].some(c => c.dataset.task === "` + task + `")`)
	g.Expect(b.view(`return [...`+card+`.querySelectorAll("[data-transition]")].map(e => e.dataset.transition).join(",")`)).
		To(Equal("confirm,cancel"), "the transitions from pending are its buttons")

	b.view(card + `.querySelector('[data-transition="confirm"]').click(); return ""`)
	b.wait(`d.querySelector('[data-state="confirmed"] [data-task="` + task + `"]')`)
	state := callTool(t, cs, "sandbar_workflow_process-state", map[string]any{"taskId": task})
	g.Expect(state.StructuredContent).To(HaveKeyWithValue("state", "confirmed"), "the server has it moved")
	b.view(card + `.querySelector("[data-history]").click(); return ""`)
	b.wait(card + `.querySelector(".history li:nth-child(2)")`)
	g.Expect(b.view(`return ` + card + `.querySelector(".history").textContent`)).To(ContainSubstring("pending → confirmed (confirm)"))
	shot(t, b.ctx, "view-board")
}

// A call held for approval is a card on the board of the approval workflow, waiting,
// with no button: it says who decides and the kubectl command they decide with, for
// no tool approves a call.
func TestTheBoardShowsAHeldCallWaitingForAPerson(t *testing.T) {
	g := NewWithT(t)
	approvalsPolicy(t)
	name := unique("board-held")
	_, tok := newAccount(t, name, metav1alpha1.Permissions{})
	pol := &metav1alpha1.CallPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: unique("dear-boots")},
		Spec: metav1alpha1.CallPolicySpec{Match: metav1alpha1.CallMatch{Accounts: []string{"default/" + name}, Classes: []string{"zorp/SpaceBoot"}},
			Rules: []metav1alpha1.CallRule{{Name: "dear", Action: metav1alpha1.ActionRequireApproval, Expression: "call.attributes.price > 1000",
				Message: "dear boots need a person", Approval: &metav1alpha1.ApprovalRequirement{ApproverSet: metav1alpha1.ApproverSet{Groups: []string{"approvers"}}}}}}}
	g.Expect(k8s.Create(context.Background(), pol)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	cs := connect(t, mcpURL, tok, nil)
	var held string
	g.Eventually(func() string {
		held = text(callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Dear", "price": 5000}))
		return held
	}).WithTimeout(timeout).WithPolling(poll).Should(HavePrefix("held for approval"))
	task := approvalName.FindStringSubmatch(held)[1]
	t.Cleanup(func() { callTool(t, cs, "sandbar_tasks_cancel", map[string]any{"taskId": task}) })
	host := appsHost(t)

	b := newBrowser(t)
	b.open(host + "/?tool=sandbar_workflow_start-process&token=" + url.QueryEscape(tok))
	b.view(`const s = d.getElementById("workflow"); s.value = "sandbar.approval"; s.dispatchEvent(new Event("change")); return ""`)
	card := `d.querySelector('[data-state="waiting"] [data-task="` + task + `"]')`
	b.wait(card)
	g.Expect(b.view(`return ` + card + `.querySelector(".hint").textContent`)).To(ContainSubstring("kubectl sandbar approve " + task))
	g.Expect(b.view(`return String(`+card+`.querySelectorAll("[data-transition]").length)`)).To(Equal("0"), "no button approves")
	g.Expect(b.view(`return [...d.querySelectorAll("#workflow option")].map(o => o.value).join(",")`)).
		To(HavePrefix("order.fulfillment,"), "the workflows people move come before the server's")
}

// appsHost serves the MCP Apps host page (hack/ts-client/apps-host.mjs, bundled
// for the browser) on loopback, with /mcp passed to the suite's MCP server so that
// the page reaches it from its own origin.
func appsHost(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	scripts, _ := tsClient(t)
	build := exec.Command(filepath.Join(scripts, "node_modules", ".bin", "esbuild"), "apps-host.mjs", "--bundle", "--format=esm",
		"--platform=browser", "--log-level=warning", "--outfile="+filepath.Join(dir, "host.js"))
	build.Dir = scripts
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "bundling the host page (make ts-client installs esbuild): %s", out)
	g.Expect(os.WriteFile(filepath.Join(dir, "index.html"), []byte(`<!doctype html><html><head><meta charset="utf-8"><title>MCP Apps host</title>
<style>body{margin:0;font-family:system-ui} iframe{width:100%;height:700px;border:0}</style></head>
<body><script type="module" src="host.js"></script></body></html>`), 0o644)).To(Succeed())
	target, err := url.Parse(mcpURL)
	g.Expect(err).NotTo(HaveOccurred())
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
		r.Out.URL.Path = target.Path
		r.Out.Host = target.Host
	}, FlushInterval: -1}
	mux := http.NewServeMux()
	mux.Handle("/mcp", proxy)
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// chromium is a Chromium for a browser test: the host page of the views (open, view,
// wait), or any page through its ctx.
type chromium struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *chromium {
	t.Helper()
	exe := os.Getenv("CHROMIUM")
	if exe == "" {
		t.Fatal("CHROMIUM is not set: run the tests with `make test` or `make test-mcp`, which unpack Debian's Chromium (make chromium)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	alloc, stopAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 800))...)
	b, closeBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { closeBrowser(); stopAlloc(); cancel() })
	return &chromium{t: t, ctx: b}
}

// open loads the host page and waits for its view to initialize.
func (b *chromium) open(page string) {
	b.t.Helper()
	g := NewWithT(b.t)
	g.Expect(chromedp.Do(b.ctx, chromedp.Navigate(page))).To(Succeed())
	_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`window.viewReady === true || !!window.hostError`, chromedp.WithPollingTimeout(30*time.Second)))
	g.Expect(err).NotTo(HaveOccurred())
	hostError, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`window.hostError || ""`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hostError).To(BeEmpty())
}

// view runs a script in the view's document (d) and answers its value.
func (b *chromium) view(script string) string {
	b.t.Helper()
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => { const d = document.querySelector("iframe").contentDocument; `+script+` })()`))
	NewWithT(b.t).Expect(err).NotTo(HaveOccurred(), script)
	return out
}

// wait polls a condition on the view's document (d) until it holds.
func (b *chromium) wait(cond string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](
		`(() => { const f = document.querySelector("iframe"); const d = f && f.contentDocument; return !!d && !!(`+cond+`); })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	NewWithT(b.t).Expect(err).NotTo(HaveOccurred(), cond)
}

// shot keeps a picture of the page in SANDBAR_SCREENSHOTS, if set.
func shot(t *testing.T, browser context.Context, name string) {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(browser, chromedp.FullScreenshot(100)) // 100: PNG
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)).To(Succeed())
}
