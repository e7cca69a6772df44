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

package keys

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

func TestDummyHashCostsWhatARealOneDoes(t *testing.T) {
	cost, err := bcrypt.Cost(dummyHash())
	if err != nil {
		t.Fatalf("the dummy hash is no bcrypt hash: %v", err)
	}
	if cost != apikey.Cost {
		t.Errorf("the dummy hash has cost %d, issued keys %d", cost, apikey.Cost)
	}
}

// An unknown or inactive service name costs the same bcrypt comparison as a wrong
// key for a real one, so the time of a 401 tells nothing about which services exist.
func TestUnknownServiceCostsTheSameBcryptWorkAsAWrongKey(t *testing.T) {
	key, a := authenticatorWithAccounts(t)
	var compared atomic.Int32
	a.compare = func(hash []byte, key string) bool {
		compared.Add(1)
		return apikey.Verify(hash, key)
	}
	handler := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	code := func(tok string) int {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/mcp", strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Code
	}
	for _, tc := range []struct{ desc, token string }{
		{"wrong key", "claude:" + key + "x"},
		{"unknown service", "nobody:" + key},
		{"inactive account", "sleepy:" + key},
	} {
		before := compared.Load()
		if got := code(tc.token); got != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", tc.desc, got)
		}
		if n := compared.Load() - before; n != 1 {
			t.Errorf("%s: %d bcrypt comparisons, want 1", tc.desc, n)
		}
	}
	if got := code("claude:" + key); got != http.StatusOK {
		t.Errorf("the right key: %d, want 200", got)
	}
}

// A burst of requests with one token that the cache cannot answer (the account or
// its Secret just changed) makes one bcrypt comparison, not one per request: the
// others wait for its verdict. A flood of requests in flight cannot multiply the
// server's bcrypt work.
func TestConcurrentRequestsWithOneTokenMakeOneBcryptComparison(t *testing.T) {
	key, a := authenticatorWithAccounts(t)
	const requests = 20
	var compared atomic.Int32
	all := make(chan struct{})
	a.compare = func(hash []byte, key string) bool {
		if compared.Add(1) == requests {
			close(all)
		}
		// Held until every request has come this far, or a second: long enough for
		// the others to reach the cache and the comparison in progress.
		select {
		case <-all:
		case <-time.After(time.Second):
		}
		return apikey.Verify(hash, key)
	}
	handler := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	codes := make(chan int, requests)
	for range requests {
		go func() {
			r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/mcp", strings.NewReader("{}"))
			r.Header.Set("Authorization", "Bearer claude:"+key)
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)
			codes <- w.Code
		}()
	}
	for range requests {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a request with the right key: %d, want 200", code)
		}
	}
	if n := compared.Load(); n != 1 {
		t.Errorf("%d requests with one token made %d bcrypt comparisons, want 1", requests, n)
	}
}

// A refusal stands only while the API server answers: before that, the cache the
// account and its key were read from may be behind, and every refused token, whatever
// the reason, gets 503 with Retry-After, counted as a failed attempt all the same. A
// token that verifies needs no confirmation.
func TestARefusalTheAPIServerCannotConfirmIsUnavailable(t *testing.T) {
	key, a := authenticatorWithAccounts(t)
	var down atomic.Bool
	var asked atomic.Int32
	a.ConfirmRefusalsWith(func(ctx context.Context) error {
		asked.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the confirmation is asked without a deadline")
		}
		if down.Load() {
			return errors.New("the Kubernetes API server does not answer")
		}
		return nil
	})
	handler := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	post := func(tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/mcp", strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w
	}
	if w := post("claude:" + key + "x"); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong key while the API server answers: %d, want 401", w.Code)
	}
	down.Store(true)
	for _, tok := range []string{"claude:" + key + "y", "nobody:" + key, "sleepy:" + key} {
		w := post(tok)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "5" ||
			!strings.Contains(w.Body.String(), `"error":"server unavailable`) || w.Header().Get("WWW-Authenticate") != "" {
			t.Errorf("a refused token while the API server does not answer: %d, Retry-After %q, %s",
				w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	before := asked.Load()
	if w := post("claude:" + key); w.Code != http.StatusOK {
		t.Errorf("the right key while the API server does not answer: %d, want 200", w.Code)
	}
	if asked.Load() != before {
		t.Error("a token that verified was confirmed with the API server")
	}
	// The attempts count: the client's failed-attempt bucket empties as for 401s.
	limited := false
	for range 3 * failedAuthBurst {
		if post("claude:"+key+"z").Code == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("failed attempts while the API server does not answer are not limited")
	}
}

// Before the catalog's first build every account is unknown: a token is not called
// invalid then.
func TestATokenBeforeTheCatalogIsBuiltIsUnavailable(t *testing.T) {
	reader := fake.NewClientBuilder().Build()
	a := NewAuthenticator(catalog.NewStore(), reader, 0, 0, nil)
	handler := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer claude:key")
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("a token before the catalog is built: %d, want 503", w.Code)
	}
}

// authenticatorWithAccounts is an authenticator over a fake cluster holding the
// account "claude" (active, with a fresh key, which it returns, in a Secret without
// the key's id) and the inactive "sleepy".
func authenticatorWithAccounts(t *testing.T) (string, *Authenticator) {
	t.Helper()
	c := newCluster(t, false)
	return c.key, c.a
}

// cluster is an authenticator over a fake cluster holding the account "claude"
// (active, its key hashed at bcrypt's least cost) and the inactive "sleepy".
type cluster struct {
	t      *testing.T
	a      *Authenticator
	reader client.Client
	sa     *metav1alpha1.ServiceAccount
	// key is claude's key.
	key string
}

// newCluster makes the cluster; withID stores the key's id beside its hash.
func newCluster(t *testing.T, withID bool) *cluster {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := metav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sa := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claude"},
		Spec:       metav1alpha1.ServiceAccountSpec{ServiceName: "claude", APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "claude-key"}},
	}
	c := &cluster{t: t, sa: sa, reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(sa).Build()}
	key, secret := c.newKey(withID)
	if err := c.reader.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	c.key = key
	store := catalog.NewStore()
	store.Publish(&catalog.Snapshot{Classes: map[string]*catalog.Class{}, Properties: map[string]*catalog.Property{},
		Workflows: map[string]*catalog.Workflow{}, Accounts: map[string]*catalog.Account{
			"claude": {Namespace: "default", Name: "claude", ServiceName: "claude", Active: true, Ready: true},
			"sleepy": {Namespace: "default", Name: "sleepy", ServiceName: "sleepy", Active: false, Ready: true},
		}})
	c.a = NewAuthenticator(store, c.reader, 0, 0, nil)
	c.a.failures = frozenGuesses()
	return c
}

