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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// The whole flow as a person meets it: the TypeScript SDK client names itself by
// its metadata document's URL and opens the authorization URL; in Chromium the
// person logs in at the identity provider (the test issuer approves at once),
// reads the consent page and presses Allow; the browser brings the code to the
// client's loopback listener, and the client exchanges it, lists the tools,
// creates an instance as the person's Kubernetes user and refreshes its tokens.
func TestTypeScriptClientSignsInThroughTheConsentPageInChromium(t *testing.T) {
	g := NewWithT(t)
	dir, node := tsClient(t)
	browser := newBrowser(t).ctx // (Chromium starts at the first action)
	s := newASServer(t, nil, "http://127.0.0.1/callback")
	sub := unique("dana")
	s.is.LoginAs(map[string]any{"sub": sub, "groups": []string{"browser-team"}})
	ns := namespaceFor(t, rbacv1.GroupKind, "oidc:browser-team")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "oauth-browser.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_URL="+s.oauth, "CLIENT_ID_URL="+s.clientID, "MCP_NAMESPACE="+ns)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd.Start()).To(Succeed())
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	next := func() map[string]any {
		if !lines.Scan() {
			_ = cmd.Wait()
			t.Fatalf("oauth-browser.mjs ended early: %s", stderr.String())
		}
		var v map[string]any
		g.Expect(json.Unmarshal(lines.Bytes(), &v)).To(Succeed(), lines.Text())
		return v
	}
	authorize, _ := next()["authorize"].(string)
	g.Expect(authorize).To(HavePrefix(s.asURL + "/authorize?"))

	g.Expect(chromedp.Do(browser,
		chromedp.Navigate(authorize),
		chromedp.WaitVisible(chromedp.CSS(`button[value="allow"]`)),
	)).To(Succeed())
	title, err := chromedp.Run(browser, chromedp.Title())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(title).To(Equal("Allow a program on your computer to use Sandbar?"), "the client returns to a loopback address")
	page, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("body")))
	g.Expect(err).NotTo(HaveOccurred())
	for _, want := range []string{s.clientID, s.oauth, "oidc:" + sub, "oidc:browser-team", "It calls itself Test Client: the client's own words"} {
		g.Expect(page).To(ContainSubstring(want))
	}
	g.Expect(chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(`button[value="allow"]`)),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(., "Signed in")]`)),
	)).To(Succeed())
	landed, err := chromedp.Run(browser, chromedp.Location())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(landed).To(MatchRegexp(`^http://127\.0\.0\.1:\d+/callback\?code=`))

	seen := next()
	g.Expect(cmd.Wait()).To(Succeed(), stderr.String())
	g.Expect(seen).To(HaveKeyWithValue("ok", true))
	g.Expect(seen).To(HaveKeyWithValue("clientId", s.clientID), "the client names itself by its document's URL")
	g.Expect(seen).To(HaveKeyWithValue("resource", s.oauth))
	g.Expect(seen).To(HaveKeyWithValue("codeChallengeMethod", "S256"))
	g.Expect(seen).To(HaveKeyWithValue("refreshed", true))

	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ts-browser-boot"}, u)).To(Succeed())
	g.Expect(u.GetAnnotations()[metav1alpha1.AnnotationCreatedBy]).To(Equal("default/" + oauth.AccountName("oidc:"+sub)))
}
