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
	"strconv"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// fail spends one of a key's attempts, as a refused request does.
func (g *guesses) fail(key [32]byte) { g.take(key) }

// limited says whether a key has no attempt left, spending none.
func (g *guesses) limited(key [32]byte) bool {
	r := g.take(key)
	if r == nil {
		return true
	}
	r.CancelAt(g.now())
	return false
}

// size is the number of buckets held.
func (g *guesses) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buckets)
}

// drain spends a key's attempts until it is limited, and says how many it had.
func drain(g *guesses, key [32]byte) int {
	n := 0
	for !g.limited(key) {
		g.fail(key)
		n++
	}
	return n
}

func TestGuessLimiterMemoryIsBounded(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := newGuesses(1, 10, 100, clock.now)
	for i := 0; i < 1000; i++ {
		g.fail(guessKey("10.0.0."+strconv.Itoa(i), "claude"))
		if g.size() > 100 {
			t.Fatalf("%d buckets after %d keys, want at most 100", g.size(), i+1)
		}
	}
	// Buckets that filled up again are dropped to make room.
	clock.t = clock.t.Add(time.Minute)
	g.fail(guessKey("10.1.0.1", "claude"))
	if g.size() != 1 {
		t.Errorf("%d buckets after every old one became idle, want 1", g.size())
	}
}

// An attacker who emptied a target's bucket cannot refill it by flooding the
// limiter with made-up addresses or service names.
func TestFloodingDistinctKeysDoesNotRefillTheTargetsBucket(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := newGuesses(1, 10, 100, clock.now)
	target := guessKey("192.0.2.1", "claude")
	if n := drain(g, target); n != 10 {
		t.Fatalf("the bucket held %d attempts, want 10", n)
	}
	for i := 0; i < 1000; i++ {
		g.fail(guessKey("192.0.2.1", "made-up-"+strconv.Itoa(i)))
		g.fail(guessKey("198.51.100."+strconv.Itoa(i), "claude"))
		if i%100 == 0 {
			// Time passes (half a second in all), less than the target needs to
			// earn one attempt back.
			clock.t = clock.t.Add(50 * time.Millisecond)
		}
	}
	if !g.limited(target) {
		t.Error("the flood gave the target's bucket its attempts back")
	}
	if g.size() > 100 {
		t.Errorf("%d buckets, want at most 100", g.size())
	}
	// New keys share one overflow bucket while the table is full, so the flood
	// cannot go on unlimited either.
	if !g.limited(guessKey("203.0.113.9", "claude")) {
		t.Error("a new key past the bound is not limited by the overflow bucket")
	}
}
