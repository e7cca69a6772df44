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

package authserver

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// documentServer serves client id metadata documents over TLS on loopback and
// counts the requests each path gets.
type documentServer struct {
	srv   *httptest.Server
	pool  *x509.CertPool
	mu    sync.Mutex
	paths map[string]http.HandlerFunc
	hits  map[string]*atomic.Int64
}

func newDocumentServer(t *testing.T) *documentServer { return newDocumentServerAt(t, "127.0.0.1:0") }

// newDocumentServerAt is a document server listening at addr (a site apart from
// 127.0.0.1's at [::1]:0; its certificate, httptest's, is for both).
func newDocumentServerAt(t *testing.T, addr string) *documentServer {
	t.Helper()
	s := &documentServer{paths: map[string]http.HandlerFunc{}, hits: map[string]*atomic.Int64{}}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h, ok := s.paths[r.URL.Path]
		if ok {
			s.hits[r.URL.Path].Add(1)
		}
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	_ = s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.pool = x509.NewCertPool()
	s.pool.AddCert(s.srv.Certificate())
	return s
}

// handle serves h at path and returns the path's URL, the client id.
func (s *documentServer) handle(path string, h http.HandlerFunc) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths[path] = h
	s.hits[path] = &atomic.Int64{}
	return s.srv.URL + path
}