// frozenGuesses is a failed-attempt limiter whose clock stands still: no attempt is
// earned back while a test runs, however slowly.
func frozenGuesses() *guesses {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	return newGuesses(failedAuthPerSec, failedAuthBurst, maxFailureBuckets, clock.now)
}

// newKey makes a key and its Secret (with the key's id when withID).
func (c *cluster) newKey(withID bool) (string, *corev1.Secret) {
	key, _, err := apikey.Generate()
	if err != nil {
		c.t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(key), bcrypt.MinCost)
	if err != nil {
		c.t.Fatal(err)
	}
	id := ""
	if withID {
		id = apikey.ID(key)
	}
	return key, apikey.Secret(c.sa, hash, id)
}

// reissue gives claude a new key, and returns it; with staleID, the Secret keeps the
// old key's id (a hash written by hand without its id).
func (c *cluster) reissue(staleID bool) string {
	key, want := c.newKey(true)
	var secret corev1.Secret
	if err := c.reader.Get(context.Background(), client.ObjectKeyFromObject(want), &secret); err != nil {
		c.t.Fatal(err)
	}
	secret.Data[apikey.DefaultKey] = want.Data[apikey.DefaultKey]
	if !staleID {
		secret.Data[apikey.DefaultIDKey] = want.Data[apikey.DefaultIDKey]
	}
	if err := c.reader.Update(context.Background(), &secret); err != nil {
		c.t.Fatal(err)
	}
	c.key = key
	return key
}

// code is the status of a request with a token, from the address 192.0.2.1.
func (c *cluster) code(tok string) int {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	c.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})).ServeHTTP(w, r)
	return w.Code
}

// limit spends the address's failed attempts on claude with wrong keys.
func (c *cluster) limit() {
	for i := 0; ; i++ {
		if i > 3*failedAuthBurst {
			c.t.Fatal("wrong keys are not limited")
		}
		if c.code("claude:"+wrongKey()) == http.StatusTooManyRequests {
			return
		}
	}
}

// wrongKey is a key no account has: 43 random characters, as a key has.
func wrongKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// countComparisons counts the authenticator's bcrypt comparisons, and the most in
// progress at once.
func (c *cluster) countComparisons() (compared, most *atomic.Int32) {
	compared, most = &atomic.Int32{}, &atomic.Int32{}
	var now atomic.Int32
	c.a.compare = func(hash []byte, key string) bool {
		compared.Add(1)
		n := now.Add(1)
		defer now.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return apikey.Verify(hash, key) // bcrypt: long enough for comparisons to overlap if they may
	}
	return compared, most
}

// Once a client address has spent its failed attempts on a service, a wrong key costs
// no bcrypt comparison (429), while the real key is still compared, and let in,
// where no cached verdict vouches for it (after a new key, a restart, any change to
// the account): the id stored beside the hash does. A wrong key from the same
// address (as everyone's behind one Ingress) never makes the real key be refused.
func TestAKeyItsIDVouchesForIsVerifiedWhileItsAddressIsLimited(t *testing.T) {
	c := newCluster(t, true)
	compared, _ := c.countComparisons()
	c.limit()
	before := compared.Load()
	for range 100 {
		if got := c.code("claude:" + wrongKey()); got != http.StatusTooManyRequests {
			t.Fatalf("a wrong key from a limited address: %d, want 429", got)
		}
	}
	if n := compared.Load() - before; n != 0 {
		t.Errorf("100 wrong keys from a limited address cost %d bcrypt comparisons, want 0", n)
	}
	for range 3 {
		key := c.reissue(false)
		before = compared.Load()
		for i := range 3 {
			if got := c.code("claude:" + key); got != http.StatusOK {
				t.Fatalf("a new key, request %d, from the limited address: %d, want 200", i, got)
			}
			if got := c.code("claude:" + wrongKey()); got != http.StatusTooManyRequests {
				t.Fatalf("a wrong key between: %d, want 429", got)
			}
		}
		if n := compared.Load() - before; n != 1 {
			t.Errorf("the new key and the wrong keys between cost %d bcrypt comparisons, want 1", n)
		}
	}
}

