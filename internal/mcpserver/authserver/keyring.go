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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// KeyRing is the set of keys the authorization server signs access tokens with,
// as every replica reads it from one Secret. Rotation adds a key ahead of its use
// and drops one only after the tokens it signed have expired:
//   - a new key is published for Publish before it signs, so that every replica
//     holds it before the first token it signs reaches one (the first key of an
//     empty ring signs at once: no token exists yet);
//   - once the signing key is RotateAfter old, a new key is added;
//   - an older key is dropped once a newer one has signed for longer than
//     Retire, the longest life of a token (with the clock skew allowed).
//
// A KeyRing is a value: Rotate returns a new one.
type KeyRing struct {
	Keys []RingKey `json:"keys"`
}

// RingKey is one ES256 key of the ring, with its private part.
type RingKey struct {
	Created time.Time       `json:"created"`
	JWK     jose.JSONWebKey `json:"jwk"`
}

// RingTimes are the rotation's periods.
type RingTimes struct {
	Publish, RotateAfter, Retire time.Duration
}

// DefaultRingTimes: a key is published ten minutes before it signs (replicas
// read the Secret again at least every five), signs for a week, and is kept a
// day after (access tokens live an hour at most).
var DefaultRingTimes = RingTimes{Publish: 10 * time.Minute, RotateAfter: 7 * 24 * time.Hour, Retire: 24 * time.Hour}

// signs is when a key starts signing in the ring.
func (r KeyRing) signs(i int, t RingTimes) time.Time {
	if i == 0 {
		return r.Keys[0].Created
	}
	return r.Keys[i].Created.Add(t.Publish)
}

// Signer is the key that signs at now: the newest key published long enough.
// ok is false for an empty ring.
func (r KeyRing) Signer(now time.Time, t RingTimes) (key RingKey, ok bool) {
	for i := len(r.Keys) - 1; i >= 0; i-- {
		if !now.Before(r.signs(i, t)) {
			return r.Keys[i], true
		}
	}
	if len(r.Keys) > 0 {
		return r.Keys[0], true
	}
	return RingKey{}, false
}

// Rotate is the ring as it should be at now, and whether that differs from r:
// a first key, a new key once the signing key is RotateAfter old (unless a newer
// one is already published), and without the keys whose successor has signed
// for longer than Retire.
func (r KeyRing) Rotate(now time.Time, t RingTimes) (KeyRing, bool, error) {
	out := KeyRing{Keys: slices.Clone(r.Keys)}
	changed := false
	signer, ok := out.Signer(now, t)
	newest := len(out.Keys) - 1
	if !ok || (now.Sub(signer.Created) >= t.RotateAfter && out.Keys[newest].JWK.KeyID == signer.JWK.KeyID) {
		k, err := NewRingKey(now)
		if err != nil {
			return r, false, err
		}
		out.Keys = append(out.Keys, k)
		changed = true
	}
	// Keep each key whose successor has not yet signed for Retire.
	kept := out.Keys[:0:0]
	for i, k := range out.Keys {
		if i+1 < len(out.Keys) && !now.Before(out.signs(i+1, t).Add(t.Retire)) {
			changed = true
			continue
		}
		kept = append(kept, k)
	}
	out.Keys = kept
	return out, changed, nil
}

// NewRingKey makes an ES256 key; its id is its JWK thumbprint (RFC 7638).
func NewRingKey(now time.Time) (RingKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return RingKey{}, err
	}
	jwk := jose.JSONWebKey{Key: priv, Algorithm: string(jose.ES256), Use: "sig"}
	pub := jwk.Public()
	thumb, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return RingKey{}, err
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	return RingKey{Created: now.UTC().Truncate(time.Second), JWK: jwk}, nil
}

// Public is the JWKS of the ring: the public part of every key, the ones not
// signing yet and the ones no longer signing included.
func (r KeyRing) Public() jose.JSONWebKeySet {
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(r.Keys))}
	for _, k := range r.Keys {
		set.Keys = append(set.Keys, k.JWK.Public())
	}
	return set
}

// Find is the key of the ring with this id.
func (r KeyRing) Find(kid string) (RingKey, bool) {
	i := slices.IndexFunc(r.Keys, func(k RingKey) bool { return k.JWK.KeyID == kid })
	if i < 0 {
		return RingKey{}, false
	}
	return r.Keys[i], true
}

// maxRingKeys bounds a ring read from a Secret: rotation never keeps more than
// three keys, so anything longer was not written by it.
const maxRingKeys = 8

// ParseKeyRing reads a ring as its Secret holds it (JSON), checking every key.
func ParseKeyRing(data []byte) (KeyRing, error) {
	var r KeyRing
	if err := json.Unmarshal(data, &r); err != nil {
		return KeyRing{}, fmt.Errorf("the signing keys are not a key ring: %w", err)
	}
	if len(r.Keys) > maxRingKeys {
		return KeyRing{}, fmt.Errorf("the signing keys hold %d keys, more than %d", len(r.Keys), maxRingKeys)
	}
	for i, k := range r.Keys {
		priv, ok := k.JWK.Key.(*ecdsa.PrivateKey)
		switch {
		case !ok || priv.Curve != elliptic.P256():
			return KeyRing{}, fmt.Errorf("signing key %d is not a private P-256 key", i)
		case k.JWK.KeyID == "" || k.JWK.Algorithm != string(jose.ES256):
			return KeyRing{}, fmt.Errorf("signing key %d has no key id or is not for ES256", i)
		case i > 0 && k.Created.Before(r.Keys[i-1].Created):
			return KeyRing{}, errors.New("the signing keys are not in the order they were made")
		}
	}
	return r, nil
}
