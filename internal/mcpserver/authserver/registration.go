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
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Registered clients (RFC 7591), for clients that predate client ID metadata
// documents: one Secret each, of this type, named as its client id.
const (
	ClientSecretType = corev1.SecretType("sandbar.dev/oauth-client")
	ClientComponent  = "oauth-client"
	clientPrefix     = "sandbar-client-"
	clientDataKey    = "client.json"
)

// Defaults of the registrations.
const (
	DefaultMaxClients       = 1000
	DefaultClientTTL        = 30 * 24 * time.Hour
	DefaultPendingClientTTL = 10 * time.Minute
	maxRegistration         = 16 << 10
	// A source (a remote address) registers sourceBurst clients at once, then one
	// every sourceEvery; everyone together registerRate a second, registerBurst at once.
	sourceEvery   = 20 * time.Second
	sourceBurst   = 3
	registerRate  = rate.Limit(1)
	registerBurst = 20
)

// Registrations keeps the clients that registered: at most max, each for ttl
// once it has completed a sign-in (a code exchanged: a live client), pending
// until then; new ones at a rate per source and in all. A client id carries a
// MAC under key, so a made-up one is refused before it costs a read, and one
// read and not found is answered from a negative cache for a while.
type Registrations struct {
	c            client.Client
	r            client.Reader
	ns           string
	max          int
	ttl, pending time.Duration
	key          []byte
	limiter      *rate.Limiter
	sources      *lru.Cache[string, *rate.Limiter]
	kept         *expirable.LRU[string, *registeredClient]
	unknown      *expirable.LRU[string, struct{}]
}

// NewRegistrations keeps registered clients in namespace ns: at most maxClients,
// each ttl once its client completed a sign-in and pending until then; their ids
// carry a MAC under key, which every replica must share.
func NewRegistrations(c client.Client, r client.Reader, ns string, maxClients int, ttl, pending time.Duration, key []byte) *Registrations {
	orDefault(&maxClients, DefaultMaxClients)
	orDefault(&ttl, DefaultClientTTL)
	orDefault(&pending, DefaultPendingClientTTL)
	sources, _ := lru.New[string, *rate.Limiter](10000)
	return &Registrations{c: c, r: r, ns: ns, max: maxClients, ttl: ttl, pending: pending, key: key,
		limiter: rate.NewLimiter(registerRate, registerBurst), sources: sources,
		kept:    expirable.NewLRU[string, *registeredClient](1000, nil, time.Minute),
		unknown: expirable.NewLRU[string, struct{}](10000, nil, time.Minute)}
}

type registeredClient struct {
	ClientDocument
	Expires time.Time `json:"expires"`
	// Live is true once the client exchanged a code: it is then kept ttl, not pending.
	Live bool `json:"live,omitempty"`
}

// IsRegistered says whether a client id is of the registered kind (its shape;
// Registrations checks its MAC).
func IsRegistered(clientID string) bool {
	return isName(clientPrefix, clientID)
}

// newID is a new client id: 8 random bytes and 8 of their MAC, in hex.
func (g *Registrations) newID() string {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	return clientPrefix + hex.EncodeToString(id) + g.macOf(id)
}

func (g *Registrations) macOf(id []byte) string {
	return hex.EncodeToString(mac(g.key, string(id))[:8])
}

// issued says whether a client id is one newID made.
func (g *Registrations) issued(clientID string) bool {
	if !IsRegistered(clientID) {
		return false
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(clientID, clientPrefix))
	return err == nil && hmac.Equal([]byte(g.macOf(raw[:8])), []byte(hex.EncodeToString(raw[8:])))
}

// Get is a registered client that has not expired.
func (g *Registrations) Get(ctx context.Context, clientID string) (*ClientDocument, error) {
	rc, err := g.get(ctx, clientID)
	if err != nil {
		return nil, err
	}
	return &rc.ClientDocument, nil
}

func (g *Registrations) get(ctx context.Context, clientID string) (*registeredClient, error) {
	if rc, ok := g.kept.Get(clientID); ok && time.Now().Before(rc.Expires) {
		return rc, nil
	}
	unknown := &DocumentError{ClientID: clientID, Reason: "no such registered client: it expired (register again) or never was"}
	if _, known := g.unknown.Get(clientID); known || !g.issued(clientID) {
		return nil, unknown
	}
	var s corev1.Secret
	if err := g.r.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: clientID}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			g.unknown.Add(clientID, struct{}{})
			return nil, unknown
		}
		return nil, err
	}
	var rc registeredClient
	if s.Type != ClientSecretType || json.Unmarshal(s.Data[clientDataKey], &rc) != nil || rc.ClientID != clientID {
		return nil, unknown
	}
	if time.Now().After(rc.Expires) {
		_ = client.IgnoreNotFound(g.c.Delete(ctx, &s))
		g.unknown.Add(clientID, struct{}{})
		return nil, unknown
	}
	g.kept.Add(clientID, &rc)
	return &rc, nil
}

