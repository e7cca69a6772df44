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

// Package keys authenticates requests by API key: bearer tokens checked against
// ServiceAccounts and the bcrypt hashes in their key Secrets (with a cache, a lock-out
// on any change to the account or its Secret, limits on failed guesses per client
// address, and a rate limit per account, which OAuth persons share). It hands the
// account on as package caller says. It does not check OAuth access tokens (package
// oauth), decide what the account may do (package authorize), or follow the sessions
// it opens (package sessions).
package keys

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

// authFailures counts refused requests, the OAuth route's too (CountFailure).
var authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sandbar_mcp_auth_failures_total",
	Help: "Requests refused with 401 by reason, and with 503 (reason unavailable) while a refusal could not be confirmed.",
}, []string{"reason"})

var keyComparisons = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "sandbar_mcp_auth_key_comparisons_total",
	Help: "bcrypt comparisons of presented API keys with stored hashes (with the dummy hash of an unknown or inactive service name too).",
})

func init() { metrics.Registry.MustRegister(authFailures, keyComparisons) }

// CountFailure counts a refused request by its reason, in
// sandbar_mcp_auth_failures_total.
func CountFailure(reason string) { authFailures.WithLabelValues(reason).Inc() }

// Realm is the realm of the WWW-Authenticate challenge.
const Realm = "sandbar-mcp"

// maxCachedTokens bounds the verified-token cache, and maxLimiters the per-account
// token buckets.
const (
	maxCachedTokens = 10000
	maxLimiters     = 10000
)

// authWait bounds what authenticating a request waits for: the reads of the account
// and its key Secret, and the confirmation of a refusal.
const authWait = 2 * time.Second

// unavailableRetry is the Retry-After, in seconds, of a token that could not be
// checked.
const unavailableRetry = 5

// Failed guesses of a service's key from one client address are limited: each costs
// a bcrypt comparison, unless the key's id tells it wrong at once, and guessing is
// what they are.
const (
	failedAuthBurst   = 10
	failedAuthPerSec  = 1
	maxFailureBuckets = 10000
)

// Authenticator checks "Bearer <service-name>:<api-key>" tokens against
// ServiceAccounts and the bcrypt hashes in their Secrets. bcrypt is slow by design,
// so outcomes are cached by the token's SHA-256 together with the resource versions
// of the account and its Secret: any change to either (deactivation, a new key)
// makes the next request verify again, so a lock-out takes effect at once, on open
// sessions too.
//
// A token that names a service costs one bcrypt comparison when it is not cached,
// while its client has failed attempts left, whether the service exists or not (an
// unknown or inactive one is compared with a dummy hash), so the time of an answer
// tells nothing about which services exist. Once they are spent, only a key that the
// account's Secret vouches for by its id (apikey.ID), or a key of a Secret that has
// no id, is compared: no one's guesses can lock the real key out (see
// authenticateAs). Nothing of a presented token is logged.
type Authenticator struct {
	store  *catalog.Store
	reader client.Reader
	// compare checks a key against a bcrypt hash.
	compare func(hash []byte, key string) bool

	mu sync.Mutex
	// verified holds the verdicts of tokens that verified; refused holds the others.
	// Only holders of keys add to verified, so flooding with wrong keys cannot
	// evict a real token's verdict.
	verified map[[32]byte]verdict
	refused  map[[32]byte]verdict
	// comparing shares a comparison in progress with the requests that present the
	// same token against the same account and Secret meanwhile.
	comparing singleflight.Group
	// slots hold each account's one bcrypt comparison at a time of a key its id
	// does not vouch for.
	slots    map[limiterKey]chan struct{}
	limiters map[limiterKey]*rate.Limiter
	limit    rate.Limit
	burst    int
	// failures limits wrong keys per client address and service name.
	failures *guesses
	// anonymous, when set, is the account of every request (no-auth mode), and
	// anonymousInfo its token info.
	anonymous     *catalog.Account
	anonymousInfo *auth.TokenInfo
	// confirm, when set, says whether the Kubernetes API server answers now: a
	// refusal stands only then (ConfirmRefusalsWith).
	confirm func(context.Context) error
	// api, when set, reads a refused key's Secret past the cache (ReadRefusedKeysFrom).
	api client.Reader
}

// NoAuthAccount is the account of every request in no-auth mode: allowed every tool
// in one namespace.
func NoAuthAccount(ns string) *catalog.Account {
	if ns == "" {
		ns = "default"
	}
	return &catalog.Account{Namespace: ns, Name: "anonymous", ServiceName: "anonymous", Active: true, Ready: true,
		Permissions: metav1alpha1.Permissions{Tools: []string{"*"}}}
}

// limiterKey is an account's token bucket: its namespace and name.
type limiterKey struct{ namespace, name string }

// perAccount is the account's entry of m, made by fresh when it has none. The
// table is bounded (OAuth users are as many as the issuer has): a full one is
// emptied first. The caller holds a.mu.
func perAccount[V any](m map[limiterKey]V, acct *catalog.Account, fresh func() V) V {
	key := limiterKey{acct.Namespace, acct.Name}
	v, ok := m[key]
	if !ok {
		if len(m) >= maxLimiters {
			clear(m)
		}
		v = fresh()
		m[key] = v
	}
	return v
}