// document serves a document naming its own URL, changed by edit.
func (s *documentServer) document(path string, edit func(map[string]any)) string {
	id := s.srv.URL + path
	doc := map[string]any{
		"client_id":     id,
		"client_name":   "Example Client",
		"redirect_uris": []string{"https://client.example/callback", "http://127.0.0.1/callback"},
	}
	if edit != nil {
		edit(doc)
	}
	body, _ := json.Marshal(doc)
	return s.handle(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

func (s *documentServer) hitsOf(path string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path].Load()
}

// loopback allows the test server's address, as an admin would allow an internal one.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// newDocuments is a fetcher of the test server's documents; its one site (the
// loopback address) may be fetched from as often as a test needs unless it says.
func newDocuments(t *testing.T, s *documentServer, cfg DocumentsConfig) *ClientDocuments {
	t.Helper()
	cfg.RootCAs = s.pool
	if cfg.SiteRate == 0 {
		cfg.SiteRate, cfg.SiteBurst = rate.Inf, 1
	}
	d, err := NewClientDocuments(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAClientDocumentIsFetchedCheckedAndKept(t *testing.T) {
	s := newDocumentServer(t)
	d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: loopback})
	id := s.document("/client.json", nil)

	doc, err := d.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if doc.ClientID != id || doc.ClientName != "Example Client" || len(doc.RedirectURIs) != 2 {
		t.Errorf("document = %+v", doc)
	}
	if doc.ApplicationType != "native" {
		t.Errorf("a client with a loopback redirect URI is %q, want native", doc.ApplicationType)
	}
	if got := strings.Join(doc.GrantTypes, " "); got != "authorization_code refresh_token" {
		t.Errorf("grant types = %q, want both grants when the document names none", got)
	}
	if _, err := d.Get(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if n := s.hitsOf("/client.json"); n != 1 {
		t.Errorf("the document was fetched %d times for two requests, want once (kept)", n)
	}

	// Many requests for a new client at once share one fetch.
	id2 := s.document("/many.json", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			if _, err := d.Get(t.Context(), id2); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := s.hitsOf("/many.json"); n != 1 {
		t.Errorf("50 concurrent requests fetched the document %d times, want once", n)
	}
}

// Past its max-age a document is fetched again; until that fetch comes back it is
// served as it was.
func TestAClientDocumentIsFetchedAgainOnceItsMaxAgeHasPassed(t *testing.T) {
	s := newDocumentServer(t)
	d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: loopback})
	base := time.Now()
	now := setClock(d, base)
	body := fmt.Sprintf(`{"client_id":%q,"redirect_uris":["https://client.example/cb"]}`, s.srv.URL+"/aged.json")
	fetched := make(chan struct{}, 4)
	id := s.handle("/aged.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=120")
		_, _ = w.Write([]byte(body))
		fetched <- struct{}{}
	})
	for _, step := range []struct {
		at    time.Duration
		fetch bool
	}{{0, true}, {119 * time.Second, false}, {121 * time.Second, true}} {
		at := base.Add(step.at)
		now.Store(&at)
		if _, err := d.Get(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if step.fetch {
			select {
			case <-fetched:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s after the first fetch: not fetched", step.at)
			}
			continue
		}
		select {
		case <-fetched:
			t.Errorf("%s after the first fetch: fetched again", step.at)
		default:
		}
	}
	if n := s.hitsOf("/aged.json"); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

// setClock makes the fetcher's time what the returned value holds (a fetch in the
// background reads it too), at first t.
func setClock(d *ClientDocuments, t time.Time) *atomic.Pointer[time.Time] {
	var now atomic.Pointer[time.Time]
	now.Store(&t)
	d.now = func() time.Time { return *now.Load() }
	return &now
}

func TestKeepFor(t *testing.T) {
	for _, tc := range []struct {
		cacheControl string
		want         time.Duration
	}{
		{"", documentTTL},
		{"max-age=300", 5 * time.Minute},
		{"public, max-age=0", documentMinTTL},
		{"max-age=99999999", documentMaxTTL},
		{"no-store", documentMinTTL},
		{"max-age=3600, no-cache", documentMinTTL},
		{"max-age=abc", documentTTL},
	} {
		h := http.Header{}
		h.Set("Cache-Control", tc.cacheControl)
		if got := keepFor(h); got != tc.want {
			t.Errorf("Cache-Control %q: kept %s, want %s", tc.cacheControl, got, tc.want)
		}
	}
}

// refused asserts that err is a DocumentError whose reason holds want.
func refused(t *testing.T, err error, want string) {
	t.Helper()
	var de *DocumentError
	if !errors.As(err, &de) {
		t.Fatalf("error = %v, want a DocumentError saying %q", err, want)
	}
	if !strings.Contains(de.Reason, want) {
		t.Errorf("reason = %q, want it to say %q", de.Reason, want)
	}
}

func TestADocumentAtAPrivateAddressIsNotFetched(t *testing.T) {
	s := newDocumentServer(t)
	d := newDocuments(t, s, DocumentsConfig{})
	id := s.document("/client.json", nil)
	_, port, _ := strings.Cut(strings.TrimPrefix(s.srv.URL, "https://"), ":")

	for _, clientID := range []string{
		id, // 127.0.0.1
		"https://localhost:" + port + "/client.json", // a name that resolves to loopback
		"https://[::1]:" + port + "/client.json",
		"https://169.254.169.254/latest/meta-data", // a cloud's metadata service
		"https://10.0.0.1/client.json",
		"https://[::ffff:127.0.0.1]:" + port + "/client.json",
	} {
		_, err := d.Get(t.Context(), clientID)
		refused(t, err, "private, loopback, link-local or otherwise special")
	}
	if n := s.hitsOf("/client.json"); n != 0 {
		t.Errorf("the server was reached %d times", n)
	}
}

// A refusal is no oracle of the manager's network: whether a name resolves to an
// address the server does not fetch from, or to one where nothing answers, the
// client is told the same, and never the address; the admins' detail has it.
func TestARefusalNamesNoAddressTheHostResolvedTo(t *testing.T) {
	s := newDocumentServer(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(closed.Addr().String())
	_ = closed.Close() // nothing listens there now
	reasons := map[string]bool{}
	for _, tc := range []struct {
		name string
		cfg  DocumentsConfig
	}{
		{"a name that resolves to loopback", DocumentsConfig{}},
		{"a name that resolves where nothing listens", DocumentsConfig{AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}},
	} {
		_, err := newDocuments(t, s, tc.cfg).Get(t.Context(), "https://localhost:"+port+"/client.json")
		var de *DocumentError
		if !errors.As(err, &de) {
			t.Fatalf("%s: %v, want a DocumentError", tc.name, err)
		}
		if strings.Contains(de.Error(), "127.0.0.1") || strings.Contains(de.Error(), "::1") || strings.Contains(de.Error(), "dial") {
			t.Errorf("%s: the client is told %q", tc.name, de.Error())
		}
		if !strings.Contains(de.Detailed(), "127.0.0.1") && !strings.Contains(de.Detailed(), "::1") {
			t.Errorf("%s: the admins' detail %q names no address", tc.name, de.Detailed())
		}
		reasons[de.Reason] = true
	}
	if len(reasons) != 1 {
		t.Errorf("the refusals differ, and so tell which is which: %v", reasons)
	}
}

func TestAHostileDocumentIsRefusedWithAReason(t *testing.T) {
	s := newDocumentServer(t)
	d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: loopback})
	raw := func(contentType, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write([]byte(body))
		}
	}
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	s.document("/client.json", nil) // where the redirect below points

	for _, tc := range []struct {
		name string
		id   string
		want string
	}{
		{"oversized", s.document("/big.json", set("client_name", strings.Repeat("x", 6000))), "larger than 5120 bytes"},
		{"another client's id", s.document("/other.json", set("client_id", "https://claude.ai/oauth/client.json")), `client_id "https://claude.ai/oauth/client.json" is not its URL`},
		{"no redirect URIs", s.document("/noredirect.json", set("redirect_uris", []string{})), "names no redirect_uris"},
		{"http redirect URI", s.document("/http.json", set("redirect_uris", []string{"http://evil.example/cb"})), "not loopback; use https"},
		{"javascript redirect URI", s.document("/js.json", set("redirect_uris", []string{"javascript:alert(1)"})), "javascript: URI"},
		{"redirect URI with a fragment", s.document("/frag.json", set("redirect_uris", []string{"https://client.example/cb#x"})), "has a fragment"},
		{"a secret", s.document("/secret.json", set("client_secret", "s3cret")), "holds a client_secret"},
		{"a shared-secret method", s.document("/basic.json", set("token_endpoint_auth_method", "client_secret_basic")), `"client_secret_basic"; this server takes public clients only`},
		{"no code grant", s.document("/grants.json", set("grant_types", []string{"client_credentials"})), "does not hold authorization_code"},
		{"no code response", s.document("/implicit.json", set("response_types", []string{"token"})), "does not hold code"},
		{"a long name", s.document("/name.json", set("client_name", strings.Repeat("n", 101))), "longer than 100 characters"},
		{"not JSON", s.handle("/html", raw("text/html", "<html>")), `answered "text/html", not application/json`},
		{"malformed JSON", s.handle("/bad.json", raw("application/json", `{"client_id":`)), "not a JSON object of client metadata"},
		{"two values", s.handle("/two.json", raw("application/json", `{} {}`)), "more than one JSON value"},
		{"missing", s.srv.URL + "/missing.json", "answered 404, not 200"},
		{"a redirect", s.handle("/moved.json", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/client.json", http.StatusFound)
		}), "redirects; the document must be served at the client id itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Get(t.Context(), tc.id)
			refused(t, err, tc.want)
		})
	}
	if n := s.hitsOf("/client.json"); n != 0 {
		t.Errorf("the redirect was followed (%d fetches of its target)", n)
	}
}

