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
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
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
}

// dummyHash is compared with the key of a token whose service is unknown or
// inactive: a bcrypt hash of the cost apikey.Generate uses, of no key anyone holds.
var dummyHash = []byte("$2a$10$QFDDjGoEwFjO8G99fruZ8OGFQqkCo4K4vgqucu/vattxloQhXJZle")

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

// ConfirmRefusalsWith makes the refusal of a token that names a service stand only
// when confirm, asked within the request's authentication deadline, says that the
// Kubernetes API server answers. The catalog's accounts and their key Secrets come
// from the manager's cache, which is behind while the API server does not answer:
// a key issued just before it stopped, or an account created then, is not in it, and
// would be called invalid. Such a token gets 503 with Retry-After instead (as every
// refused token does before the catalog's first build), whatever the reason of the
// refusal, so the answer tells nothing more about the token than a 401 would; the
// failed attempt counts all the same. Call it before serving.
func (a *Authenticator) ConfirmRefusalsWith(confirm func(context.Context) error) {
	a.confirm = confirm
}

// ReadRefusedKeysFrom makes the refusal of a key stand only when api, the API server
// read past the cache, has its account's key Secret as the cache does: the cache is
// behind a Secret just written (a key issued, a replica just started whose Secrets
// are not all listed yet), and a key it does not know yet gets 503 with Retry-After,
// not 401. Refusals are bounded by the client's failed attempts, and so are these
// reads (of the Secret's metadata only). Call it before serving.
func (a *Authenticator) ReadRefusedKeysFrom(api client.Reader) {
	a.api = api
}

// confirmSecret answers an error when the refused key's Secret is not, in the API
// server, as the cache had it.
func (a *Authenticator) confirmSecret(ctx context.Context, f *authFailure) error {
	if a.api != nil && f.unknown != nil {
		return a.confirmUnknown(ctx, f.unknown)
	}
	if a.api == nil || f.secret.Name == "" {
		return nil
	}
	var meta metav1.PartialObjectMetadata
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := a.api.Get(ctx, f.secret, &meta)
	switch {
	case apierrors.IsNotFound(err) && f.secretRV == "":
		return nil
	case err != nil:
		return fmt.Errorf("reading the key Secret: %w", err)
	case meta.ResourceVersion != f.secretRV:
		return errors.New("the cache is behind the key Secret")
	}
	return nil
}

// confirmUnknown answers an error when the API server has an account of the
// token's namespace and service that the catalog does not: the catalog is behind
// (a replica just started, an account just created).
func (a *Authenticator) confirmUnknown(ctx context.Context, t *apikey.Token) error {
	var list metav1alpha1.ServiceAccountList
	if err := a.api.List(ctx, &list, client.InNamespace(t.Namespace)); err != nil {
		return fmt.Errorf("listing the namespace's accounts: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.ServiceName == t.Service {
			return errors.New("the catalog is behind the account")
		}
	}
	return nil
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
		if refused == nil || failure.limited {
			refused = failure
		}
	}
	return nil, refused
}

// authenticateAs checks a token against the key of acct (nil: no account has its
// service name). A verdict cached for the token, the account and its Secret as they
// are now answers at once. Else the key is compared with the hash (bcrypt):
//   - at once when the Secret holds the key's id (apikey.ID) and the presented key
//     has that id, whatever the client's failed attempts: only the key's holder
//     presents a key of that id, so a flood of guesses, from the same address (an
//     Ingress) as the real key's or not, cannot make the real key be refused;
//   - else when the client has a failed attempt left, which the comparison takes (and
//     gives back if the key verifies): a wrong key and an unknown or inactive name
//     (a dummy hash) cost the same, and an id that a hash was written without (the
//     id of an older key) costs the real key no more than it did before ids;
//   - else when the Secret has no id (one written before ids): the real key cannot be
//     told from a guess but by bcrypt, and refusing it would let anyone's guesses
//     lock it out;
//   - else not: the refusal is 429, and costs no comparison.
//
// A comparison that the key's id does not vouch for waits within the request's
// deadline for the account's one slot, so whatever comes from however many
// addresses, an account costs at most one such comparison at a time. With
// vouchedOnly, only a cached verdict or the key's id decides; where neither does, it
// answers neither token info nor a failure.
func (a *Authenticator) authenticateAs(ctx context.Context, acct *catalog.Account, token apikey.Token, at *attempt,
	vouchedOnly bool) (*auth.TokenInfo, *authFailure) {
	k := a.readKey(ctx, acct)
	sum := verdictKey(acct, token)
	v, fresh := a.cachedVerdict(sum, &k)
	if !fresh {
		var failure *authFailure
		var decided bool
		if v, failure, decided = a.compareKey(ctx, acct, token, at, vouchedOnly, &k, sum); !decided {
			return nil, failure
		}
	}
	switch {
	case k.why != "":
		return nil, &authFailure{reason: k.why, secret: k.secret, secretRV: k.secretRV}
	case !v.ok:
		return nil, &authFailure{reason: "wrong API key for service " + strconv.Quote(token.Service), secret: k.secret, secretRV: k.secretRV}
	}
	return a.shareInfo(acct, sum, &k, v), nil
}

