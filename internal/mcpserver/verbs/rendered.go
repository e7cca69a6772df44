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

package verbs

import (
	"sync"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// maxRenderedBytes bounds what one verb keeps of its rendered answers.
const maxRenderedBytes = 4 << 20

// rendered keeps the answers of a read verb whose answer depends only on the
// catalog snapshot and one argument (a class's description), rendered once
// (tool.Render) for the newest snapshot a call has seen; a newer one empties it.
// A call on an older snapshot renders its answer and keeps nothing, and answers past
// the bound are rendered for each call.
type rendered struct {
	mu      sync.Mutex
	version uint64
	snap    *catalog.Snapshot
	byKey   map[renderedKey]*tool.Rendered
	bytes   int
}

// renderedKey is an answer's argument and whether it was rendered with a scrub.
type renderedKey struct {
	arg      string
	scrubbed bool
}

// answer is the rendered answer of c to arg, which view makes when none is kept.
func (r *rendered) answer(c *tool.Call, arg string, view func() any) *tool.Rendered {
	k := renderedKey{arg: arg, scrubbed: c.Bounds.Scrub != nil}
	r.mu.Lock()
	if c.Snap != r.snap && (r.snap == nil || c.Snap.Version > r.version) {
		r.snap, r.version, r.byKey, r.bytes = c.Snap, c.Snap.Version, map[renderedKey]*tool.Rendered{}, 0
	}
	current := c.Snap == r.snap
	if out, ok := r.byKey[k]; ok && current {
		r.mu.Unlock()
		return out
	}
	r.mu.Unlock()
	out := tool.Render(view(), c.Bounds.Scrub)
	if !current {
		return out
	}
	r.mu.Lock()
	if c.Snap == r.snap && r.bytes+out.Size() <= maxRenderedBytes {
		if _, ok := r.byKey[k]; !ok {
			r.byKey[k] = out
			r.bytes += out.Size()
		}
	}
	r.mu.Unlock()
	return out
}
