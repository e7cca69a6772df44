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

package catalog

import (
	"reflect"
	"sync"
	"sync/atomic"
)

// Store holds the current snapshot. Reads are lock-free; publishing is serialised.
type Store struct {
	current atomic.Pointer[Snapshot]
	// built is the version current after the first Publish, plus one (0: nothing
	// published yet).
	built atomic.Uint64

	mu      sync.Mutex
	changed chan struct{}
}

// NewStore returns a store holding an empty snapshot of version 0.
func NewStore() *Store {
	s := &Store{changed: make(chan struct{})}
	s.current.Store(&Snapshot{
		Classes:    map[string]*Class{},
		Properties: map[string]*Property{},
		Workflows:  map[string]*Workflow{},
		Accounts:   map[string]*Account{},
		Shared:     map[string][]*Account{},
	})
	return s
}

// Load returns the current snapshot.
func (s *Store) Load() *Snapshot { return s.current.Load() }

// Watch returns the current snapshot and a channel that is closed as soon as a newer
// one is published.
func (s *Store) Watch() (*Snapshot, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current.Load(), s.changed
}

// Built reports whether a build of the catalog was published (whether or not it
// changed the content: an empty cluster's build is the empty first snapshot), and the
// version current after the first one. Before, the store holds no more than its
// empty first snapshot, which is not what the cluster declares.
func (s *Store) Built() (version uint64, ok bool) {
	v := s.built.Load()
	if v == 0 {
		return 0, false
	}
	return v - 1, true
}

// Publish makes next the current snapshot if its content differs from the current
// one, numbering it one higher, and wakes every watcher. It reports whether it did.
// next must not be modified afterwards.
func (s *Store) Publish(next *Snapshot) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.current.Load()
	next.Version = cur.Version
	if sameContent(cur, next) {
		s.built.CompareAndSwap(0, cur.Version+1)
		return false
	}
	next.Version = cur.Version + 1
	s.current.Store(next)
	s.built.CompareAndSwap(0, next.Version+1)
	close(s.changed)
	s.changed = make(chan struct{})
	return true
}

// sameContent is reflect.DeepEqual of two snapshots, a map at a time: what a
// Builder took from the previous build is the same pointer, compared at no cost.
func sameContent(a, b *Snapshot) bool {
	return a.Version == b.Version && sameMap(a.Classes, b.Classes) && sameMap(a.Properties, b.Properties) &&
		sameMap(a.Workflows, b.Workflows) && sameMap(a.Accounts, b.Accounts) && reflect.DeepEqual(a.Shared, b.Shared)
}

func sameMap[V any](a, b map[string]*V) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || (v != w && !reflect.DeepEqual(v, w)) {
			return false
		}
	}
	return true
}