// storedKey is what authenticateAs checks a token against: the account's key as the
// cache has it now, and why the token fails whatever the comparison says.
type storedKey struct {
	// hash is the bcrypt hash to compare with: dummyHash while none was read.
	hash []byte
	// id is the key's id that the Secret holds beside the hash (nil: none, or not
	// a valid id).
	id                              []byte
	accountRV, secretRV, secretName string
	// secret is the key Secret, once the account names it: a refusal read from it
	// is confirmed against it (confirmSecret).
	secret client.ObjectKey
	// why the token fails whatever the comparison says ("": the comparison decides).
	why string
}

// readKey reads the key of acct (nil: no account has the token's service name): the
// account and its key Secret, from the cache.
func (a *Authenticator) readKey(ctx context.Context, acct *catalog.Account) storedKey {
	k := storedKey{hash: dummyHash}
	switch {
	case acct == nil:
		k.why = "unknown service name"
	case !acct.Active:
		k.why = "account " + acct.Namespace + "/" + acct.Name + " is inactive"
	case !acct.Ready:
		k.why = "account " + acct.Namespace + "/" + acct.Name + " is not ready"
	}
	if k.why != "" {
		return k
	}
	// Every request reads both from the cache; they are only read here, so the
	// cache's own objects do, not copies of them.
	var sa metav1alpha1.ServiceAccount
	var secret corev1.Secret
	if err := a.reader.Get(ctx, client.ObjectKey{Namespace: acct.Namespace, Name: acct.Name}, &sa, readOnly...); err != nil {
		k.why = "reading account: " + err.Error()
		return k
	}
	if sa.Spec.Active != nil && !*sa.Spec.Active {
		k.why = "account " + acct.Namespace + "/" + acct.Name + " is inactive"
		return k
	}
	// A refusal read from this Secret is confirmed against it (confirmSecret).
	k.secret = client.ObjectKey{Namespace: sa.Namespace, Name: sa.Spec.APIKeySecretRef.Name}
	if err := a.reader.Get(ctx, k.secret, &secret, readOnly...); err != nil {
		k.why = "reading the key Secret: " + err.Error()
		return k
	}
	k.hash, k.accountRV, k.secretRV, k.secretName = secret.Data[apikey.HashKey(&sa)], sa.ResourceVersion, secret.ResourceVersion, secret.Name
	if k.id = secret.Data[apikey.IDKey(&sa)]; !apikey.ValidID(k.id) {
		k.id = nil
	}
	return k
}

// verdictKey is what a token's verdict is cached under: the SHA-256 of the token in
// its namespaced form, so that both forms share it, and a shared service name's
// accounts each have their own.
func verdictKey(acct *catalog.Account, token apikey.Token) [32]byte {
	var buf [256]byte // the token's bytes, on the stack when they fit
	name := buf[:0]
	if acct != nil {
		name = append(append(name, acct.Namespace...), '/')
	} else if token.Namespace != "" {
		name = append(append(name, token.Namespace...), '/')
	}
	return sha256.Sum256(append(append(append(name, token.Service...), ':'), token.Key...))
}

// cachedVerdict is the verdict cached under sum; fresh when it was reached against
// the account and the Secret as k has them.
func (a *Authenticator) cachedVerdict(sum [32]byte, k *storedKey) (v verdict, fresh bool) {
	a.mu.Lock()
	v, cached := a.verified[sum]
	if !cached {
		v, cached = a.refused[sum]
	}
	a.mu.Unlock()
	return v, cached && v.accountRV == k.accountRV && v.secretRV == k.secretRV
}

// compareKey compares the token's key with k's hash where authenticateAs says it is
// compared, and caches the verdict. It answers false where it decides nothing: the
// refusal is 429 (the failure says why), or, with vouchedOnly, the key's id does not
// vouch for the key (no failure).
func (a *Authenticator) compareKey(ctx context.Context, acct *catalog.Account, token apikey.Token, at *attempt,
	vouchedOnly bool, k *storedKey, sum [32]byte) (verdict, *authFailure, bool) {
	ck := comparisonKey{sum: sum, accountRV: k.accountRV, secretRV: k.secretRV, valid: k.why == ""}
	var slot chan struct{}
	if k.why == "" {
		slot = a.slot(acct)
	}
	var v verdict
	var compared bool
	switch {
	case k.why == "" && k.id != nil && sameID(k.id, token.Key):
		v, compared = a.verify(ctx, ck, k.hash, token.Key, nil)
	case vouchedOnly:
		return verdict{}, nil, false
	case at.take():
		v, compared = a.verify(ctx, ck, k.hash, token.Key, slot)
	case k.why == "" && k.id == nil:
		v, compared = a.verify(ctx, ck, k.hash, token.Key, slot)
	default:
		return verdict{}, &authFailure{reason: "too many failed attempts", limited: true}, false
	}
	if !compared {
		return verdict{}, &authFailure{reason: "too many failed attempts: the account's key comparisons were taken until the deadline", limited: true}, false
	}
	return v, nil, true
}