func TestASlowDocumentIsAbandonedAtTheTimeout(t *testing.T) {
	s := newDocumentServer(t)
	d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: loopback, Timeout: 300 * time.Millisecond})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	// One never answers; the other sends its headers and the start of a body, then stalls.
	silent := s.handle("/silent.json", func(http.ResponseWriter, *http.Request) { <-release })
	drip := s.handle("/drip.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"client_id":`))
		w.(http.Flusher).Flush()
		<-release
	})
	for _, id := range []string{silent, drip} {
		_, err := d.Get(t.Context(), id)
		refused(t, err, "did not come within 300ms")
		// The failure is kept: asking again at once does not fetch again.
		_, err = d.Get(t.Context(), id)
		refused(t, err, "did not come within 300ms")
	}
	if a, b := s.hitsOf("/silent.json"), s.hitsOf("/drip.json"); a != 1 || b != 1 {
		t.Errorf("fetches = %d and %d, want one each", a, b)
	}
}

func TestARequestThatEndsDoesNotWaitForTheFetch(t *testing.T) {
	s := newDocumentServer(t)
	d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: loopback})
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	id := s.handle("/slow.json", func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["https://client.example/cb"]}`, s.srv.URL+"/slow.json")
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	_, err := d.Get(ctx, id)
	refused(t, err, "the request ended before the document came")
	// The fetch goes on for the requests that come next, and its document is kept.
	close(release)
	if _, err := d.Get(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if n := s.hitsOf("/slow.json"); n != 1 {
		t.Errorf("fetches = %d, want 1", n)
	}
}

// Each site's fetches are bounded, and the sites that never served a good
// document together: whoever names new URLs as client ids, on one site or on
// many, the server fetches no faster than that, and the sites of the clients it
// knows are not held up by them.
func TestFetchesAreBoundedPerSiteAndForNewSites(t *testing.T) {
	s := newDocumentServer(t)
	t.Run("a site's own", func(t *testing.T) {
		d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: loopback, SiteRate: 0.001, SiteBurst: 3})
		for i := range 3 {
			if _, err := d.Get(t.Context(), s.document(fmt.Sprintf("/c%d.json", i), nil)); err != nil {
				t.Fatal(err)
			}
		}
		_, err := d.Get(t.Context(), s.document("/c3.json", nil))
		refused(t, err, "as many documents of 127.0.0.1 as it may for now")
		var de *DocumentError
		if errors.As(err, &de) && !de.Retry {
			t.Error("a refusal for load is not marked Retry")
		}
		// A document already kept is still served.
		if _, err := d.Get(t.Context(), s.srv.URL+"/c0.json"); err != nil {
			t.Errorf("a kept document: %v", err)
		}
		if n := s.hitsOf("/c3.json"); n != 0 {
			t.Errorf("the document beyond the limit was fetched %d times", n)
		}
	})
	t.Run("new sites together, and a known site apart", func(t *testing.T) {
		other := newDocumentServerAt(t, "[::1]:0")
		d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: append(loopback, netip.MustParsePrefix("::1/128")), FetchRate: 0.001, FetchBurst: 3})
		if _, err := d.Get(t.Context(), s.document("/known.json", nil)); err != nil {
			t.Fatal(err)
		}
		// Made-up client ids on a site that serves no document, past the budget.
		for i := range 2 {
			_, err := d.Get(t.Context(), fmt.Sprintf("%s/made-up-%d.json", other.srv.URL, i))
			refused(t, err, "answered 404")
		}
		_, err := d.Get(t.Context(), other.srv.URL+"/made-up-2.json")
		refused(t, err, "as many new documents as it may for now")
		// A new client of the site the server knows is fetched all the same.
		if _, err := d.Get(t.Context(), s.document("/new-client.json", nil)); err != nil {
			t.Errorf("a new client of a known site during the flood: %v", err)
		}
	})
}

// A slow site holds one fetch at a time: it cannot fill the fetches under way
// and hold up another site's.
func TestASlowSiteCannotHoldUpAnother(t *testing.T) {
	s := newDocumentServer(t)
	slow := newDocumentServerAt(t, "[::1]:0")
	d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: append(loopback, netip.MustParsePrefix("::1/128")), MaxFetches: 2, Timeout: 5 * time.Second})
	release, started := make(chan struct{}), make(chan struct{}, 8)
	for i := range 4 {
		slow.handle(fmt.Sprintf("/slow-%d.json", i), func(http.ResponseWriter, *http.Request) { started <- struct{}{}; <-release })
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = d.Get(context.Background(), slow.srv.URL+"/slow-0.json")
	}()
	<-started
	for i := 1; i < 4; i++ {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		_, err := d.Get(ctx, fmt.Sprintf("%s/slow-%d.json", slow.srv.URL, i))
		cancel()
		refused(t, err, "fetching another document of ::1")
	}
	if _, err := d.Get(t.Context(), s.document("/client.json", nil)); err != nil {
		t.Errorf("another site's document while one site is slow: %v", err)
	}
	close(release)
	<-done
}

// A known client's document past its time is served while it is fetched again,
// so that its people's sign-ins and refreshes never wait on the fetch limits
// (spent here); a document too stale is not.
func TestAStaleDocumentIsServedWhileTheLimitsAreSpent(t *testing.T) {
	s := newDocumentServer(t)
	id := s.document("/client.json", nil)
	d := newDocuments(t, s, DocumentsConfig{AllowedPrefixes: loopback, FetchRate: 0.001, FetchBurst: 1, SiteRate: 0.001, SiteBurst: 1})
	start := time.Now()
	clock := setClock(d, start)
	if _, err := d.Get(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	stale := start.Add(documentTTL + time.Minute)
	clock.Store(&stale)
	if doc, err := d.Get(t.Context(), id); err != nil || doc.ClientID != id {
		t.Fatalf("a stale document: %v %v", doc, err)
	}
	tooStale := stale.Add(staleFor)
	clock.Store(&tooStale)
	_, err := d.Get(t.Context(), id)
	refused(t, err, "try again shortly")
}

func TestCheckClientIDURL(t *testing.T) {
	for _, tc := range []struct {
		id, want string
	}{
		{"https://claude.ai/oauth/claude-code-client-metadata", ""},
		{"https://client.example:8443/meta.json?v=1", ""},
		{"http://client.example/meta.json", "must be an https URL"},
		{"https://client.example", "must have a path"},
		{"https://client.example/", "must have a path"},
		{"https://user:pw@client.example/meta.json", "user name or password"},
		{"https://client.example/meta.json#x", "fragment"},
		{"https://client.example/a/../meta.json", ". or .. segments"},
		{"https://client.example/a/%2e%2e/meta.json", ". or .. segments"},
		{"https:///meta.json", "no host"},
		{"https://client.example/" + strings.Repeat("a", 1100), "longer than 1024 bytes"},
	} {
		err := CheckClientIDURL(tc.id)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.id, err)
			}
			continue
		}
		refused(t, err, tc.want)
	}
}