// An id that a hash was written without (an older key's, left by whoever wrote the
// new hash by hand) costs the real key nothing while its client has failed attempts
// left: the key is compared as it was before ids, and once verified, its verdict is
// cached.
func TestAStaleIDDoesNotLockTheRealKeyOut(t *testing.T) {
	c := newCluster(t, true)
	key := c.reissue(true)
	for i := range 3 {
		if got := c.code("claude:" + key); got != http.StatusOK {
			t.Fatalf("the real key behind a stale id, request %d: %d, want 200", i, got)
		}
	}
	c.limit()
	if got := c.code("claude:" + key); got != http.StatusOK {
		t.Errorf("the real key behind a stale id, verified before, from a limited address: %d, want 200", got)
	}
}

// A Secret without an id (written before ids) cannot vouch for the real key: while
// its client is limited, a key is still compared, one comparison at a time for the
// account, waiting within the request's deadline. A flood of guesses from the real
// key's own address neither locks the real key out nor costs more than one bcrypt
// comparison at a time.
func TestASecretWithoutAnIDIsComparedOneAtATimeWhileItsAddressIsLimited(t *testing.T) {
	c := newCluster(t, false)
	_, most := c.countComparisons()
	c.limit()
	key := c.reissue(true) // a new hash, and no id
	var wg sync.WaitGroup
	refused := atomic.Int32{}
	for range 50 {
		wg.Go(func() {
			if c.code("claude:"+wrongKey()) == http.StatusTooManyRequests {
				refused.Add(1)
			}
		})
	}
	got := c.code("claude:" + key)
	wg.Wait()
	if got != http.StatusOK {
		t.Errorf("the real key amid a flood from its address: %d, want 200", got)
	}
	if refused.Load() != 50 {
		t.Errorf("%d of 50 wrong keys got 429", refused.Load())
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d bcrypt comparisons at once for one account, want 1", m)
	}
}

// A service name that accounts of two namespaces use: a token without a namespace is
// checked against both, and reaches only the account whose key it is, at the cost of
// one comparison when the key's id vouches for it; a namespaced token names one
// account, and another namespace's key in it is refused.
func TestATokenOfASharedServiceNameReachesOnlyItsOwnAccount(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := metav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{}
	keys := map[string]string{}
	var claimants []*catalog.Account
	for _, ns := range []string{"team-b", "team-a"} { // team-b's is the older
		sa := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: "robot", APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "agent-key"}}}
		key := wrongKey()
		hash, err := bcrypt.GenerateFromPassword([]byte(key), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		keys[ns] = key
		objs = append(objs, sa, apikey.Secret(sa, hash, apikey.ID(key)))
		claimants = append(claimants, &catalog.Account{Namespace: ns, Name: "agent", ServiceName: "robot", Active: true, Ready: true})
	}
	store := catalog.NewStore()
	store.Publish(&catalog.Snapshot{Classes: map[string]*catalog.Class{}, Properties: map[string]*catalog.Property{},
		Workflows: map[string]*catalog.Workflow{}, Accounts: map[string]*catalog.Account{"robot": claimants[0]},
		Shared: map[string][]*catalog.Account{"robot": claimants}})
	c := &cluster{t: t, a: NewAuthenticator(store, fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), 0, 0, nil)}
	c.a.failures = frozenGuesses()
	compared, _ := c.countComparisons()
	var got *catalog.Account
	handler := c.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = caller.Of(&mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context())})
	}))
	as := func(tok string) string {
		got = nil
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/mcp", strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+tok)
		handler.ServeHTTP(httptest.NewRecorder(), r)
		if got == nil {
			return ""
		}
		return got.Namespace
	}
	for _, ns := range []string{"team-a", "team-b"} {
		before := compared.Load()
		if acct := as("robot:" + keys[ns]); acct != ns {
			t.Errorf("%s's key without a namespace acts as %q", ns, acct)
		}
		if n := compared.Load() - before; n != 1 {
			t.Errorf("%s's key without a namespace cost %d comparisons, want 1", ns, n)
		}
		if acct := as(ns + "/robot:" + keys[ns]); acct != ns {
			t.Errorf("%s's namespaced key acts as %q", ns, acct)
		}
	}
	if acct := as("team-a/robot:" + keys["team-b"]); acct != "" {
		t.Errorf("team-b's key named as team-a's acts as %q", acct)
	}
	if acct := as("robot:" + wrongKey()); acct != "" {
		t.Errorf("a wrong key acts as %q", acct)
	}
}
