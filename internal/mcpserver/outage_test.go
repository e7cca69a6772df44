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
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// During an outage of the API server (held, as a paused or overloaded one is) every
// request answers within the call timeout and 2 s: the calls that need the API
// server say it did not answer, a token the cache cannot vouch for is told the server
// is unavailable (not that it is invalid), and what needs only the catalog is served.

// outageCallTimeout is the call timeout of the servers these tests start, and
// outageBound how long any of their answers may take while the API server is held.
const (
	outageCallTimeout = 3 * time.Second
	outageBound       = outageCallTimeout + 2*time.Second
)

// outageRevisions are a session-based revision and the stateless one.
var outageRevisions = []string{sessionRevision, revision2026}

// newGauge defines a class of a prefix (an API group) nobody has used: the manager
// has never mapped its kind to a resource. It returns the class's create tool.
func newGauge(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	prefix := unique("p")
	prop, cls := prefix+".depth", prefix+".gauge"
	deleteMetamodelAfter(t, []string{cls}, []string{prop})
	g.Expect(k8s.Create(context.Background(), &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: prop},
		Spec: metav1alpha1.PropertySpec{Range: metav1alpha1.RangeInteger}})).To(Succeed())
	g.Expect(k8s.Create(context.Background(), &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: cls},
		Spec: metav1alpha1.ClassSpec{Prefix: prefix, Kind: "Gauge", Slots: []metav1alpha1.SlotRef{{Property: prop}}}})).To(Succeed())
	g.Eventually(func() bool {
		c := store.Load().FindClass(prefix + "/Gauge")
		return c != nil && c.Servable()
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "class %s is served", cls)
	return "sandbar_class_" + prefix + "_Gauge"
}

// The first call of an account that has not called since the server started, of a
// class whose kind the manager has never used, answers within the call timeout and
// 2 s while the API server is held: its client is made without asking the API server,
// and finding its kind's resource waits only until the call's deadline.
func TestFirstCallDuringAnOutageAnswersWithinTheCallTimeout(t *testing.T) {
	for _, revision := range outageRevisions {
		t.Run(revision, func(t *testing.T) {
			g := NewWithT(t)
			tool := newGauge(t)
			url := serve(t, mcpserver.Options{CallTimeout: outageCallTimeout})
			_, tok := newAccount(t, unique("first-call"), metav1alpha1.Permissions{})
			cs, _ := connectAt(t, url, tok, revision, nil)
			g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).
				WithTimeout(timeout).WithPolling(poll).Should(HaveKey(tool))

			holdAPIServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"depth": 3}})
			elapsed := time.Since(start)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.IsError).To(BeTrue(), text(res))
			g.Expect(text(res)).To(HavePrefix("the Kubernetes API server did not answer within 3s."))
			g.Expect(elapsed).To(BeNumerically("<", outageBound), "the first call answered in %s", elapsed)
		})
	}
}

// refusals records the answers of a client's HTTP requests that the server refused.
type refusals struct {
	base http.RoundTripper
	mu   sync.Mutex
	last []refusal
}

type refusal struct {
	status     int
	retryAfter string
	body       []byte
}

func (a *refusals) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.base.RoundTrip(r)
	if err != nil || resp.StatusCode < 300 {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	a.mu.Lock()
	a.last = append(a.last, refusal{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: body})
	a.mu.Unlock()
	return resp, nil
}

func (a *refusals) all() []refusal {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]refusal(nil), a.last...)
}

// dial opens a go-sdk client at a revision and returns what the server refused.
func dial(t *testing.T, url, tok, revision string) (*mcp.ClientSession, []refusal, error) {
	t.Helper()
	rec := &refusals{base: testenv.Bearer{Token: tok}}
	c := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, rec.all(), err
}

