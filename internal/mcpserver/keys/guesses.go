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
	"crypto/sha256"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// guesses limits failed authentication attempts per key (a client address and the
// service name it claims). Its memory is bounded, and flooding it with new keys
// never resets a bucket: when it is full, buckets that have filled up again (which
// are no different from new ones) are pruned, and if none has, every new key shares
// one overflow bucket. So an attacker cannot wipe the bucket it emptied by making
// up addresses or service names.
type guesses struct {
	now   func() time.Time
	limit rate.Limit
	burst int
	max   int

	mu        sync.Mutex
	buckets   map[[32]byte]*rate.Limiter
	overflow  *rate.Limiter
	lastPrune time.Time
}

// pruneEvery spaces out the scans for idle buckets while the map is full.
const pruneEvery = time.Second

func newGuesses(limit rate.Limit, burst, maxBuckets int, now func() time.Time) *guesses {
	return &guesses{
		now: now, limit: limit, burst: burst, max: maxBuckets,
		buckets:  map[[32]byte]*rate.Limiter{},
		overflow: rate.NewLimiter(limit, burst),
	}
}

// guessKey names a bucket without keeping what a client sent (which may be a key).
func guessKey(host, service string) [32]byte {
	return sha256.Sum256([]byte(host + "\x00" + service))
}

// take takes one attempt of the key's bucket, to be given back (Cancel) if the
// attempt succeeds; nil when the bucket has none left. Two requests cannot both
// take the last one.
func (g *guesses) take(key [32]byte) *rate.Reservation {
	now := g.now()
	r := g.bucket(key, now).ReserveN(now, 1)
	if !r.OK() || r.DelayFrom(now) > 0 {
		r.CancelAt(now)
		return nil
	}
	return r
}

// bucket is the key's bucket, made when it has none (the overflow when the table
// is full).
func (g *guesses) bucket(key [32]byte, now time.Time) *rate.Limiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.buckets[key]
	if !ok {
		if len(g.buckets) >= g.max {
			g.prune(now)
		}
		if len(g.buckets) < g.max {
			l = rate.NewLimiter(g.limit, g.burst)
			g.buckets[key] = l
		} else {
			l = g.overflow
		}
	}
	return l
}

// attempt is one request's use of its client's bucket: a refusal spends an attempt,
// and a bcrypt comparison that the key's id does not vouch for takes it first, given
// back if the key verifies.
type attempt struct {
	g   *guesses
	key [32]byte
	// taken is the attempt taken, nil before.
	taken *rate.Reservation
}

// take takes the request's attempt (once); false when the bucket has none left.
func (at *attempt) take() bool {
	if at.taken == nil {
		at.taken = at.g.take(at.key)
	}
	return at.taken != nil
}

// succeeded gives back the attempt taken, if any.
func (at *attempt) succeeded() {
	if at.taken != nil {
		at.taken.CancelAt(at.g.now())
	}
}

// prune drops the buckets that are full again, at most once per pruneEvery. The
// caller holds mu.
func (g *guesses) prune(now time.Time) {
	if now.Sub(g.lastPrune) < pruneEvery {
		return
	}
	g.lastPrune = now
	for k, l := range g.buckets {
		if l.TokensAt(now) >= float64(g.burst) {
			delete(g.buckets, k)
		}
	}
}
