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
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replay reads what a client resuming a stream after index would get.
func replay(s mcp.EventStore, session, stream string, index int) ([]string, error) {
	var out []string
	for d, err := range s.After(context.Background(), session, stream, index) {
		if err != nil {
			return nil, err
		}
		out = append(out, string(d))
	}
	return out, nil
}

// A long session makes a stream per request. The store keeps the newest of them and
// the session's standalone stream, so a session of hours holds what one of minutes
// does; the SDK's MemoryEventStore keeps an entry for every one until the session
// ends.
func TestEventStoreKeepsTheNewestStreamsOfALongSession(t *testing.T) {
	ctx := context.Background()
	s := NewEventStore(8, 0)
	if err := s.Open(ctx, "s1", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s1", "", []byte("tools/list_changed")); err != nil {
		t.Fatal(err)
	}
	for i := range 10000 {
		id := fmt.Sprintf("req-%d", i)
		if err := s.Open(ctx, "s1", id); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "s1", id, []byte("answer "+id)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.sessions["s1"].streams); n != 9 {
		t.Errorf("the session keeps %d streams, want 8 request streams and the standalone one", n)
	}
	if _, err := replay(s, "s1", "req-0", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("resuming the first request's stream: %v, want ErrEventsPurged", err)
	}
	for _, id := range []string{"req-9992", "req-9999"} {
		got, err := replay(s, "s1", id, -1)
		if err != nil || len(got) != 1 || got[0] != "answer "+id {
			t.Errorf("resuming %s: %q, %v", id, got, err)
		}
	}
	if got, err := replay(s, "s1", "", -1); err != nil || len(got) != 1 {
		t.Errorf("the standalone stream: %q, %v; want its notification", got, err)
	}
	// An event of a stream past the bound while it still answered is not kept.
	if err := s.Append(ctx, "s1", "req-0", []byte("late")); err != nil {
		t.Fatal(err)
	}
	if _, err := replay(s, "s1", "req-0", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("a late event revived a stream no longer kept: %v", err)
	}
}

// Event data is bounded across sessions: the oldest events go first, the newest is
// always kept, and a resume that would miss an event fails rather than skip it.
func TestEventStoreKeepsAtMostItsBytes(t *testing.T) {
	ctx := context.Background()
	s := NewEventStore(0, 1000)
	event := make([]byte, 100)
	for sess := range 3 {
		id := fmt.Sprintf("s%d", sess)
		if err := s.Open(ctx, id, "r"); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if err := s.Append(ctx, id, "r", event); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.bytes > 1000 {
		t.Errorf("the store keeps %d bytes, more than its 1000", s.bytes)
	}
	if _, err := replay(s, "s0", "r", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("resuming from the start after the oldest events went: %v, want ErrEventsPurged", err)
	}
	got, err := replay(s, "s2", "r", 18)
	if err != nil || len(got) != 1 {
		t.Errorf("resuming after the last but one event: %d events, %v; want the last", len(got), err)
	}
	if err := s.Append(ctx, "s2", "r", make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	if got, err := replay(s, "s2", "r", 19); err != nil || len(got) != 1 || len(got[0]) != 5000 {
		t.Errorf("an event larger than the bound is still kept: %d events, %v", len(got), err)
	}
}

// A closed session's events go with it.
func TestEventStoreForgetsAClosedSession(t *testing.T) {
	ctx := context.Background()
	s := NewEventStore(0, 0)
	if err := s.Open(ctx, "s1", "r"); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s1", "r", []byte("answer")); err != nil {
		t.Fatal(err)
	}
	if err := s.SessionClosed(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if s.bytes != 0 || len(s.sessions) != 0 {
		t.Errorf("after the session closed the store keeps %d bytes of %d sessions", s.bytes, len(s.sessions))
	}
	if _, err := replay(s, "s1", "r", -1); err == nil {
		t.Error("a closed session's stream was resumed")
	}
}
