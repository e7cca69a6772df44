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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"code.dny.dev/ssrf"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/net/publicsuffix"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
)

// DocumentsConfig bounds the fetches of client ID metadata documents. The zero
// value fetches from public addresses only, with the defaults below.
type DocumentsConfig struct {
	// AllowedPrefixes are address ranges a document may be fetched from although
	// they are private, loopback, link-local or otherwise special (RFC 6890): an
	// admin's choice, for clients whose documents are served inside their network.
	AllowedPrefixes []netip.Prefix
	// MaxBytes bounds a document (default 5 KiB, as the draft suggests).
	MaxBytes int64
	// Timeout bounds one fetch, from the dial to the document's last byte (default 5 s).
	Timeout time.Duration
	// MaxEntries bounds the documents kept, and apart from them the failures
	// (default 1000 each): no flood of failures pushes a good document out.
	MaxEntries int
	// The fetches are bounded per site (a host's registrable domain, as
	// example.com for a.example.com; an IP address is a site of its own), so that
	// no site, however slow or busy, holds up another's: one fetch of a site at a
	// time, SiteRate and SiteBurst started (default 1 a second, 10 at once). The
	// sites that never served a good document share MaxFetches under way (default
	// 4) and FetchRate and FetchBurst started (default 2 a second, 20 at once):
	// whoever names new sites as client ids, the server fetches no faster than
	// that, and the sites of the clients it knows (MaxFetches more of theirs at
	// once) are not held up by them.
	MaxFetches int
	FetchRate  rate.Limit
	FetchBurst int
	SiteRate   rate.Limit
	SiteBurst  int
	// RootCAs verify the documents' servers (nil: the system's roots).
	RootCAs *x509.CertPool
}

// Defaults of DocumentsConfig.
const (
	DefaultDocumentMaxBytes   = 5 << 10
	DefaultDocumentTimeout    = 5 * time.Second
	DefaultDocumentMaxEntries = 1000
	DefaultDocumentMaxFetches = 4
	DefaultDocumentFetchRate  = rate.Limit(2)
	DefaultDocumentFetchBurst = 20
	DefaultDocumentSiteRate   = rate.Limit(1)
	DefaultDocumentSiteBurst  = 10
)

// How long a document is kept: its Cache-Control max-age, within these bounds,
// or documentTTL when it names none; after that, for staleFor more, it is served
// while it is fetched again (a known client's sign-in and refresh never wait on
// the fetch limits). A failure is kept failureTTL, so that a client retrying at
// once does not make the server fetch again.
const (
	documentTTL    = 10 * time.Minute
	documentMinTTL = time.Minute
	documentMaxTTL = 24 * time.Hour
	staleFor       = 24 * time.Hour
	failureTTL     = 30 * time.Second
)

// Bounds of what a document may hold.
const (
	maxClientIDBytes    = 1024
	maxRedirectURIs     = 20
	maxRedirectURIBytes = 2048
	maxClientNameRunes  = 100
)

// ClientDocument is a client's metadata (RFC 7591) as its client ID metadata
// document states it, checked: it names its own URL as client_id, it is a public
// client (token_endpoint_auth_method none, no secret), it asks for the
// authorization code grant, and its redirect URIs are absolute URIs that an
// authorization request must name exactly.
type ClientDocument struct {
	ClientID     string   `json:"client_id"`
	ClientName   string   `json:"client_name,omitempty"`
	ClientURI    string   `json:"client_uri,omitempty"`
	RedirectURIs []string `json:"redirect_uris"`
	// GrantTypes are the grants of those the server issues that the document
	// asks for: authorization_code, and refresh_token when it asks for it (or
	// names no grant types).
	GrantTypes []string `json:"grant_types,omitempty"`
	// ApplicationType is native or web, as the document says; when it says
	// nothing, native if a redirect URI is a loopback or private-use one (RFC
	// 8252), else web.
	ApplicationType string `json:"application_type,omitempty"`
	Scope           string `json:"scope,omitempty"`
}

// documentWire is a document as it is served, with what a document must not hold.
type documentWire struct {
	ClientDocument
	ResponseTypes           []string        `json:"response_types"`
	TokenEndpointAuthMethod string          `json:"token_endpoint_auth_method"`
	ClientSecret            json.RawMessage `json:"client_secret"`
	ClientSecretExpiresAt   json.RawMessage `json:"client_secret_expires_at"`
}

