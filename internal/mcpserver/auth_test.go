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
	cryptorand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends an initialize request with the given headers.
// reply is what post got back: its body is read and closed already.
type reply struct {
	StatusCode int
	Header     http.Header
}

func post(t *testing.T, url string, headers map[string]string) (reply, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header}, string(body)
}

// newAccount creates a ServiceAccount with a fresh key and returns its token. It acts
// in Kubernetes as the sample's ServiceAccount default/claude, which may edit the
// instances of namespace default.
func newAccount(t *testing.T, name string, perms metav1alpha1.Permissions) (*metav1alpha1.ServiceAccount, string) {
	t.Helper()
	g := NewWithT(t)
	sa := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{
			ServiceName:        name,
			ServiceAccountName: "claude",
			APIKeySecretRef:    metav1alpha1.SecretKeyRef{Name: name + "-key"},
			Permissions:        perms,
		},
	}
	g.Expect(k8s.Create(context.Background(), sa)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sa) })
	return sa, issueWhenReady(t, "default", name)
}

func TestWrongTokensGet401(t *testing.T) {
	_, inactiveTok := newAccount(t, "sleepy", metav1alpha1.Permissions{})
	var sa metav1alpha1.ServiceAccount
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "sleepy"}, &sa)).To(Succeed())
	off := false
	sa.Spec.Active = &off
	NewWithT(t).Expect(k8s.Update(context.Background(), &sa)).To(Succeed())

	service, key, _ := strings.Cut(token, ":")
	for _, tc := range []struct {
		desc, header, body string
	}{
		{"no header", "", "Bearer token required"},
		{"not bearer", "Basic " + token, "invalid token"},
		{"no colon", "Bearer " + service + key, "invalid token"},
		{"unknown service", "Bearer nobody:" + key, "invalid token"},
		{"wrong key", "Bearer " + service + ":" + key + "x", "invalid token"},
		{"inactive account", "Bearer " + inactiveTok, "invalid token"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			g := NewWithT(t)
			headers := map[string]string{}
			if tc.header != "" {
				headers["Authorization"] = tc.header
			}
			g.Eventually(func(g Gomega) {
				resp, body := post(t, mcpURL, headers)
				g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
				g.Expect(resp.Header.Get("WWW-Authenticate")).To(Equal(`Bearer realm="sandbar-mcp"`))
				g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
				var msg map[string]string
				g.Expect(json.Unmarshal([]byte(body), &msg)).To(Succeed())
				g.Expect(msg).To(Equal(map[string]string{"error": tc.body}))
			}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		})
	}
	resp, _ := post(t, mcpURL, map[string]string{"Authorization": "Bearer " + token})
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// Deactivating an account or giving it a new key locks the old token out, on an
// already open session too.
func TestLockOutReachesOpenSessions(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, "rotor", metav1alpha1.Permissions{})
	cs := connect(t, mcpURL, tok, nil)
	_, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())

	newTok, err := apikey.Issue(context.Background(), k8s, "default", "rotor")
	g.Expect(err).NotTo(HaveOccurred())
	// The open session is closed (or, before the close goes through, its next
	// request refused), and the old token opens no new one.
	g.Eventually(func() error {
		_, err := cs.ListTools(context.Background(), nil)
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(MatchError(Or(ContainSubstring("Unauthorized"), ContainSubstring("connection closed"))))
	r, _ := post(t, mcpURL, map[string]string{"Authorization": "Bearer " + tok})
	g.Expect(r.StatusCode).To(Equal(http.StatusUnauthorized))

	fresh := connect(t, mcpURL, newTok, nil)
	_, err = fresh.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())

	var sa metav1alpha1.ServiceAccount
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "rotor"}, &sa)).To(Succeed())
	off := false
	sa.Spec.Active = &off
	g.Expect(k8s.Update(context.Background(), &sa)).To(Succeed())
	g.Eventually(func() error {
		_, err := fresh.ListTools(context.Background(), nil)
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(MatchError(Or(ContainSubstring("Unauthorized"), ContainSubstring("connection closed"))))
	r, _ = post(t, mcpURL, map[string]string{"Authorization": "Bearer " + newTok})
	g.Expect(r.StatusCode).To(Equal(http.StatusUnauthorized))
}

func TestPermissionsFilterAndGuardTools(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, "reader", metav1alpha1.Permissions{
		Tools:      []string{"sandbar_schema_*", "sandbar.entity.*"},
		ReadOnly:   true,
		Namespaces: []string{"kube-public"},
	})
	cs := connect(t, mcpURL, tok, nil)
	tools := listTools(t, cs)
	g.Expect(tools).To(HaveKey("sandbar_schema_classes"))
	g.Expect(tools).To(HaveKey("sandbar_entity_find"), "globs match canonical names too")
	g.Expect(tools).NotTo(HaveKey("sandbar_entity_create"), "read-only accounts see read-only tools only")
	g.Expect(tools).NotTo(HaveKey("sandbar_class_describe"))
	g.Expect(tools).NotTo(HaveKey("sandbar_class_zorp_SpaceBoot"))

	res := callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "nope"}})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring(`forbidden: this account's permissions do not allow the tool "sandbar_entity_create"`))

	// The account's namespaces narrow what RBAC grants, never widen it: kube-public is
	// listed, but the account's Kubernetes identity may not read there until an admin
	// binds a role.
	findIn := func(ns string) *mcp.CallToolResult {
		return callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/SpaceBoot", "namespace": ns})
	}
	res = findIn("kube-public")
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring(`User "system:serviceaccount:default:claude" cannot list resource "spaceboots" in API group "zorp.sandbar.dev" in the namespace "kube-public"`))
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: "claude-viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-viewer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "claude", Namespace: "default"}}}
	g.Expect(k8s.Create(context.Background(), binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding) })
	g.Eventually(func() string { return text(findIn("kube-public")) }).WithTimeout(timeout).WithPolling(poll).
		Should(HavePrefix("{"), "a granted namespace, once RBAC allows it")
	res = findIn("kube-system")
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(ContainSubstring(`this account may act in namespace "default" and kube-public, not "kube-system"`))
}