// A key issued just before the API server stopped answering, for an account the
// manager knows or one it has not seen yet, is not called invalid: the manager's
// cache is behind, and the server says it is unavailable (503, Retry-After). A key
// that is really wrong is told apart once the API server answers again (401), and
// the new keys then work.
func TestKeyIssuedDuringAnOutageIsUnavailableNotInvalid(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{CallTimeout: outageCallTimeout})
	rekeyed, oldTok := newAccount(t, unique("rekeyed"), metav1alpha1.Permissions{})
	service, oldKey, _ := strings.Cut(oldTok, ":")
	wrongTok := service + ":" + oldKey + "x"

	holdAPIServer(t)
	// The tests' own client reaches the API server; the manager does not.
	newTok, err := apikey.Issue(context.Background(), k8s, "default", rekeyed.Name)
	g.Expect(err).NotTo(HaveOccurred())
	unseen := unique("unseen")
	sa := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: unseen},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: unseen, ServiceAccountName: "claude",
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: unseen + "-key"}}}
	g.Expect(k8s.Create(context.Background(), sa)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sa) })
	unseenTok, err := apikey.Issue(context.Background(), k8s, "default", unseen)
	g.Expect(err).NotTo(HaveOccurred())

	for _, revision := range outageRevisions {
		for name, tok := range map[string]string{"a new key": newTok, "a new account's key": unseenTok, "a wrong key": wrongTok} {
			start := time.Now()
			_, refused, err := dial(t, url, tok, revision)
			elapsed := time.Since(start)
			g.Expect(err).To(HaveOccurred(), "%s at %s", name, revision)
			g.Expect(refused).NotTo(BeEmpty(), "%s at %s", name, revision)
			got := refused[0]
			g.Expect(got.status).To(Equal(http.StatusServiceUnavailable), "%s at %s: %s", name, revision, got.body)
			wait, err := strconv.Atoi(got.retryAfter)
			g.Expect(err).NotTo(HaveOccurred(), "%s at %s: Retry-After %q", name, revision, got.retryAfter)
			g.Expect(wait).To(BeNumerically(">", 0))
			var msg map[string]string
			g.Expect(json.Unmarshal(got.body, &msg)).To(Succeed(), string(got.body))
			g.Expect(msg["error"]).To(HavePrefix("server unavailable"), "%s at %s", name, revision)
			g.Expect(msg["error"]).NotTo(ContainSubstring("invalid"))
			g.Expect(elapsed).To(BeNumerically("<", outageBound), "%s at %s answered in %s", name, revision, elapsed)
		}
	}

	apiServer.Release()
	for _, revision := range outageRevisions {
		for _, tok := range []string{newTok, unseenTok} {
			g.Eventually(func() error {
				_, _, err := dial(t, url, tok, revision)
				return err
			}).WithTimeout(timeout).WithPolling(200*time.Millisecond).Should(Succeed(), "the new keys work at %s", revision)
		}
		// The API server's last answer is kept for a second.
		g.Eventually(func(g Gomega) {
			_, refused, err := dial(t, url, wrongTok, revision)
			g.Expect(err).To(HaveOccurred())
			g.Expect(refused).NotTo(BeEmpty())
			g.Expect(refused[0].status).To(Equal(http.StatusUnauthorized), "a wrong key at %s: %s", revision, refused[0].body)
		}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
}

// A client whose key the manager can verify from its cache starts, lists tools and
// prompts, gets a prompt, reads a metamodel resource and calls what needs only the
// catalog while the API server is held.
func TestInitializeAndListsAnswerDuringAnOutage(t *testing.T) {
	url := serve(t, mcpserver.Options{CallTimeout: outageCallTimeout})
	_, tok := newAccount(t, unique("outage-lister"), metav1alpha1.Permissions{})
	holdAPIServer(t)
	for _, revision := range outageRevisions {
		t.Run(revision, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			cs, refused, err := dial(t, url, tok, revision)
			g.Expect(err).NotTo(HaveOccurred(), "%v", refused)
			g.Expect(listTools(t, cs)).To(HaveKey("sandbar_entity_find"))
			prompts, err := cs.ListPrompts(context.Background(), nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(prompts.Prompts).NotTo(BeEmpty())
			prompt, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "sandbar_workflow_order_fulfillment",
				Arguments: map[string]string{"order": "ord-1"}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(prompt.Messages).NotTo(BeEmpty())
			read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp://sandbar/meta/Class/zorp.spaceboot"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(read.Contents).NotTo(BeEmpty())
			res := callTool(t, cs, "sandbar_schema_classes", nil)
			g.Expect(res.IsError).To(BeFalse(), text(res))
			g.Expect(time.Since(start)).To(BeNumerically("<", outageBound))
		})
	}
}
