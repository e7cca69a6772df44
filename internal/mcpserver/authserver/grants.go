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
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the grants of the authorization server are: one Secret each, in the
// manager's namespace, of this type and with these labels.
const (
	GrantSecretType = corev1.SecretType("sandbar.dev/oauth-grant")
	LabelComponent  = "app.kubernetes.io/component"
	GrantComponent  = "oauth-grant"
	// LabelGrantUser holds a hash of the person's Kubernetes user name, so that
	// their grants are found (and bounded) without naming them.
	LabelGrantUser = "sandbar.dev/oauth-user"
	grantDataKey   = "grant.json"
	grantPrefix    = "sandbar-grant-"
)

// newSecret is a Secret this package makes: labeled as Sandbar's and as the
// component's, holding data at key.
func newSecret(ns, name, component string, typ corev1.SecretType, key string, data []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "sandbar", LabelComponent: component}},
		Type: typ, Data: map[string][]byte{key: data}}
}

// grantData is what a grant Secret holds: who, for which client and resource,
// and hashes of its code and refresh tokens (never the tokens).
type grantData struct {
	ClientID string    `json:"clientID"`
	Resource string    `json:"resource"`
	User     string    `json:"user"`
	Groups   []string  `json:"groups,omitempty"`
	Scopes   []string  `json:"scopes,omitempty"`
	AuthTime time.Time `json:"authTime"`
	// Code is the hash of the authorization code; Redeemed is true once it was
	// exchanged (a second exchange revokes the grant).
	Code     string `json:"code"`
	Redeemed bool   `json:"redeemed,omitempty"`
	// Refresh is the hash of the refresh token that is valid now, Previous of the
	// one it replaced (presented again, it revokes the grant).
	Refresh  string    `json:"refresh,omitempty"`
	Previous string    `json:"previous,omitempty"`
	Expires  time.Time `json:"expires"`
	// SessionEnds is when the sign-in ends for a grant whose provider gave no
	// refresh token: nothing of the grant outlives it. Zero for a grant the
	// provider is asked about at each refresh.
	SessionEnds time.Time `json:"sessionEnds,omitzero"`
	// Upstream is the upstream provider's refresh token, sealed with the state
	// key (it is used, so it cannot be a hash); empty when the provider gave none.
	Upstream string `json:"upstream,omitempty"`
}

// until is t, or the end of the session when that comes first.
func (d *grantData) until(t time.Time) time.Time {
	if !d.SessionEnds.IsZero() && d.SessionEnds.Before(t) {
		return d.SessionEnds
	}
	return t
}

type grant struct {
	secret *corev1.Secret
	Data   grantData
}

// Grants keeps the grants: a code is redeemed once, a refresh token is used once
// and replaced, and a token presented a second time revokes its grant (and so
// every token of it). Every replica reads them from the API server; a grant
// deleted (by kubectl, or by the reuse of a token) ends its access tokens within
// AliveFor.
type Grants struct {
	c  client.Client
	r  client.Reader
	ns string
	// MaxPerUser bounds one person's grants; the oldest goes when a new one would pass it.
	MaxPerUser int
	CodeTTL    time.Duration
	RefreshTTL time.Duration
	// SessionTTL is how long a sign-in lasts whose provider cannot be asked again.
	SessionTTL time.Duration
	alive      *expirable.LRU[string, bool]
	// lookups bounds the reads that codes and refresh tokens presented cause,
	// whoever presents them. Only what the server issued reaches it: a code is
	// sealed by the OpenID provider, a token carries a MAC under key.
	lookups *rate.Limiter
	key     []byte
}

// Defaults of the grants.
const (
	DefaultMaxGrantsPerUser = 20
	DefaultCodeTTL          = 2 * time.Minute
	DefaultRefreshTTL       = 30 * 24 * time.Hour
	// AliveFor is how long a replica trusts that a grant it read still exists.
	AliveFor = 30 * time.Second
	// LookupRate and LookupBurst bound the grant reads of the token and revocation
	// endpoints in one replica.
	LookupRate  = rate.Limit(50)
	LookupBurst = 200
)

// NewGrants keeps grants in namespace ns: written with c, read with r (which
// must read past any cache: grant Secrets are not in the manager's). Its tokens
// carry a MAC under key, which every replica must share.
func NewGrants(c client.Client, r client.Reader, ns string, key []byte) *Grants {
	return &Grants{c: c, r: r, ns: ns, key: key, MaxPerUser: DefaultMaxGrantsPerUser, CodeTTL: DefaultCodeTTL,
		RefreshTTL: DefaultRefreshTTL, SessionTTL: DefaultSessionTTL, alive: expirable.NewLRU[string, bool](10000, nil, AliveFor),
		lookups: rate.NewLimiter(LookupRate, LookupBurst)}
}

var (
	errNoGrant = errors.New("no such grant: it expired, was revoked or never was")
	errReplay  = errors.New("presented a second time; the grant is revoked")
	errBusy    = errors.New("too many token requests at once")
)