func TestNewClassAppearsAsToolWithListChanged(t *testing.T) {
	g := NewWithT(t)
	var changed atomic.Int32
	cs := connect(t, mcpURL, token, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
	})
	g.Expect(listTools(t, cs)).NotTo(HaveKey("sandbar_class_zorp_Hat"))

	prop := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: "hat.brim"}, Spec: metav1alpha1.PropertySpec{Range: metav1alpha1.RangeNumber}}
	hat := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: "zorp.hat"}, Spec: metav1alpha1.ClassSpec{
		Prefix: "zorp", Kind: "Hat", Slots: []metav1alpha1.SlotRef{{Property: "hat.brim", Required: true}},
	}}
	g.Expect(k8s.Create(context.Background(), prop)).To(Succeed())
	g.Expect(k8s.Create(context.Background(), hat)).To(Succeed())
	// Other tests use zorp/Hat as a class that does not exist.
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), hat); _ = k8s.Delete(context.Background(), prop) })

	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey("sandbar_class_zorp_Hat"))
	g.Eventually(changed.Load).WithTimeout(timeout).WithPolling(poll).Should(BeNumerically(">=", 1),
		"notifications/tools/list_changed arrived")
	// Its view is there with its tool, generated from the class: no restart, no build.
	view, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ui://sandbar/class/zorp/Hat"})
	g.Expect(err).NotTo(HaveOccurred())
	m := modelOf(t, view.Contents[0].Text)
	g.Expect(m.Fields).To(HaveLen(1))
	g.Expect(m.Fields[0].Field).To(Equal("brim"))
	g.Expect(m.Fields[0].Range).To(Equal("number"))
	g.Expect(m.Fields[0].Required).To(BeTrue())

	g.Expect(k8s.Delete(context.Background(), hat)).To(Succeed())
	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		ShouldNot(HaveKey("sandbar_class_zorp_Hat"))
}

func TestRateLimitAnswers429(t *testing.T) {
	url := serve(t, mcpserver.Options{RateLimit: 0.01, RateBurst: 2})
	auth := map[string]string{"Authorization": "Bearer " + token}
	for i := 0; i < 2; i++ {
		resp, body := post(t, url, auth)
		NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
	}
	resp, body := post(t, url, auth)
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests))
	NewWithT(t).Expect(resp.Header.Get("Retry-After")).NotTo(BeEmpty())
	NewWithT(t).Expect(body).To(ContainSubstring("rate limit exceeded"))
}

