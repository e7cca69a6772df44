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

package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/authserver"
)

// The authorization server's signing keys live in one Secret: replicas that start
// together make one ring, a key one replica adds is found by the others when a
// token names it, and a Secret that does not read is left as it is.
func TestTheSigningKeysLiveInOneSecretEveryReplicaReads(t *testing.T) {
	ctx := t.Context()
	name := types.NamespacedName{Namespace: "default", Name: "signing-keys-" + rand.String(6)}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}})
	})
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	times := authserver.DefaultRingTimes
	// b's reads of the Secret are counted.
	var reads atomic.Int64
	watching, err := client.NewWithWatch(apiConfig, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	counted := interceptor.NewClient(watching, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
	})
	a := authserver.NewKeyStore(k8s, name, times).WithClock(clock)
	b := authserver.NewKeyStore(counted, name, times).WithClock(clock)

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, s := range []*authserver.KeyStore{a, b} {
		wg.Go(func() { errs <- s.Sync(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ka, okA := a.Signer()
	kb, okB := b.Signer()
	if !okA || !okB || ka.JWK.KeyID != kb.JWK.KeyID {
		t.Fatalf("two replicas starting at once sign with %q and %q, want one key", ka.JWK.KeyID, kb.JWK.KeyID)
	}
	var secret corev1.Secret
	if err := k8s.Get(ctx, name, &secret); err != nil {
		t.Fatal(err)
	}
	if ring, err := authserver.ParseKeyRing(secret.Data[authserver.KeyRingDataKey]); err != nil || len(ring.Keys) != 1 {
		t.Fatalf("the Secret holds %v (%v), want one key", ring.Keys, err)
	}

	// A week on, replica a rotates; b finds the new key once a token names it.
	advance(times.RotateAfter)
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	ring := a.Ring()
	if len(ring.Keys) != 2 {
		t.Fatalf("after a week the ring holds %d keys, want 2", len(ring.Keys))
	}
	newKID := ring.Keys[1].JWK.KeyID
	if _, ok := b.Ring().Find(newKID); ok {
		t.Fatal("b holds the new key before reading the Secret again")
	}
	if _, ok := b.Find(ctx, newKID); !ok {
		t.Error("b does not find a key a has added")
	}
	// A forged key id does not make b read the Secret again at once.
	before := reads.Load()
	for range 10 {
		if _, ok := b.Find(ctx, "forged"); ok {
			t.Error("a forged key id was found")
		}
	}
	if n := reads.Load() - before; n != 0 {
		t.Errorf("ten forged key ids made %d reads of the Secret right after one, want 0", n)
	}
	advance(11 * time.Second)
	if _, ok := b.Find(ctx, "forged"); ok || reads.Load()-before != 1 {
		t.Errorf("a forged key id 11 s after the last read made %d reads, want 1", reads.Load()-before)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if k, _ := b.Signer(); k.JWK.KeyID == newKID {
		t.Error("the new key signs before it was published for Publish")
	}
	advance(times.Publish)
	if k, _ := b.Signer(); k.JWK.KeyID != newKID {
		t.Error("the new key does not sign once published")
	}

	// A Secret that does not read is not overwritten.
	if err := k8s.Get(ctx, name, &secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[authserver.KeyRingDataKey] = []byte("{not json")
	if err := k8s.Update(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	err = a.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "delete it to start a new ring") {
		t.Errorf("a ring that does not read: %v", err)
	}
	if k, ok := a.Signer(); !ok || k.JWK.KeyID != newKID {
		t.Error("a failed sync dropped the ring read before")
	}
	if err := k8s.Get(ctx, name, &secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data[authserver.KeyRingDataKey]) != "{not json" {
		t.Error("a ring that does not read was overwritten")
	}
}