type verdict struct {
	ok                  bool
	accountRV, secretRV string
	// info is the token info of a verified token's requests, made for acct (the
	// catalog's account of that snapshot): shared by those requests, read only.
	acct *catalog.Account
	info *auth.TokenInfo
}

// authFailure is why a request was refused: the reason is logged, never sent, and
// never holds any part of the presented token.
type authFailure struct {
	reason string
	// missing is true when no bearer token came at all.
	missing bool
	// limited is true when the client's failed-attempt bucket is empty, or the
	// account's comparison slot stayed taken until the request's deadline.
	limited bool
	// unavailable is true when the refusal could not be confirmed: the cache it was
	// read from may be behind.
	unavailable bool
	// secret is the key Secret the refusal was read from (no name: none was read),
	// and secretRV its resource version in the cache ("": not in the cache).
	secret   client.ObjectKey
	secretRV string
	// unknown is the namespace and service of a namespaced token whose account the
	// catalog does not have.
	unknown *apikey.Token
	// unchecked: the key is right, but its account is not checked yet.
	unchecked bool
}

// dummyHash is compared with the key of a token whose service is unknown or
// inactive: a bcrypt hash of the cost issued keys have (apikey.Cost), of no key
// anyone holds, made once at first use (should that fail, one of the default cost).
var dummyHash = sync.OnceValue(func() []byte {
	if _, hash, err := apikey.Generate(); err == nil {
		return hash
	}
	return []byte("$2a$10$QFDDjGoEwFjO8G99fruZ8OGFQqkCo4K4vgqucu/vattxloQhXJZle")
})

// NewAuthenticator checks tokens against the catalog's accounts, reading accounts and
// Secrets through reader. limit and burst size each account's token bucket (limit 0:
// none). With anonymous set, every request is that account and no token is read.
func NewAuthenticator(store *catalog.Store, reader client.Reader, limit float64, burst int, anonymous *catalog.Account) *Authenticator {
	var anonymousInfo *auth.TokenInfo
	if anonymous != nil {
		anonymousInfo = tokenInfo(anonymous, caller.Key{})
	}
	return &Authenticator{
		anonymousInfo: anonymousInfo,
		anonymous:     anonymous,
		store:         store,
		reader:        reader,
		compare:       apikey.Verify,
		verified:      map[[32]byte]verdict{},
		refused:       map[[32]byte]verdict{},
		slots:         map[limiterKey]chan struct{}{},
		limiters:      map[limiterKey]*rate.Limiter{},
		failures:      newGuesses(failedAuthPerSec, failedAuthBurst, maxFailureBuckets, time.Now),
		limit:         rate.Limit(limit),
		burst:         burst,
	}
}

// readOnly reads an object from the cache without a copy, for reading only.
var readOnly = []client.GetOption{client.UnsafeDisableDeepCopy}

// tokenInfo is the token info of an account's requests: the account, and the key
// Secret they were authenticated against.
func tokenInfo(acct *catalog.Account, key caller.Key) *auth.TokenInfo {
	return caller.TokenInfo(acct.Namespace+"/"+acct.Name, acct, key)
}

// authenticate finds the account of a request's bearer token and the key Secret it
// was checked against, as token info. at is the request's attempt of its client's
// failed-attempt bucket. The token info of a verified token is made once for each
// account and key it verifies against, and shared by their requests: nothing writes
// to it.
//
// A token "<namespace>/<service>:<key>" names one account. A token "<service>:<key>"
// (the form before namespaces) names a service name, which accounts of several
// namespaces may use: it is checked against each of them (the oldest
// catalog.MaxClaimants), first those whose cached verdict or key id vouches for it,
// so that another namespace's account that took the name first never keeps the
// real key out, and a key reaches only the account whose key it is.
func (a *Authenticator) authenticate(ctx context.Context, token apikey.Token, at *attempt) (*auth.TokenInfo, *authFailure) {
	snap := a.store.Load()
	if token.Namespace != "" {
		acct := snap.Account(token.Namespace, token.Service)
		info, failure := a.authenticateAs(ctx, acct, token, at, false)
		if acct == nil && failure != nil {
			failure.unknown = &apikey.Token{Namespace: token.Namespace, Service: token.Service}
		}
		return info, failure
	}
	claimants := snap.Shared[token.Service]
	if len(claimants) == 0 {
		return a.authenticateAs(ctx, snap.Accounts[token.Service], token, at, false)
	}
	claimants = claimants[:min(len(claimants), catalog.MaxClaimants)]
	for _, acct := range claimants {
		if info, _ := a.authenticateAs(ctx, acct, token, at, true); info != nil {
			return info, nil
		}
	}
	var refused *authFailure
	for _, acct := range claimants {
		info, failure := a.authenticateAs(ctx, acct, token, at, false)
		if info != nil {
			return info, nil
		}
		if refused == nil || failure.limited || failure.unchecked {
			refused = failure
		}
	}
	return nil, refused
}

// Allow takes one request from the account's token bucket; when it is empty it says
// how long to wait.
func (a *Authenticator) Allow(acct *catalog.Account) (bool, time.Duration) {
	if a.limit <= 0 {
		return true, 0
	}
	a.mu.Lock()
	l := perAccount(a.limiters, acct, func() *rate.Limiter { return rate.NewLimiter(a.limit, a.burst) })
	a.mu.Unlock()
	r := l.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, d
	}
	return true, 0
}