func TestCrossOriginBrowserRequestsGet403(t *testing.T) {
	auth := map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example.com", "Sec-Fetch-Site": "cross-site"}
	resp, _ := post(t, mcpURL, auth)
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusForbidden))

	url := serve(t, mcpserver.Options{AllowedOrigins: []string{"https://app.example.com"}})
	auth["Origin"] = "https://app.example.com"
	resp, body := post(t, url, auth)
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
}

// Guessing a service's key is limited per client address: after ten wrong keys, 429
// without trying the key, while other services and the real key are unaffected.
func TestKeyGuessingIsLimited(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	service, key, _ := strings.Cut(token, ":")
	// Wrong keys until the first 429: the first 10 attempts, and one a second that the
	// bucket earns back meanwhile (a slow run takes seconds), are refused with 401.
	codes := map[int]int{}
	start := time.Now()
	for i := 0; i < 40 && codes[http.StatusTooManyRequests] == 0; i++ {
		resp, _ := post(t, url, map[string]string{"Authorization": "Bearer " + service + ":wrong-" + key})
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			g.Expect(resp.Header.Get("Retry-After")).NotTo(BeEmpty())
		}
	}
	elapsed := time.Since(start)
	g.Expect(codes[http.StatusTooManyRequests]).To(Equal(1), "guessing was never limited: %v", codes)
	g.Expect(codes[http.StatusUnauthorized]).To(And(BeNumerically(">=", 10), BeNumerically("<=", 10+int(elapsed.Seconds())+1)),
		"%v in %s", codes, elapsed)
	resp, _ := post(t, url, map[string]string{"Authorization": "Bearer " + service + ":" + key})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "a right key that never verified here gets in while the address is blocked: its id vouches for it")
	resp, _ = post(t, url, map[string]string{"Authorization": "Bearer nobody:" + key})
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "another service name is not blocked")
}

// Flooding a service with wrong keys does not lock its real key out: a token that
// verified before still gets in while the flooder's bucket (same address, same
// service) is empty, and a key that never verified is still limited.
func TestFloodingWrongKeysDoesNotLockOutTheRealKey(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	cs := connect(t, url, token, nil)
	_, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())

	service, key, _ := strings.Cut(token, ":")
	// One wrong key, sent again and again: after its first refusal it costs no
	// bcrypt, so the flood outruns the bucket's refill.
	limited := false
	for i := 0; i < 30 && !limited; i++ {
		resp, _ := post(t, url, map[string]string{"Authorization": "Bearer " + service + ":wrong-" + key})
		g.Expect(resp.StatusCode).To(BeElementOf(http.StatusUnauthorized, http.StatusTooManyRequests))
		limited = resp.StatusCode == http.StatusTooManyRequests
	}
	g.Expect(limited).To(BeTrue(), "the wrong keys were never limited")

	resp, body := post(t, url, map[string]string{"Authorization": "Bearer " + token})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
	_, err = cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred(), "the open session goes on")
	fresh := connect(t, url, token, nil)
	_, err = fresh.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred(), "a new session with the real key")

	resp, _ = post(t, url, map[string]string{"Authorization": "Bearer " + service + ":never-tried-" + key})
	g.Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests), "a key that never verified is still limited")
}