// DocumentError says why a client ID metadata document was not taken: what an
// authorization server answers as invalid_client, and logs.
type DocumentError struct {
	ClientID string
	Reason   string
	// Detail is what only the server's admins see (the status, the log): the
	// error behind a failed fetch, which may name an address the host resolved to.
	Detail string
	// Retry is true when the server was too busy to fetch: nothing is wrong with
	// the document, and the failure is not kept.
	Retry bool
}

func (e *DocumentError) Error() string {
	return fmt.Sprintf("client id metadata document %s: %s", e.ClientID, e.Reason)
}

// Detailed is the error with its detail, for the server's admins.
func (e *DocumentError) Detailed() string {
	if e.Detail == "" {
		return e.Error()
	}
	return e.Error() + " (" + e.Detail + ")"
}

// ClientDocuments fetches the client ID metadata documents of clients whose
// client id is an HTTPS URL (draft-ietf-oauth-client-id-metadata-document),
// checks them and keeps them for a while. It never follows a redirect, never
// connects to an address the configuration does not allow (the check is made on
// the address dialed, so a name that resolves to a private address is refused
// too), and never goes through a proxy (whose address would be checked instead
// of the document's). It is safe for concurrent use; concurrent requests for one
// URL share one fetch.
type ClientDocuments struct {
	cfg    DocumentsConfig
	client *http.Client
	// limiter and slots bound the fetches of sites not known, known's of the sites
	// that served a good document; sites holds each site's own bounds.
	limiter      *rate.Limiter
	slots, known chan struct{}
	sites        *lru.Cache[string, *site]
	good         *lru.Cache[string, struct{}]
	group        singleflight.Group
	now          func() time.Time
	// kept holds documents until they are too stale to serve, failures the
	// failures until they expire (each locks itself).
	kept, failures *lru.Cache[string, keptDocument]
	last           atomic.Pointer[Fetch]
}

// site is the bounds of one site's fetches: one at a time, at its rate.
type site struct {
	busy    atomic.Bool
	limiter *rate.Limiter
}

// Fetch is how a fetch of a document went: Err is nil when it was read and checked.
type Fetch struct {
	At       time.Time
	ClientID string
	Err      *DocumentError
}

// Last is the last fetch, nil before the first.
func (d *ClientDocuments) Last() *Fetch { return d.last.Load() }

type keptDocument struct {
	doc     *ClientDocument
	err     *DocumentError
	expires time.Time
}

// NewClientDocuments makes a fetcher bounded as cfg says.
func NewClientDocuments(cfg DocumentsConfig) (*ClientDocuments, error) {
	orDefault(&cfg.MaxBytes, DefaultDocumentMaxBytes)
	orDefault(&cfg.Timeout, DefaultDocumentTimeout)
	orDefault(&cfg.MaxEntries, DefaultDocumentMaxEntries)
	orDefault(&cfg.MaxFetches, DefaultDocumentMaxFetches)
	orDefault(&cfg.FetchBurst, DefaultDocumentFetchBurst)
	orDefault(&cfg.SiteBurst, DefaultDocumentSiteBurst)
	orDefault(&cfg.FetchRate, DefaultDocumentFetchRate)
	orDefault(&cfg.SiteRate, DefaultDocumentSiteRate)
	var v4, v6 []netip.Prefix
	for _, p := range cfg.AllowedPrefixes {
		if !p.IsValid() {
			return nil, fmt.Errorf("allowed prefix %q is not a valid address range", p)
		}
		if p.Addr().Is4() {
			v4 = append(v4, p.Masked())
		} else {
			v6 = append(v6, p.Masked())
		}
	}
	guard := ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4...), ssrf.WithAllowedV6Prefixes(v6...))
	dialer := &net.Dialer{Timeout: cfg.Timeout, Control: guard.Safe}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	// lru.New fails only for a size below one, which the defaults rule out.
	kept, _ := lru.New[string, keptDocument](cfg.MaxEntries)
	failures, _ := lru.New[string, keptDocument](cfg.MaxEntries)
	sites, _ := lru.New[string, *site](4 * cfg.MaxEntries)
	good, _ := lru.New[string, struct{}](cfg.MaxEntries)
	return &ClientDocuments{
		cfg: cfg,
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errRedirect
			},
		},
		limiter:  rate.NewLimiter(cfg.FetchRate, cfg.FetchBurst),
		slots:    make(chan struct{}, cfg.MaxFetches),
		known:    make(chan struct{}, cfg.MaxFetches),
		sites:    sites,
		good:     good,
		now:      time.Now,
		kept:     kept,
		failures: failures,
	}, nil
}