// presented reads the grant of a code or token a client presented, within the lookup bound.
func (g *Grants) presented(ctx context.Context, name string) (*grant, error) {
	if !isName(grantPrefix, name) {
		return nil, errNoGrant
	}
	if !g.lookups.Allow() {
		return nil, errBusy
	}
	return g.get(ctx, name)
}

// tokenOf is a new token of a grant (a refresh token, an access token's id): the
// grant's name, random bytes and a MAC of both under the grants' key, each after
// a dot.
func (g *Grants) tokenOf(name string) string {
	body := name + "." + randomToken()[:24]
	return body + "." + g.macOf(body)
}

func (g *Grants) macOf(body string) string {
	return base64.RawURLEncoding.EncodeToString(mac(g.key, body)[:24])
}

// issued names the grant of a token tokenOf made; ok is false for anything else,
// which is refused before it costs a read or a share of the lookups' budget.
func (g *Grants) issued(token string) (name string, ok bool) {
	dot := strings.LastIndexByte(token, '.')
	if dot < 0 {
		return "", false
	}
	body, sum := token[:dot], token[dot+1:]
	name, _, _ = strings.Cut(body, ".")
	return name, isName(grantPrefix, name) && hmac.Equal([]byte(sum), []byte(g.macOf(body)))
}

func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func sameHash(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func userLabel(user string) string { return hashOf(user)[:32] }

// isName is true of the names this package gives grants and registered
// clients: the prefix and 32 lower-case hex digits. Nothing else a client sends
// reaches the API server as a name.
func isName(prefix, name string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || len(rest) != 32 {
		return false
	}
	for _, c := range rest {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// grantName is the name of the grant of a code: a hash of it, so the code finds
// its grant and the name reveals nothing of the code.
func grantName(code string) string { return grantPrefix + hashOf(code)[:32] }

// saveCode makes the grant of a code that was just issued, making room among the
// person's grants first.
func (g *Grants) saveCode(ctx context.Context, code string, req *authRequest) error {
	if err := g.makeRoom(ctx, req.User); err != nil {
		return err
	}
	data := grantData{ClientID: req.ClientID, Resource: req.Resource, User: req.User, Groups: req.Groups,
		Scopes: req.GetScopes(), AuthTime: req.AuthTime, Code: hashOf(code), Expires: time.Now().Add(g.CodeTTL), Upstream: req.Upstream}
	if req.Upstream == "" {
		data.SessionEnds = req.AuthTime.Add(g.SessionTTL)
		data.Expires = data.until(data.Expires)
	}
	_, err := g.create(ctx, grantName(code), data, true)
	return err
}

// saveAssertion makes the grant of an ID-JAG, named for its issuer and jti and kept
// until it expires: an ID-JAG presented again finds its grant made, on any
// replica, and is refused (errReplay). It is not among the person's grants that
// MaxPerUser bounds (an agent's exchanges would push their sign-ins out, and with
// them grants whose ID-JAGs could then be presented again): it goes when it expires.
func (g *Grants) saveAssertion(ctx context.Context, iss, jti string, req *authRequest, expires time.Time) (*grant, error) {
	data := grantData{ClientID: req.ClientID, Resource: req.Resource, User: req.User, Groups: req.Groups,
		Scopes: req.Scopes, AuthTime: req.AuthTime, Expires: expires}
	return g.create(ctx, grantPrefix+hashOf(iss + "\x00" + jti)[:32], data, false)
}

// create stores a new grant under name, among its person's grants (which
// MaxPerUser bounds) when counted; a grant of that name already there is errReplay.
func (g *Grants) create(ctx context.Context, name string, data grantData, counted bool) (*grant, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	secret := newSecret(g.ns, name, GrantComponent, GrantSecretType, grantDataKey, raw)
	if counted {
		secret.Labels[LabelGrantUser] = userLabel(data.User)
	}
	if err := g.c.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, errReplay
		}
		return nil, fmt.Errorf("storing the grant: %w", err)
	}
	return &grant{secret: secret, Data: data}, nil
}

// makeRoom deletes the person's expired grants and, past MaxPerUser, the oldest.
func (g *Grants) makeRoom(ctx context.Context, user string) error {
	keep, err := liveSecrets(ctx, g.r, g.ns, client.MatchingLabels{LabelComponent: GrantComponent, LabelGrantUser: userLabel(user)}, g.expires, g.delete)
	if err != nil {
		return fmt.Errorf("listing the grants: %w", err)
	}
	slices.SortFunc(keep, func(a, b corev1.Secret) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	for i := 0; len(keep)-i >= g.MaxPerUser && i < len(keep); i++ {
		g.delete(ctx, &keep[i])
	}
	return nil
}

// Sweep deletes every expired grant (a person who never comes back leaves theirs).
func (g *Grants) Sweep(ctx context.Context) error {
	_, err := liveSecrets(ctx, g.r, g.ns, client.MatchingLabels{LabelComponent: GrantComponent}, g.expires, g.delete)
	return err
}

// expires is when a grant Secret expires; one that does not read has.
func (g *Grants) expires(s *corev1.Secret) time.Time {
	gr, err := parseGrant(s)
	if err != nil {
		return time.Time{}
	}
	return gr.Data.Expires
}

// liveSecrets lists the Secrets of the namespace with the labels, deletes those
// whose expiry has passed, and answers the others.
func liveSecrets(ctx context.Context, r client.Reader, ns string, labels client.MatchingLabels,
	expires func(*corev1.Secret) time.Time, deleteSecret func(context.Context, *corev1.Secret)) ([]corev1.Secret, error) {
	var list corev1.SecretList
	if err := r.List(ctx, &list, client.InNamespace(ns), labels); err != nil {
		return nil, err
	}
	live := list.Items[:0]
	for i := range list.Items {
		if time.Now().After(expires(&list.Items[i])) {
			deleteSecret(ctx, &list.Items[i])
			continue
		}
		live = append(live, list.Items[i])
	}
	return live, nil
}

func (g *Grants) delete(ctx context.Context, s *corev1.Secret) {
	g.alive.Remove(s.Name)
	_ = client.IgnoreNotFound(g.c.Delete(ctx, s, client.Preconditions{UID: &s.UID}))
}

func parseGrant(s *corev1.Secret) (*grant, error) {
	if s.Type != GrantSecretType || !strings.HasPrefix(s.Name, grantPrefix) {
		return nil, errNoGrant
	}
	var d grantData
	if err := json.Unmarshal(s.Data[grantDataKey], &d); err != nil {
		return nil, errNoGrant
	}
	return &grant{secret: s, Data: d}, nil
}

func (g *Grants) get(ctx context.Context, name string) (*grant, error) {
	var s corev1.Secret
	if err := g.r.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errNoGrant
		}
		return nil, err
	}
	gr, err := parseGrant(&s)
	if err != nil {
		return nil, err
	}
	if time.Now().After(gr.Data.Expires) {
		g.delete(ctx, &s)
		return nil, errNoGrant
	}
	return gr, nil
}