// The issue's flood: hundreds of wrong keys at once for one account, from the real
// key's own address (as everyone's behind one Ingress), right after its key was
// re-issued, so that no cached verdict vouches for the new key. Every call made
// meanwhile with the new key gets in (12 of 12 got 429 before keys had ids), and the
// flood costs bcrypt comparisons only for its address's failed attempts (10, then
// one a second): once they are spent, a wrong key's id tells it wrong at once.
func TestAWrongKeyFloodAfterANewKeyNeverRefusesTheRealKey(t *testing.T) {
	g := NewWithT(t)
	url := serve(t, mcpserver.Options{})
	sa, tok := newAccount(t, unique("flooded"), metav1alpha1.Permissions{})
	cs := connect(t, url, tok, nil)
	_, err := cs.ListTools(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	service, _, _ := strings.Cut(tok, ":")

	send := func(c *http.Client, tok string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	const flooders = 200
	flood := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: flooders}}
	t.Cleanup(flood.CloseIdleConnections)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		wg    sync.WaitGroup
	)
	before, start := keyComparisons(t), time.Now()
	for range flooders {
		wg.Go(func() {
			for ctx.Err() == nil {
				code := send(flood, service+":"+randomKey())
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	limited := func() int {
		mu.Lock()
		defer mu.Unlock()
		return codes[http.StatusTooManyRequests]
	}
	g.Eventually(limited).WithTimeout(timeout).WithPolling(poll).Should(BeNumerically(">", 0), "the flood spent the address's attempts")

	newTok, err := apikey.Issue(context.Background(), k8s, sa.Namespace, sa.Name)
	g.Expect(err).NotTo(HaveOccurred())
	// Once the manager's cache has the new key's Secret, the old key is refused.
	g.Eventually(func() int { return send(http.DefaultClient, tok) }).WithTimeout(timeout).WithPolling(poll).
		ShouldNot(Equal(http.StatusOK))
	for i := range 12 {
		code := send(http.DefaultClient, newTok)
		g.Expect(code).To(Equal(http.StatusOK), "call %d with the new key amid the flood", i)
		if i%4 == 0 {
			cs := connect(t, url, newTok, nil)
			_, err := cs.ListTools(context.Background(), nil)
			g.Expect(err).NotTo(HaveOccurred(), "a session with the new key amid the flood")
		}
	}
	stop()
	wg.Wait()
	elapsed := time.Since(start)
	after := keyComparisons(t)
	g.Expect(after).To(BeNumerically(">", 0), "the comparisons are counted")
	compared := after - before

	mu.Lock()
	defer mu.Unlock()
	g.Expect(codes[http.StatusOK]).To(BeZero(), "a wrong key got in")
	g.Expect(codes[http.StatusTooManyRequests]).To(BeNumerically(">", flooders), "the flood was hundreds of requests")
	// A refusal the API server cannot confirm in time (a loaded machine) is 503, a
	// refusal too.
	for code := range codes {
		g.Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable),
			"the flood's answers: %v", codes)
	}
	// The address's first 10 attempts, one a second that it earns back, and the new
	// key's verifications (one a change to the account or its Secret).
	g.Expect(compared).To(BeNumerically("<=", 10+elapsed.Seconds()+5),
		"%v bcrypt comparisons in %v of a flood of %d requests", compared, elapsed, codes[http.StatusTooManyRequests])
	t.Logf("%d wrong keys, %v bcrypt comparisons in %v", codes[http.StatusTooManyRequests]+codes[http.StatusUnauthorized], compared, elapsed)
}

// randomKey is a key no account has: 43 random characters, as a key has.
func randomKey() string {
	b := make([]byte, 32)
	_, _ = cryptorand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// keyComparisons is sandbar_mcp_auth_key_comparisons_total: the bcrypt comparisons
// of presented keys made in this process (-1 before the first).
func keyComparisons(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == "sandbar_mcp_auth_key_comparisons_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}

// No part of a presented key reaches the log, whatever shape the token has: a key
// sent where the service name goes, an empty service or key, a wrong key.
func TestNoPartOfAPresentedKeyIsLogged(t *testing.T) {
	g := NewWithT(t)
	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), logger))
	t.Cleanup(cancel)
	url, err := startServerIn(ctx, store, mcpserver.Options{})
	g.Expect(err).NotTo(HaveOccurred())

	secret, _, err := apikey.Generate()
	g.Expect(err).NotTo(HaveOccurred())
	service, _, _ := strings.Cut(token, ":")
	headers := []string{
		"Bearer " + secret + ":" + service, // key:service
		"Bearer " + secret + ":",           // key: (no service)
		"Bearer :" + secret,                // no service name
		"Bearer " + service + ":" + secret, // a wrong key
		"Bearer " + secret,                 // no colon
		"Basic " + secret,                  // not a bearer token
	}
	for _, h := range headers {
		resp, _ := post(t, url, map[string]string{"Authorization": h})
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), h)
	}
	mu.Lock()
	defer mu.Unlock()
	failures := 0
	for _, l := range lines {
		if strings.Contains(l, "authentication failed") {
			failures++
		}
		// Any 8 characters of the key would be a part of it.
		for i := 0; i+8 <= len(secret); i++ {
			g.Expect(l).NotTo(ContainSubstring(secret[i:i+8]), "a log line holds part of the key")
		}
	}
	g.Expect(failures).To(Equal(len(headers)), "every refusal was logged, to the logger under test: %v", lines)
}