var errRedirect = errors.New("redirect")

// CheckClientIDURL checks the shape of a client id that is a URL: https, a host,
// a path other than "/" without dot segments, no user info and no fragment.
func CheckClientIDURL(clientID string) error {
	fail := func(reason string) error { return &DocumentError{ClientID: clientID, Reason: reason} }
	if len(clientID) > maxClientIDBytes {
		return fail(fmt.Sprintf("the URL is longer than %d bytes", maxClientIDBytes))
	}
	u, err := url.Parse(clientID)
	if err != nil {
		return fail("the client id is not a URL")
	}
	switch {
	case u.Scheme != "https" || u.Opaque != "":
		return fail("a client id URL must be an https URL")
	case u.Hostname() == "":
		return fail("the URL has no host")
	case u.User != nil:
		return fail("the URL must not hold a user name or password")
	case strings.Contains(clientID, "#"):
		return fail("the URL must not have a fragment")
	case u.Path == "" || u.Path == "/":
		return fail("the URL must have a path (the document's)")
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if s, err := url.PathUnescape(seg); err != nil || s == "." || s == ".." {
			return fail("the URL's path must not have . or .. segments")
		}
	}
	return nil
}

// Get is the checked document of a client id that is a URL: kept, or fetched
// now. It waits for a fetch no longer than ctx lets it; the fetch itself is
// bounded by the configured timeout whoever waits for it.
func (d *ClientDocuments) Get(ctx context.Context, clientID string) (*ClientDocument, error) {
	if err := CheckClientIDURL(clientID); err != nil {
		return nil, err
	}
	k, fresh := d.lookup(clientID)
	if fresh {
		return k.result()
	}
	ch := d.group.DoChan(clientID, func() (any, error) {
		if k, fresh := d.lookup(clientID); fresh {
			return k, nil
		}
		k := d.fetch(context.WithoutCancel(ctx), clientID)
		switch {
		case k.err == nil:
			d.kept.Add(clientID, k)
			d.failures.Remove(clientID)
		case !k.err.Retry:
			d.failures.Add(clientID, k)
			d.kept.Remove(clientID)
		}
		d.last.Store(&Fetch{At: d.now(), ClientID: clientID, Err: k.err})
		return k, nil
	})
	if k.doc != nil {
		return k.doc, nil // stale: served while it is fetched again
	}
	select {
	case <-ctx.Done():
		return nil, &DocumentError{ClientID: clientID, Reason: "the request ended before the document came: " + context.Cause(ctx).Error(), Retry: true}
	case r := <-ch:
		return r.Val.(keptDocument).result()
	}
}

func (k keptDocument) result() (*ClientDocument, error) {
	if k.err != nil {
		return nil, k.err
	}
	return k.doc, nil
}

// lookup is what is kept of a client id: fresh, a document or failure within its
// time; or a document past it but within staleFor, which may be served while it
// is fetched again; or nothing.
func (d *ClientDocuments) lookup(clientID string) (k keptDocument, fresh bool) {
	now := d.now()
	if k, ok := d.kept.Get(clientID); ok {
		switch {
		case now.Before(k.expires):
			return k, true
		case now.Before(k.expires.Add(staleFor)):
			return k, false
		}
	}
	if k, ok := d.failures.Get(clientID); ok && now.Before(k.expires) {
		return k, true
	}
	return keptDocument{}, false
}

// siteOf is the site of a client id that CheckClientIDURL took: its host's
// registrable domain, or the host when it has none (an IP address, a name under
// a public suffix alone).
func siteOf(clientID string) string {
	u, _ := url.Parse(clientID)
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if domain, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return domain
	}
	return host
}

// getOrAdd is what c holds for key, or what fresh makes, added: of callers that
// add one at once, all get the first added.
func getOrAdd[V any](c *lru.Cache[string, V], key string, fresh func() V) V {
	v, ok := c.Get(key)
	if !ok {
		v = fresh()
		if prev, found, _ := c.PeekOrAdd(key, v); found {
			v = prev
		}
	}
	return v
}