// byCode is the grant of a code not redeemed yet. A code redeemed before
// revokes its grant: someone else holds it (RFC 6749 4.1.2).
func (g *Grants) byCode(ctx context.Context, code string) (*grant, error) {
	gr, err := g.presented(ctx, grantName(code))
	if err != nil {
		return nil, err
	}
	if !sameHash(gr.Data.Code, hashOf(code)) {
		return nil, errNoGrant
	}
	if gr.Data.Redeemed {
		g.delete(ctx, gr.secret)
		return nil, errReplay
	}
	return gr, nil
}

// byRefresh is the grant of a refresh token (as tokenOf made it) that is valid
// now. The token it replaced revokes the grant.
func (g *Grants) byRefresh(ctx context.Context, token string) (*grant, error) {
	name, ok := g.issued(token)
	if !ok {
		return nil, errNoGrant
	}
	gr, err := g.presented(ctx, name)
	if err != nil {
		return nil, err
	}
	h := hashOf(token)
	switch {
	case sameHash(gr.Data.Refresh, h):
		return gr, nil
	case sameHash(gr.Data.Previous, h):
		g.delete(ctx, gr.secret)
		return nil, errReplay
	}
	return nil, errNoGrant
}

// renew marks the grant's code redeemed or replaces its refresh token, and
// writes it naming the version read: of two replicas redeeming one code or one
// refresh token at once, one wins and the other is refused. It returns the new
// refresh token ("" when the grant has none).
func (g *Grants) renew(ctx context.Context, gr *grant, refreshable bool, change func(*grantData)) (string, error) {
	d := gr.Data
	if change != nil {
		change(&d)
	}
	if d.Redeemed && d.Refresh == "" {
		return "", errNoGrant
	}
	d.Redeemed = true
	token := ""
	if refreshable {
		token = g.tokenOf(gr.secret.Name)
		d.Previous, d.Refresh = d.Refresh, hashOf(token)
		d.Expires = d.until(time.Now().Add(g.RefreshTTL))
	} else {
		// Without a refresh token the grant lives as long as its access token.
		d.Expires = d.until(time.Now().Add(time.Hour))
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	s := gr.secret.DeepCopy()
	s.Data[grantDataKey] = raw
	if err := g.c.Update(ctx, s); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return "", errReplay
		}
		return "", fmt.Errorf("storing the grant: %w", err)
	}
	gr.secret, gr.Data = s, d
	return token, nil
}

// Alive is true while the grant exists: what this replica read within AliveFor
// is taken as it was.
func (g *Grants) Alive(ctx context.Context, name string) (bool, error) {
	if ok, found := g.alive.Get(name); found {
		return ok, nil
	}
	if !isName(grantPrefix, name) {
		return false, nil
	}
	_, err := g.get(ctx, name)
	switch {
	case err == nil:
		g.alive.Add(name, true)
		return true, nil
	case errors.Is(err, errNoGrant):
		g.alive.Add(name, false)
		return false, nil
	}
	return false, err
}
