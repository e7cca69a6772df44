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
	"encoding/json"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

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
			RateLimited(w, wait)
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
		msg := "server unavailable: tokens cannot be checked while the Kubernetes API server does not answer; try again"
		if failure.unchecked {
			msg = "account not checked yet: it was just created or changed; try again in a few seconds"
		}
		WriteJSONError(w, http.StatusServiceUnavailable, msg)
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

// RateLimited answers a request over its account's rate (OAuth persons' too): 429, and
// when to try again.
func RateLimited(w http.ResponseWriter, wait time.Duration) {
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
	switch {
	case failure == nil:
		at.succeeded()
	case failure.unchecked:
		// A right key, of an account the leader has not checked yet: it spends no
		// attempt, and is told to come again.
		at.succeeded()
		failure.unavailable = true
		return nil, failure
	case !failure.limited && !at.take():
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