// fetch fetches and checks a document, within the server's bounds.
func (d *ClientDocuments) fetch(ctx context.Context, clientID string) keptDocument {
	failed := func(reason string) keptDocument {
		return keptDocument{err: &DocumentError{ClientID: clientID, Reason: reason}, expires: d.now().Add(failureTTL)}
	}
	unreachable := func(err error) keptDocument {
		k := failed(fetchFailure(err, d.cfg.Timeout))
		k.err.Detail = unwrapAll(err).Error()
		return k
	}
	busy := func(reason string) keptDocument {
		return keptDocument{err: &DocumentError{ClientID: clientID, Reason: reason, Retry: true}}
	}
	name := siteOf(clientID)
	// The site's bounds are made at its first fetch.
	st := getOrAdd(d.sites, name, func() *site { return &site{limiter: rate.NewLimiter(d.cfg.SiteRate, d.cfg.SiteBurst)} })
	if !st.busy.CompareAndSwap(false, true) {
		return busy("the server is fetching another document of " + name + "; try again")
	}
	defer st.busy.Store(false)
	_, known := d.good.Get(name)
	slots := d.slots
	if known {
		slots = d.known
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	default:
		return busy("the server is fetching as many documents as it may at once; try again")
	}
	if !st.limiter.Allow() {
		return busy("the server has fetched as many documents of " + name + " as it may for now; try again shortly")
	}
	if !known && !d.limiter.Allow() {
		return busy("the server has fetched as many new documents as it may for now; try again shortly")
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return failed("the URL cannot be fetched: " + err.Error())
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return unreachable(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return failed(fmt.Sprintf("its URL answered %d, not 200", resp.StatusCode))
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return failed(fmt.Sprintf("its URL answered %q, not application/json", resp.Header.Get("Content-Type")))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxBytes+1))
	if err != nil {
		return unreachable(err)
	}
	if int64(len(body)) > d.cfg.MaxBytes {
		return failed(fmt.Sprintf("the document is larger than %d bytes", d.cfg.MaxBytes))
	}
	doc, reason := parseDocument(clientID, body)
	if reason != "" {
		return failed(reason)
	}
	d.good.Add(name, struct{}{})
	return keptDocument{doc: doc, expires: d.now().Add(keepFor(resp.Header))}
}

// fetchFailure says why a fetch failed, in words a client's developer can act on
// and that tell nothing of the manager's network: no address a name resolved to,
// and the same words whether the name does not resolve, resolves to an address
// the server does not fetch from, or refuses the connection (else a refusal is an
// oracle of the names the manager's resolver knows and what answers there).
func fetchFailure(err error, timeout time.Duration) string {
	var (
		netErr   net.Error
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, errRedirect):
		return "its URL redirects; the document must be served at the client id itself"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("the document did not come within %s", timeout)
	case errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return "its host's TLS certificate is not valid for it, or not signed by an authority the server trusts"
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedNetwork), isDialFailure(err):
		return "its host cannot be reached at a public address: the name does not resolve, resolves to a private, " +
			"loopback, link-local or otherwise special address (the server does not fetch from those), or refuses the connection"
	}
	return "the document could not be read from its host: the connection failed"
}

// isDialFailure is true of an error in finding or connecting to the host.
func isDialFailure(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	return errors.As(err, &dnsErr) || errors.As(err, &opErr) && opErr.Op == "dial"
}

// unwrapAll is the innermost error, without the URL and method the HTTP client
// puts around it.
func unwrapAll(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// keepFor is how long a document is kept: its max-age within the bounds, the
// least for no-store or no-cache, the default without either.
func keepFor(h http.Header) time.Duration {
	ttl := documentTTL
	for _, directive := range strings.Split(h.Get("Cache-Control"), ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(directive), "=")
		switch strings.ToLower(name) {
		case "no-store", "no-cache":
			return documentMinTTL
		case "max-age":
			if secs, err := strconv.ParseInt(strings.Trim(value, `"`), 10, 64); err == nil && secs >= 0 {
				ttl = time.Duration(min(secs, int64(documentMaxTTL/time.Second))) * time.Second
			}
		}
	}
	return min(max(ttl, documentMinTTL), documentMaxTTL)
}

