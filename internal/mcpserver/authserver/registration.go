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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	DefaultMaxClients = 1000
	DefaultClientTTL  = 30 * 24 * time.Hour
	maxRegistration   = 16 << 10
)

// Registrations keeps the clients that registered: at most MaxClients, each for
// ClientTTL, new ones at a rate whoever asks.
type Registrations struct {
	c       client.Client
	r       client.Reader
	ns      string
	max     int
	ttl     time.Duration
	limiter *rate.Limiter
	kept    *expirable.LRU[string, *ClientDocument]
}

// NewRegistrations keeps registered clients in namespace ns.
func NewRegistrations(c client.Client, r client.Reader, ns string, maxClients int, ttl time.Duration) *Registrations {
	if maxClients <= 0 {
		maxClients = DefaultMaxClients
	}
	if ttl <= 0 {
		ttl = DefaultClientTTL
	}
	return &Registrations{c: c, r: r, ns: ns, max: maxClients, ttl: ttl, limiter: rate.NewLimiter(1, 20),
		kept: expirable.NewLRU[string, *ClientDocument](1000, nil, time.Minute)}
}

type registeredClient struct {
	ClientDocument
	Expires time.Time `json:"expires"`
}

// IsRegistered says whether a client id is of the registered kind.
func IsRegistered(clientID string) bool {
	return isName(clientPrefix, clientID)
}

// Get is a registered client that has not expired.
func (g *Registrations) Get(ctx context.Context, clientID string) (*ClientDocument, error) {
	if doc, ok := g.kept.Get(clientID); ok {
		return doc, nil
	}
	unknown := &DocumentError{ClientID: clientID, Reason: "no such registered client: it expired (register again) or never was"}
	if !IsRegistered(clientID) {
		return nil, unknown
	}
	var s corev1.Secret
	if err := g.r.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: clientID}, &s); err != nil {
		if apierrors.IsNotFound(err) {
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
		return nil, unknown
	}
	g.kept.Add(clientID, &rc.ClientDocument)
	return &rc.ClientDocument, nil
}

// ServeHTTP is the registration endpoint.
func (g *Registrations) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.limiter.Allow() {
		w.Header().Set("Retry-After", "5")
		writeOAuthError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many registrations at once; try again in a few seconds")
		return
	}
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
	if err := g.makeRoom(r.Context()); err != nil {
		w.Header().Set("Retry-After", "60")
		writeOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", err.Error())
		return
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	doc.ClientID = clientPrefix + hex.EncodeToString(id)
	rc := registeredClient{ClientDocument: *doc, Expires: time.Now().Add(g.ttl).Truncate(time.Second)}
	raw, _ := json.Marshal(rc)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: doc.ClientID, Namespace: g.ns, Labels: map[string]string{
			"app.kubernetes.io/managed-by": "sandbar", LabelComponent: ClientComponent}},
		Type: ClientSecretType,
		Data: map[string][]byte{clientDataKey: raw},
	}
	if err := g.c.Create(r.Context(), secret); err != nil {
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