// Live records that a registered client completed a sign-in: it is kept its
// full time from now on, no longer pending. Its first code exchange calls it.
func (g *Registrations) Live(ctx context.Context, clientID string) error {
	if rc, ok := g.kept.Get(clientID); ok && rc.Live {
		return nil
	}
	var s corev1.Secret
	if err := g.r.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: clientID}, &s); err != nil {
		return fmt.Errorf("reading the registered client: %w", err)
	}
	var rc registeredClient
	if s.Type != ClientSecretType || json.Unmarshal(s.Data[clientDataKey], &rc) != nil || rc.ClientID != clientID {
		return errors.New("the registered client does not read")
	}
	if !rc.Live {
		rc.Live, rc.Expires = true, time.Now().Add(g.ttl).Truncate(time.Second)
		raw, _ := json.Marshal(rc)
		s.Data[clientDataKey] = raw
		if err := g.c.Update(ctx, &s); err != nil {
			return fmt.Errorf("keeping the registered client: %w", err)
		}
	}
	g.kept.Add(clientID, &rc)
	return nil
}

// allow says whether a source may register a client now.
func (g *Registrations) allow(r *http.Request) bool {
	source, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		source = r.RemoteAddr
	}
	l := getOrAdd(g.sources, source, func() *rate.Limiter { return rate.NewLimiter(rate.Every(sourceEvery), sourceBurst) })
	return l.Allow() && g.limiter.Allow()
}

// ServeHTTP is the registration endpoint.
func (g *Registrations) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRegistration))
	if err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("the metadata is larger than %d bytes", maxRegistration))
		return
	}
	var wire documentWire
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&wire); err != nil || dec.More() {
		writeOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not one JSON object of client metadata")
		return
	}
	wire.ClientID = ""
	doc, reason := checkClientMetadata(&wire, "the registration")
	if reason != "" {
		code := "invalid_client_metadata"
		if strings.Contains(reason, "redirect_uris") {
			code = "invalid_redirect_uri"
		}
		writeOAuthError(w, http.StatusBadRequest, code, reason)
		return
	}
	if !g.allow(r) {
		w.Header().Set("Retry-After", "20")
		writeOAuthError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many registrations from here or at once; try again in a few seconds")
		return
	}
	if err := g.makeRoom(r.Context()); err != nil {
		w.Header().Set("Retry-After", "60")
		writeOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", err.Error())
		return
	}
	doc.ClientID = g.newID()
	rc := registeredClient{ClientDocument: *doc, Expires: time.Now().Add(g.pending).Truncate(time.Second)}
	raw, _ := json.Marshal(rc)
	if err := g.c.Create(r.Context(), newSecret(g.ns, doc.ClientID, ClientComponent, ClientSecretType, clientDataKey, raw)); err != nil {
		writeOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the registration could not be stored; try again")
		return
	}
	answer := map[string]any{
		"client_id": doc.ClientID, "client_id_issued_at": time.Now().Unix(), "client_name": doc.ClientName,
		"redirect_uris": doc.RedirectURIs, "grant_types": doc.GrantTypes, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none", "application_type": doc.ApplicationType,
		"client_secret_expires_at": 0,
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(answer)
}

// makeRoom deletes expired clients; it fails when MaxClients remain.
func (g *Registrations) makeRoom(ctx context.Context) error {
	live, err := liveSecrets(ctx, g.r, g.ns, client.MatchingLabels{LabelComponent: ClientComponent}, clientExpires,
		func(ctx context.Context, s *corev1.Secret) { _ = client.IgnoreNotFound(g.c.Delete(ctx, s)) })
	if err != nil {
		return errors.New("the registered clients cannot be read now; try again")
	}
	if len(live) >= g.max {
		return fmt.Errorf("this server holds %d registered clients, its limit; an admin may delete some (kubectl delete secret -l %s=%s)", len(live), LabelComponent, ClientComponent)
	}
	return nil
}

// clientExpires is when a registered client's Secret expires; one that does not read has.
func clientExpires(s *corev1.Secret) time.Time {
	var rc registeredClient
	if json.Unmarshal(s.Data[clientDataKey], &rc) != nil {
		return time.Time{}
	}
	return rc.Expires
}