// parseDocument reads and checks a document; the reason is empty when it is good.
func parseDocument(clientID string, body []byte) (*ClientDocument, string) {
	var w documentWire
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return nil, "the document is not a JSON object of client metadata: " + err.Error()
	}
	if dec.More() {
		return nil, "the document holds more than one JSON value"
	}
	if w.ClientID != clientID {
		return nil, fmt.Sprintf("the document's client_id %q is not its URL", w.ClientID)
	}
	return checkClientMetadata(&w, "the document")
}

// checkClientMetadata checks the metadata of a public client (a document's, or a
// registration's) and fills its defaults; what names it is the subject of the
// reasons ("the document names no redirect_uris").
func checkClientMetadata(w *documentWire, what string) (*ClientDocument, string) {
	doc := w.ClientDocument
	switch {
	case len(w.ClientSecret) > 0 || len(w.ClientSecretExpiresAt) > 0:
		return nil, what + " holds a client_secret: this server takes public clients only, which have none"
	case w.TokenEndpointAuthMethod != "" && w.TokenEndpointAuthMethod != "none":
		return nil, fmt.Sprintf("token_endpoint_auth_method is %q; this server takes public clients only (none)", w.TokenEndpointAuthMethod)
	case w.ResponseTypes != nil && !slices.Contains(w.ResponseTypes, "code"):
		return nil, "response_types does not hold code, the only response type this server issues"
	case len(doc.RedirectURIs) == 0:
		return nil, what + " names no redirect_uris"
	case len(doc.RedirectURIs) > maxRedirectURIs:
		return nil, fmt.Sprintf("%s names %d redirect_uris, more than %d", what, len(doc.RedirectURIs), maxRedirectURIs)
	case len([]rune(doc.ClientName)) > maxClientNameRunes:
		return nil, fmt.Sprintf("client_name is longer than %d characters", maxClientNameRunes)
	case doc.ApplicationType != "" && doc.ApplicationType != "web" && doc.ApplicationType != "native":
		return nil, fmt.Sprintf("application_type is %q, not web or native", doc.ApplicationType)
	}
	native := false
	for _, uri := range doc.RedirectURIs {
		kind, reason := redirectURIKind(uri)
		if reason != "" {
			return nil, fmt.Sprintf("redirect_uris: %q %s", uri, reason)
		}
		native = native || kind != "https"
	}
	if doc.GrantTypes == nil {
		doc.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	if !slices.Contains(doc.GrantTypes, "authorization_code") {
		return nil, "grant_types does not hold authorization_code, the grant this server issues to such clients"
	}
	doc.GrantTypes = slices.DeleteFunc(slices.Clone(doc.GrantTypes), func(g string) bool {
		return g != "authorization_code" && g != "refresh_token"
	})
	if doc.ApplicationType == "" {
		doc.ApplicationType = "web"
		if native {
			doc.ApplicationType = "native"
		}
	}
	return &doc, ""
}

// refusedSchemes are schemes no redirect may take a browser to.
var refusedSchemes = []string{"javascript", "data", "vbscript", "file", "about", "blob", "filesystem", "ws", "wss", "ftp"}

// redirectURIKind is https, loopback (http on a loopback address, RFC 8252 7.3)
// or private-use (a scheme of the client's own, RFC 8252 7.1); or the reason a
// URI is none of them.
func redirectURIKind(uri string) (kind, reason string) {
	if len(uri) > maxRedirectURIBytes {
		return "", fmt.Sprintf("is longer than %d bytes", maxRedirectURIBytes)
	}
	u, err := url.Parse(uri)
	switch {
	case err != nil || !u.IsAbs():
		return "", "is not an absolute URI"
	case u.Fragment != "" || strings.Contains(uri, "#"):
		return "", "has a fragment"
	case u.User != nil:
		return "", "holds a user name or password"
	}
	switch scheme := strings.ToLower(u.Scheme); {
	case scheme == "https":
		if u.Hostname() == "" {
			return "", "has no host"
		}
		return "https", ""
	case scheme == "http":
		host := u.Hostname()
		if ip, err := netip.ParseAddr(host); host != "localhost" && (err != nil || !ip.IsLoopback()) {
			return "", "is http on a host that is not loopback; use https"
		}
		return "loopback", ""
	case slices.Contains(refusedSchemes, scheme):
		return "", "takes the browser to a " + scheme + ": URI"
	}
	return "private-use", ""
}
