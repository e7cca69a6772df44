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

package identity

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// stalling is a REST mapper whose lookups of the group "stalled" wait until release
// is closed, as discovery does while the API server does not answer; it counts its
// lookups. It holds one lock for every lookup, as controller-runtime's lazy mapper
// does while it asks the API server.
type stalling struct {
	meta.RESTMapper
	release chan struct{}
	lookups atomic.Int32
	mu      sync.RWMutex
}

func (s *stalling) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	s.lookups.Add(1)
	if gk.Group == "stalled" {
		s.mu.Lock()
		defer s.mu.Unlock()
		<-s.release
	} else {
		s.mu.RLock()
		defer s.mu.RUnlock()
	}
	return &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: gk.Group, Version: versions[0], Resource: "things"},
		GroupVersionKind: gk.WithVersion(versions[0]), Scope: meta.RESTScopeNamespace}, nil
}

// A request waits for a kind's first lookup only until its deadline; the lookup goes
// on, once for all who ask, and what it finds is kept. A kind already known is
// answered while another kind's lookup is stalled.
func TestMapperWaitsForALookupOnlyUntilTheDeadline(t *testing.T) {
	inner := &stalling{release: make(chan struct{})}
	m := NewMapper(inner)
	known := schema.GroupVersionKind{Group: "known", Version: "v1", Kind: "Thing"}
	if err := m.Resolve(context.Background(), known); err != nil {
		t.Fatal(err)
	}

	stalled := schema.GroupVersionKind{Group: "stalled", Version: "v1", Kind: "Thing"}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := m.Resolve(ctx, stalled)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stalled lookup: %v, want the deadline's error", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("waited %s for a lookup past a deadline of 100ms", waited)
	}
	// Another request meanwhile shares the lookup under way.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_ = m.Resolve(ctx2, stalled)

	done := make(chan error, 1)
	go func() {
		_, err := m.RESTMapping(known.GroupKind(), known.Version)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a known kind waited for another kind's stalled lookup")
	}

	close(inner.release)
	ctx3, cancel3 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel3()
	if err := m.Resolve(ctx3, stalled); err != nil {
		t.Fatal(err)
	}
	mapping, err := m.RESTMapping(stalled.GroupKind(), "v1")
	if err != nil || mapping.Resource.Resource != "things" {
		t.Fatalf("the kept mapping: %v, %v", mapping, err)
	}
	if n := inner.lookups.Load(); n != 2 {
		t.Errorf("%d lookups of the inner mapper, want 2 (one per kind)", n)
	}
}
