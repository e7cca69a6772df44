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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestTheKeyRingRotatesAheadOfUseAndRetiresAfterTheTokensExpire follows a ring
// through two rotations, as replicas reading the same Secret would see it.
func TestTheKeyRingRotatesAheadOfUseAndRetiresAfterTheTokensExpire(t *testing.T) {
	times := DefaultRingTimes
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var ring KeyRing
	rotate := func(at time.Duration, wantChanged bool) {
		t.Helper()
		next, changed, err := ring.Rotate(start.Add(at), times)
		if err != nil {
			t.Fatal(err)
		}
		if changed != wantChanged {
			t.Fatalf("at %s: changed = %v, want %v", at, changed, wantChanged)
		}
		ring = next
	}
	signer := func(at time.Duration) string {
		k, ok := ring.Signer(start.Add(at), times)
		if !ok {
			t.Fatalf("at %s: no signing key", at)
		}
		return k.JWK.KeyID
	}

	rotate(0, true)
	first := ring.Keys[0].JWK.KeyID
	if len(ring.Keys) != 1 || signer(0) != first {
		t.Fatalf("an empty ring gets one key that signs at once; got %d keys", len(ring.Keys))
	}
	rotate(time.Hour, false)

	week := times.RotateAfter
	rotate(week, true)
	if len(ring.Keys) != 2 {
		t.Fatalf("after a week: %d keys, want the old and a new one", len(ring.Keys))
	}
	second := ring.Keys[1].JWK.KeyID
	if got := signer(week); got != first {
		t.Error("a new key signed before it was published for Publish")
	}
	rotate(week+5*time.Minute, false) // another replica rotating meanwhile adds nothing
	if got := signer(week + times.Publish); got != second {
		t.Error("the new key does not sign once published")
	}
	if _, ok := ring.Find(first); !ok {
		t.Error("the old key was dropped while tokens it signed may live")
	}
	rotate(week+times.Publish+times.Retire-time.Second, false)
	rotate(week+times.Publish+times.Retire, true)
	if len(ring.Keys) != 1 || ring.Keys[0].JWK.KeyID != second {
		t.Fatalf("after Retire: keys %v, want the second key only", ring.Keys)
	}
	rotate(2*week, true)
	if len(ring.Keys) != 2 || signer(2*week) != second {
		t.Error("the second rotation does not keep the signing key until the new one is published")
	}
}

func TestTheJWKSHoldsNoPrivatePartAndVerifiesWhatTheSignerSigned(t *testing.T) {
	ring, _, err := KeyRing{}.Rotate(time.Now(), DefaultRingTimes)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(ring.Public())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), `"d"`) {
		t.Fatalf("the JWKS holds a private key: %s", body)
	}
	k, _ := ring.Signer(time.Now(), DefaultRingTimes)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.JWK}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign([]byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	compact, _ := jws.CompactSerialize()
	parsed, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	keys := set.Key(parsed.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("the JWKS has %d keys with the token's kid", len(keys))
	}
	if _, err := parsed.Verify(keys[0]); err != nil {
		t.Errorf("the JWKS does not verify the signer's token: %v", err)
	}
}

func TestAKeyRingIsReadBackAsWrittenAndGarbageIsRefused(t *testing.T) {
	ring, _, err := KeyRing{}.Rotate(time.Now(), DefaultRingTimes)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(ring)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKeyRing(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Keys[0].JWK.KeyID != ring.Keys[0].JWK.KeyID || !back.Keys[0].Created.Equal(ring.Keys[0].Created) {
		t.Error("the ring read back differs")
	}

	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	wrongCurve, _ := json.Marshal(KeyRing{Keys: []RingKey{{JWK: jose.JSONWebKey{Key: p384, KeyID: "x", Algorithm: "ES256"}}}})
	publicOnly, _ := json.Marshal(KeyRing{Keys: []RingKey{{JWK: ring.Keys[0].JWK.Public()}}})
	many := KeyRing{}
	for range maxRingKeys + 1 {
		many.Keys = append(many.Keys, ring.Keys[0])
	}
	tooMany, _ := json.Marshal(many)
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"not JSON":    {[]byte("{"), "not a key ring"},
		"wrong curve": {wrongCurve, "not a private P-256 key"},
		"public only": {publicOnly, "not a private P-256 key"},
		"too many":    {tooMany, "more than 8"},
	} {
		if _, err := ParseKeyRing(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}