// shareInfo is the token info of a verified token's requests as acct: made once for
// each account and key the token verifies against, kept with its verdict, and shared
// by their requests.
func (a *Authenticator) shareInfo(acct *catalog.Account, sum [32]byte, k *storedKey, v verdict) *auth.TokenInfo {
	if v.info != nil && v.acct == acct {
		return v.info
	}
	// The secret's name goes with the account's resource version: the verdict's.
	info := tokenInfo(acct, caller.Key{Name: k.secretName, ResourceVersion: k.secretRV})
	a.mu.Lock()
	if cur, ok := a.verified[sum]; ok && cur.ok && cur.accountRV == k.accountRV && cur.secretRV == k.secretRV {
		cur.acct, cur.info = acct, info
		a.verified[sum] = cur
	}
	a.mu.Unlock()
	return info
}

// sameID reports, in constant time, whether a stored id is the id of key.
func sameID(id []byte, key string) bool {
	var buf [2 * sha256.Size]byte
	sum := sha256.Sum256([]byte(key))
	hex.Encode(buf[:], sum[:apikey.IDLength/2])
	return subtle.ConstantTimeCompare(id, buf[:apikey.IDLength]) == 1
}

// slot is the account's comparison slot.
func (a *Authenticator) slot(acct *catalog.Account) chan struct{} {
	key := limiterKey{acct.Namespace, acct.Name}
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.slots[key]
	if !ok {
		if len(a.slots) >= maxLimiters {
			clear(a.slots)
		}
		s = make(chan struct{}, 1)
		a.slots[key] = s
	}
	return s
}

// comparisonKey is what a bcrypt comparison's verdict depends on.
type comparisonKey struct {
	sum                 [32]byte
	accountRV, secretRV string
	// valid is false when the token fails whatever the comparison says.
	valid bool
}

// verify compares a token's key with its hash, after taking slot (nil: none) within
// ctx, and caches the verdict; false when the slot stayed taken until ctx ended.
// Requests that present the same token against the same account and Secret while a
// comparison is in progress wait for it and share its verdict: when an account's
// resource version changes (a status write), its clients' requests in flight would
// otherwise each make a comparison of their own at the same moment.
func (a *Authenticator) verify(ctx context.Context, k comparisonKey, hash []byte, key string, slot chan struct{}) (verdict, bool) {
	id := fmt.Sprintf("%x/%s/%s/%t", k.sum, k.accountRV, k.secretRV, k.valid)
	v, _, _ := a.comparing.Do(id, func() (any, error) {
		if slot != nil {
			select {
			case slot <- struct{}{}:
				defer func() { <-slot }()
			case <-ctx.Done():
				return nil, nil
			}
		}
		keyComparisons.Inc()
		ok := a.compare(hash, key) && k.valid
		v := verdict{ok: ok, accountRV: k.accountRV, secretRV: k.secretRV}
		a.mu.Lock()
		defer a.mu.Unlock()
		cache := a.refused
		if ok {
			cache = a.verified
		}
		if len(cache) >= maxCachedTokens {
			clear(cache)
		}
		cache[k.sum] = v
		return v, nil
	})
	got, ok := v.(verdict)
	return got, ok
}

// Allow takes one request from the account's token bucket; when it is empty it says
// how long to wait.
func (a *Authenticator) Allow(acct *catalog.Account) (bool, time.Duration) {
	if a.limit <= 0 {
		return true, 0
	}
	key := limiterKey{acct.Namespace, acct.Name}
	a.mu.Lock()
	l, ok := a.limiters[key]
	if !ok {
		// OAuth users are as many as the issuer has: the table is bounded.
		if len(a.limiters) >= maxLimiters {
			clear(a.limiters)
		}
		l = rate.NewLimiter(a.limit, a.burst)
		a.limiters[key] = l
	}
	a.mu.Unlock()
	r := l.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, d
	}
	return true, 0
}

// tokenInfoCtx carries the token info from the authentication to the SDK's handler.
type tokenInfoCtx struct{}

