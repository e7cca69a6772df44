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

// Package access decides who a request is and what it may do: bearer tokens checked
// against ServiceAccounts (with a cache, a lock-out on any change to the account or
// its Secret, and rate limits), and the account's permissions applied to tools and
// namespaces.
package access

import (
	"context"
	"crypto/sha256"
	"encoding/json"
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
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

var authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sandbar_mcp_auth_failures_total",
	Help: "Requests refused with 401, by reason.",
}, []string{"reason"})

func init() { metrics.Registry.MustRegister(authFailures) }

// Realm is the realm of the WWW-Authenticate challenge.
const Realm = "sandbar-mcp"

// maxCachedTokens bounds the verified-token cache.
const maxCachedTokens = 10000

// Failed guesses of a service's key from one client address are limited: each costs
// a bcrypt comparison, and guessing is what they are.
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
type Authenticator struct {
	store  *catalog.Store
	reader client.Reader

	mu       sync.Mutex
	verified map[[32]byte]verdict
	limiters map[string]*rate.Limiter
	limit    rate.Limit
	burst    int
	// failures limits wrong keys per client address and service name.
	failures map[string]*rate.Limiter
	// anonymous, when set, is the account of every request (no-auth mode).
	anonymous *catalog.Account
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

type verdict struct {
	ok                  bool
	accountRV, secretRV string
}

// authFailure is why a request was refused: the reason is logged, never sent.
type authFailure struct {
	reason string
	// missing is true when no bearer token came at all.
	missing bool
}

// NewAuthenticator checks tokens against the catalog's accounts, reading accounts and
// Secrets through reader. limit and burst size each account's token bucket (limit 0:
// none). With anonymous set, every request is that account and no token is read.
func NewAuthenticator(store *catalog.Store, reader client.Reader, limit float64, burst int, anonymous *catalog.Account) *Authenticator {
	return &Authenticator{
		anonymous: anonymous,
		store:     store,
		reader:    reader,
		verified:  map[[32]byte]verdict{},
		limiters:  map[string]*rate.Limiter{},
		failures:  map[string]*rate.Limiter{},
		limit:     rate.Limit(limit),
		burst:     burst,
	}
}

// authenticate finds the account of a request's bearer token.
func (a *Authenticator) authenticate(ctx context.Context, header string) (*catalog.Account, *authFailure) {
	if a.anonymous != nil {
		return a.anonymous, nil
	}
	if header == "" {
		return nil, &authFailure{reason: "no Authorization header", missing: true}
	}
	token, err := apikey.ParseAuthorization(header)
	if err != nil {
		return nil, &authFailure{reason: err.Error()}
	}
	service := token.Service
	acct := a.store.Load().Accounts[service]
	switch {
	case acct == nil:
		return nil, &authFailure{reason: "unknown service name " + strconv.Quote(service)}
	case !acct.Active:
		return nil, &authFailure{reason: "account " + acct.Namespace + "/" + acct.Name + " is inactive"}
	case !acct.Ready:
		return nil, &authFailure{reason: "account " + acct.Namespace + "/" + acct.Name + " is not ready"}
	}

	var sa metav1alpha1.ServiceAccount
	if err := a.reader.Get(ctx, client.ObjectKey{Namespace: acct.Namespace, Name: acct.Name}, &sa); err != nil {
		return nil, &authFailure{reason: "reading account: " + err.Error()}
	}
	if sa.Spec.Active != nil && !*sa.Spec.Active {
		return nil, &authFailure{reason: "account " + acct.Namespace + "/" + acct.Name + " is inactive"}
	}
	var secret corev1.Secret
	if err := a.reader.Get(ctx, client.ObjectKey{Namespace: sa.Namespace, Name: sa.Spec.APIKeySecretRef.Name}, &secret); err != nil {
		return nil, &authFailure{reason: "reading the key Secret: " + err.Error()}
	}
	sum := sha256.Sum256([]byte(token.String()))
	a.mu.Lock()
	v, cached := a.verified[sum]
	a.mu.Unlock()
	if !cached || v.accountRV != sa.ResourceVersion || v.secretRV != secret.ResourceVersion {
		v = verdict{
			ok:        apikey.Verify(secret.Data[apikey.HashKey(&sa)], token.Key),
			accountRV: sa.ResourceVersion,
			secretRV:  secret.ResourceVersion,
		}
		a.mu.Lock()
		if len(a.verified) >= maxCachedTokens {
			clear(a.verified)
		}
		a.verified[sum] = v
		a.mu.Unlock()
	}
	if !v.ok {
		return nil, &authFailure{reason: "wrong API key for service " + strconv.Quote(service)}
	}
	return acct, nil
}

// allow takes one request from the account's token bucket; when it is empty it says
// how long to wait.
func (a *Authenticator) allow(acct *catalog.Account) (bool, time.Duration) {
	if a.limit <= 0 {
		return true, 0
	}
	key := acct.Namespace + "/" + acct.Name
	a.mu.Lock()
	l, ok := a.limiters[key]
	if !ok {
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

type accountKey struct{}

// WithAccount carries an account in a context.
func WithAccount(ctx context.Context, acct *catalog.Account) context.Context {
	return context.WithValue(ctx, accountKey{}, acct)
}

// FromContext is the account WithAccount put in a context.
func FromContext(ctx context.Context) *catalog.Account {
	a, _ := ctx.Value(accountKey{}).(*catalog.Account)
	return a
}

// Middleware authenticates every request, answers 401 (or 429 past the rate limit)
// itself, and hands the account on to the SDK as token info.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	// The SDK's bearer-token handler puts the token info where tool handlers and
	// session pinning read it; its verifier only takes what this middleware found.
	sdk := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		acct := FromContext(ctx)
		if acct == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{
			UserID: acct.Namespace + "/" + acct.Name,
			Extra:  map[string]any{"account": acct},
		}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guesses := a.guessLimiter(r)
		if guesses != nil && guesses.Tokens() < 1 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(float64(failedAuthBurst)/failedAuthPerSec))))
			writeJSONError(w, http.StatusTooManyRequests, "too many failed attempts")
			return
		}
		acct, failure := a.authenticate(r.Context(), r.Header.Get("Authorization"))
		if failure != nil {
			if guesses != nil {
				guesses.Allow()
			}
			ctrl.LoggerFrom(r.Context()).WithName("mcp").Info("authentication failed",
				"reason", failure.reason, "remote", r.RemoteAddr)
			authFailures.WithLabelValues(failureLabel(failure)).Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+Realm+`"`)
			msg := "invalid token"
			if failure.missing {
				msg = "Bearer token required"
			}
			writeJSONError(w, http.StatusUnauthorized, msg)
			return
		}
		if ok, wait := a.allow(acct); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeJSONError(w, http.StatusTooManyRequests, "rate limit exceeded")
			return
		}
		r = r.WithContext(WithAccount(r.Context(), acct))
		if a.anonymous != nil {
			// The SDK's handler wants some bearer token; the account is already decided.
			r.Header.Set("Authorization", "Bearer no-auth")
		}
		sdk.ServeHTTP(w, r)
	})
}

// guessLimiter is the failed-attempt bucket of a request's client address and the
// service name its token claims (nil without a token: those cost nothing to refuse).
func (a *Authenticator) guessLimiter(r *http.Request) *rate.Limiter {
	if a.anonymous != nil {
		return nil
	}
	token, err := apikey.ParseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return nil
	}
	service := token.Service
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	key := host + "|" + service
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.failures[key]
	if !ok {
		if len(a.failures) >= maxFailureBuckets {
			clear(a.failures)
		}
		l = rate.NewLimiter(failedAuthPerSec, failedAuthBurst)
		a.failures[key] = l
	}
	return l
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

func writeJSONError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// AccountOf is the authenticated account of a request.
func AccountOf(extra *mcp.RequestExtra) *catalog.Account {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	a, _ := extra.TokenInfo.Extra["account"].(*catalog.Account)
	return a
}
