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

package builtin

import (
	"encoding/json"
	"strings"
	"testing"
)

// A page of items too large for one chunk, compressed or as JSON, is split: every
// chunk stays within both bounds, and together they hold every item once, in order.
func TestLargePageIsSplitIntoChunksWithinBounds(t *testing.T) {
	var items []any
	for i := range 20 {
		// Compresses to almost nothing: only the bound on JSON splits these.
		items = append(items, map[string]any{"name": i, "text": strings.Repeat("z", 1<<20)})
	}
	chunks, err := encode(items)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 3 {
		t.Fatalf("20 MiB of JSON in %d chunks", len(chunks))
	}
	n := 0
	for _, c := range chunks {
		if len(c.gz) > maxChunkBytes || c.Bytes > maxChunkRawBytes || int64(len(c.gz)) != c.StoredBytes {
			t.Fatalf("a chunk of %d bytes (%d compressed) is past the bounds", c.Bytes, len(c.gz))
		}
		n += c.Items
	}
	if n != len(items) {
		t.Fatalf("the chunks hold %d items, not %d", n, len(items))
	}
}

// A summary whose digests this store did not write (a status edited by hand) is not
// read: no chunk name is made of it.
func TestStoredSummaryWithForeignDigestsIsNotRead(t *testing.T) {
	good := &Stored{}
	good.add(Chunk{Digest: strings.Repeat("ab", 32), Items: 1, Bytes: 10, StoredBytes: 20})
	for name, st := range map[string]*Stored{
		"short chunk digest": {Digest: good.Digest, Chunks: []Chunk{{Digest: "abc", Items: 1}}},
		"short digest":       {Digest: "ab", Chunks: good.Chunks},
		"not hex":            {Digest: good.Digest, Chunks: []Chunk{{Digest: strings.Repeat("zz", 32), Items: 1}}},
		"negative count":     {Digest: good.Digest, Chunks: []Chunk{{Digest: good.Chunks[0].Digest, Items: -1}}},
	} {
		raw, _ := json.Marshal(map[string]any{"count": 1, "stored": st})
		if StoredOf(raw) != nil {
			t.Errorf("%s: read", name)
		}
	}
	raw, _ := json.Marshal(map[string]any{"count": 1, "stored": good})
	if got := StoredOf(raw); got == nil || got.Count() != 1 {
		t.Fatalf("a good summary is not read: %+v", got)
	}
}