// Middleware authenticates every request, answers 401 (or 429 past the rate limit)
// itself, and hands the account on to the SDK as token info.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	// The SDK's bearer-token handler puts the token info where tool handlers and
	// session pinning read it; its verifier only takes what this middleware found.
	sdk := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		info, _ := ctx.Value(tokenInfoCtx{}).(*auth.TokenInfo)
		if info == nil {
			return nil, auth.ErrInvalidToken
		}
		return info, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)

	// The refusals are written in frames of their own: what stays on the stack
	// while the request is served is this small one.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, failure := a.check(r)
		if failure != nil {
			refuse(w, r, failure)
			return
		}
		if ok, wait := a.Allow(caller.Of(&mcp.RequestExtra{TokenInfo: info})); !ok {
			rateLimited(w, wait)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), tokenInfoCtx{}, info))
		if a.anonymous != nil {
			// The SDK's handler wants some bearer token; the account is already decided.
			r.Header.Set("Authorization", "Bearer no-auth")
		}
		sdk.ServeHTTP(w, r)
	})
}

// refuse answers a request whose token did not pass: 429 once the client's failed
// attempts are spent, 503 when the refusal could not be confirmed, else 401.
func refuse(w http.ResponseWriter, r *http.Request, failure *authFailure) {
	if failure.limited {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(float64(failedAuthBurst)/failedAuthPerSec))))
		WriteJSONError(w, http.StatusTooManyRequests, "too many failed attempts")
		return
	}
	if failure.unavailable {
		ctrl.LoggerFrom(r.Context()).WithName("mcp").Info("authentication could not be confirmed",
			"reason", failure.reason, "remote", r.RemoteAddr)
		authFailures.WithLabelValues("unavailable").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(unavailableRetry))
		WriteJSONError(w, http.StatusServiceUnavailable,
			"server unavailable: tokens cannot be checked while the Kubernetes API server does not answer; try again")
		return
	}
	ctrl.LoggerFrom(r.Context()).WithName("mcp").Info("authentication failed",
		"reason", failure.reason, "remote", r.RemoteAddr)
	authFailures.WithLabelValues(failureLabel(failure)).Inc()
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+Realm+`"`)
	msg := "invalid token"
	if failure.missing {
		msg = "Bearer token required"
	}
	WriteJSONError(w, http.StatusUnauthorized, msg)
}

// rateLimited answers a request over its account's rate: 429, and when to try again.
func rateLimited(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	WriteJSONError(w, http.StatusTooManyRequests, "rate limit exceeded")
}

// check authenticates a request within authWait. Failed attempts are limited per
// client address and the service name the token claims: once a client has none
// left, a refusal is 429, and a key is compared with its hash only when the
// account's Secret vouches for it by its id or has no id (authenticateAs), so
// flooding a service with wrong keys does not lock its real key out.
func (a *Authenticator) check(r *http.Request) (*auth.TokenInfo, *authFailure) {
	if a.anonymous != nil {
		return a.anonymousInfo, nil
	}
	header := r.Header.Get("Authorization")
	if header == "" {
		return nil, &authFailure{reason: "no Authorization header", missing: true}
	}
	token, err := apikey.ParseAuthorization(header)
	if err != nil {
		// Refusing a token without a service name costs nothing: no bucket.
		return nil, &authFailure{reason: err.Error()}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	at := attempt{g: a.failures, key: guessKey(host, token.Service)}
	ctx, cancel := context.WithTimeout(r.Context(), authWait)
	defer cancel()
	info, failure := a.authenticate(ctx, token, &at)
	if failure == nil {
		at.succeeded()
	} else if !failure.limited && !at.take() {
		// A refusal spends the client's attempt; with none left it is 429.
		failure.limited = true
	}
	if failure != nil && !failure.limited {
		err := a.current(ctx)
		if err == nil {
			err = a.confirmSecret(ctx, failure)
		}
		if err != nil {
			failure.unavailable = true
			failure.reason += "; not confirmed: " + err.Error()
		}
	}
	return info, failure
}

// current is nil when what a refusal was read from may be trusted: the catalog has
// its first build, and the API server answers (when there is a confirm).
func (a *Authenticator) current(ctx context.Context) error {
	if _, ok := a.store.Built(); !ok {
		return errors.New("the catalog has no build yet")
	}
	if a.confirm != nil {
		return a.confirm(ctx)
	}
	return nil
}

func failureLabel(f *authFailure) string {
	switch {
	case f.missing:
		return "missing"
	case strings.HasPrefix(f.reason, "unknown"):
		return "unknown_service"
	case strings.HasPrefix(f.reason, "wrong"):
		return "wrong_key"
	case strings.Contains(f.reason, "inactive"), strings.Contains(f.reason, "not ready"):
		return "inactive"
	default:
		return "malformed"
	}
}

// WriteJSONError answers a refused request: code, and msg as the JSON body's error.
func WriteJSONError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
