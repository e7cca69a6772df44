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
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/auth"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

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
	case k.unchecked:
		return nil, &authFailure{reason: "account " + acct.Namespace + "/" + acct.Name + " is not checked yet", unchecked: true}
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
	// unchecked: the account is not checked yet, so even a right key does not pass.
	unchecked bool
}

// readKey reads the key of acct (nil: no account has the token's service name): the
// account and its key Secret, from the cache.
func (a *Authenticator) readKey(ctx context.Context, acct *catalog.Account) storedKey {
	k := storedKey{hash: dummyHash()}
	switch {
	case acct == nil:
		k.why = "unknown service name"
	case !acct.Active:
		k.why = "account " + acct.Namespace + "/" + acct.Name + " is inactive"
	case !acct.Ready && !acct.Unchecked:
		k.why = "account " + acct.Namespace + "/" + acct.Name + " is not ready"
	}
	if k.why != "" {
		return k
	}
	// An account the leader has not checked yet (just created or changed) is not
	// refused for that: its key is compared, and a right one is told to come again.
	k.unchecked = !acct.Ready
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
	a.mu.Lock()
	defer a.mu.Unlock()
	return perAccount(a.slots, acct, func() chan struct{} { return make(chan struct{}, 1) })
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
