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
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// emptyReader is an API server that holds no registered client, and counts the reads.
type emptyReader struct {
	client.Reader
	reads atomic.Int64
}

func (r *emptyReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	r.reads.Add(1)
	return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
}

// A made-up client id of the registered kind costs no read (its MAC is wrong),
// and one the server made but does not hold costs one, then none for a while.
func TestUnknownRegisteredClientsCostNoReads(t *testing.T) {
	r := &emptyReader{}
	regs := NewRegistrations(nil, r, "sandbar-system", 0, 0, 0, []byte("the key"))
	other := NewRegistrations(nil, r, "sandbar-system", 0, 0, 0, []byte("another key"))
	for range 100 {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		if _, err := regs.Get(t.Context(), clientPrefix+hex.EncodeToString(b)); err == nil {
			t.Fatal("a made-up client id was taken")
		}
	}
	if _, err := regs.Get(t.Context(), other.newID()); err == nil {
		t.Fatal("a client id of another key was taken")
	}
	if n := r.reads.Load(); n != 0 {
		t.Fatalf("made-up client ids cost %d reads", n)
	}
	ours := regs.newID()
	for range 5 {
		if _, err := regs.Get(t.Context(), ours); err == nil {
			t.Fatal("a client id the server does not hold was taken")
		}
	}
	if n := r.reads.Load(); n != 1 {
		t.Fatalf("a client id the server made and does not hold cost %d reads, want 1", n)
	}
}
