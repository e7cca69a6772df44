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

package transport

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): a go-sdk release whose
// MemoryEventStore bounds the streams of a session, not only the bytes, would remove
// this file (no go-sdk issue yet).

// Bounds of an [EventStore] made by [NewEventStore].
const (
	// DefaultEventStreams is how many request streams of a session are kept: a
	// client resumes the streams of the requests it has in flight, never many.
	DefaultEventStreams = 64
	// DefaultEventBytes is how much event data all sessions together keep.
	DefaultEventBytes = 10 << 20
)

// EventStore keeps what the server sent on each stream of a session, so that a
// client that lost a stream resumes it with Last-Event-ID, and so that
// notifications sent while a session has no GET stream open wait for it. It is
// go-sdk's mcp.EventStore, bounded in both directions: the SDK's MemoryEventStore
// caps the bytes it keeps but holds an entry for every stream a session ever
// opened (every POST is one) until the session ends, so a long, busy session
// grows without end. This one keeps the newest maxStreams request streams of a
// session (the session's standalone stream, id "", always) and maxBytes of data
// in all, the oldest events going first. A client that resumes a stream no longer
// kept gets the SDK's 400 and goes on without it.
type EventStore struct {
	maxStreams, maxBytes int

	mu       sync.Mutex
	bytes    int
	sessions map[string]*sessionEvents
}

type sessionEvents struct {
	streams map[string]*streamEvents
	// order holds the ids of the session's request streams, oldest first.
	order []string
}

type streamEvents struct {
	first int // the index of data[0]: how many events were dropped before it
	data  [][]byte
	size  int
}

// NewEventStore returns a store that keeps maxStreams request streams per session
// and maxBytes of event data in all (0: the defaults).
func NewEventStore(maxStreams, maxBytes int) *EventStore {
	if maxStreams <= 0 {
		maxStreams = DefaultEventStreams
	}
	if maxBytes <= 0 {
		maxBytes = DefaultEventBytes
	}
	return &EventStore{maxStreams: maxStreams, maxBytes: maxBytes, sessions: map[string]*sessionEvents{}}
}

var _ mcp.EventStore = (*EventStore)(nil)

// Open starts keeping a stream of a session, and forgets the session's oldest
// request stream past the bound.
func (s *EventStore) Open(_ context.Context, sessionID, streamID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sessionID]
	if sess == nil {
		sess = &sessionEvents{streams: map[string]*streamEvents{}}
		s.sessions[sessionID] = sess
	}
	if _, ok := sess.streams[streamID]; ok {
		return nil
	}
	sess.streams[streamID] = &streamEvents{}
	if streamID == "" {
		return nil
	}
	sess.order = append(sess.order, streamID)
	for len(sess.order) > s.maxStreams {
		old := sess.order[0]
		sess.order = slices.Delete(sess.order, 0, 1)
		s.bytes -= sess.streams[old].size
		delete(sess.streams, old)
	}
	return nil
}

// Append keeps an event of a stream. An event of a stream no longer kept (past
// the bound while its request was still answering) is not kept: it is delivered,
// and cannot be resumed.
func (s *EventStore) Append(_ context.Context, sessionID, streamID string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sessionID]
	if sess == nil {
		return nil
	}
	st := sess.streams[streamID]
	if st == nil {
		return nil
	}
	// Make room first, so that the newest event is always kept.
	s.purge(len(data))
	st.data = append(st.data, data)
	st.size += len(data)
	s.bytes += len(data)
	return nil
}

// purge drops the oldest event of each stream, round after round, until n more
// bytes fit. Requires s.mu.
func (s *EventStore) purge(n int) {
	for dropped := true; dropped && s.bytes+n > s.maxBytes; {
		dropped = false
		for _, sess := range s.sessions {
			for _, st := range sess.streams {
				if len(st.data) == 0 {
					continue
				}
				s.bytes -= len(st.data[0])
				st.size -= len(st.data[0])
				st.data[0] = nil
				st.data = st.data[1:]
				st.first++
				dropped = true
				if s.bytes+n <= s.maxBytes {
					return
				}
			}
		}
	}
}

// After yields the events of a stream after index, or an error when the stream or
// any of those events is no longer kept.
func (s *EventStore) After(_ context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	var (
		out []([]byte)
		err error
	)
	if sess := s.sessions[sessionID]; sess == nil {
		err = fmt.Errorf("events of session %q are not kept", sessionID)
	} else if st := sess.streams[streamID]; st == nil {
		err = fmt.Errorf("events of stream %q are not kept: %w", streamID, mcp.ErrEventsPurged)
	} else if start := index + 1 - st.first; start < 0 {
		err = fmt.Errorf("stream %q, after event %d: %w", streamID, index, mcp.ErrEventsPurged)
	} else if start < len(st.data) {
		out = slices.Clone(st.data[start:])
	}
	s.mu.Unlock()
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range out {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// SessionClosed forgets a session's streams.
func (s *EventStore) SessionClosed(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[sessionID]; sess != nil {
		for _, st := range sess.streams {
			s.bytes -= st.size
		}
		delete(s.sessions, sessionID)
	}
	return nil
}
