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
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeyRingDataKey is the key of the ring in its Secret's data.
const KeyRingDataKey = "keyring.json"

// KeyStore keeps the key ring in a Secret that every replica reads and any
// replica may rotate: a write names the resourceVersion it read, so two replicas
// rotating at once make one new key, not two. Between syncs it answers from the
// ring it read last.
type KeyStore struct {
	c     client.Client
	name  types.NamespacedName
	times RingTimes
	now   func() time.Time

	mu       sync.Mutex
	ring     KeyRing
	lastSync time.Time
}

// NewKeyStore keeps the ring in the Secret name; c must read past any cache (a
// replica that has just rotated is read by the others at once).
func NewKeyStore(c client.Client, name types.NamespacedName, times RingTimes) *KeyStore {
	return &KeyStore{c: c, name: name, times: times, now: time.Now}
}

// WithClock makes the store read the time from now (tests move it on); it
// returns the store.
func (s *KeyStore) WithClock(now func() time.Time) *KeyStore {
	s.now = now
	return s
}

// Sync reads the ring, rotates it when it is due, writes it back when that
// changed it, and keeps it. It tries again after a conflict (another replica
// wrote first) a few times.
func (s *KeyStore) Sync(ctx context.Context) error {
	var err error
	for range 5 {
		var ring KeyRing
		if ring, err = s.syncOnce(ctx); err == nil {
			s.mu.Lock()
			s.ring, s.lastSync = ring, s.now()
			s.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return err
}

func (s *KeyStore) syncOnce(ctx context.Context) (KeyRing, error) {
	var secret corev1.Secret
	err := s.c.Get(ctx, s.name, &secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return KeyRing{}, fmt.Errorf("reading the signing keys (Secret %s): %w", s.name, err)
	}
	exists := err == nil
	var ring KeyRing
	if exists && len(secret.Data[KeyRingDataKey]) > 0 {
		if ring, err = ParseKeyRing(secret.Data[KeyRingDataKey]); err != nil {
			// A ring that does not read is not overwritten: the tokens its keys
			// signed would all fail at once. An admin deletes the Secret to start over.
			return KeyRing{}, fmt.Errorf("the signing keys in Secret %s: %w (delete it to start a new ring)", s.name, err)
		}
	}
	next, changed, err := ring.Rotate(s.now(), s.times)
	if err != nil || !changed {
		return next, err
	}
	data, err := json.Marshal(next)
	if err != nil {
		return KeyRing{}, err
	}
	if !exists {
		return next, s.c.Create(ctx, newSecret(s.name.Namespace, s.name.Name, "oauth-signing-keys", corev1.SecretTypeOpaque, KeyRingDataKey, data))
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[KeyRingDataKey] = data
	// Update names the resourceVersion read: a replica that wrote meanwhile wins,
	// and this one reads its ring on the next try.
	return next, s.c.Update(ctx, &secret)
}

// Ring is the ring read last.
func (s *KeyStore) Ring() KeyRing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring
}

// Signer is the key that signs now, from the ring read last.
func (s *KeyStore) Signer() (RingKey, bool) {
	return s.Ring().Signer(s.now(), s.times)
}

// resyncAfter spaces out the reads a token with an unknown key id causes.
const resyncAfter = 10 * time.Second

// Find is the key with this id. A key the ring read last does not hold may have
// been added by another replica since: the Secret is read again, at most every
// resyncAfter whoever asks, so forged key ids do not make the server read it on
// every request.
func (s *KeyStore) Find(ctx context.Context, kid string) (RingKey, bool) {
	if k, ok := s.Ring().Find(kid); ok {
		return k, true
	}
	s.mu.Lock()
	due := s.now().Sub(s.lastSync) >= resyncAfter
	if due {
		s.lastSync = s.now()
	}
	s.mu.Unlock()
	if !due {
		return RingKey{}, false
	}
	if err := s.Sync(ctx); err != nil {
		return RingKey{}, false
	}
	return s.Ring().Find(kid)
}
