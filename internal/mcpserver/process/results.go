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

package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// A stored result (an export's) is read page by page: each page as many items as the
// server's bounds allow, read from the chunks the process owns, with a continue token
// for the next. The token names the chunk and item where the next page starts, and
// the result's digest, so that it is refused for any other result.

// pageHeadroom is room in the byte bound for what a page holds besides its items:
// the task, the summary, the token and the note.
const pageHeadroom = 4 << 10

// pageToken is where the next page of a stored result starts.
type pageToken struct {
	Chunk  int    `json:"c"`
	Item   int    `json:"i"`
	Digest string `json:"d"`
}

// ErrBadToken is a continue token this server did not give out for the result.
var ErrBadToken = fmt.Errorf("not a continue token this server gave out for this task's result, or a stale one: " +
	"ask again without it for the first page")

// resultKind is the kind of a stored result's continue token.
const resultKind = "task-result"

// Stored reports whether a finished process's items are stored outside its status.
func Stored(p *metav1alpha1.WorkflowProcess) *builtin.Stored {
	if p.Status.Phase != metav1alpha1.PhaseSucceeded || p.Status.Result == nil {
		return nil
	}
	return builtin.StoredOf(p.Status.Result.Raw)
}

// ResultPage is one page of the stored result of a process the account has read
// (through Get, which checks that it is the account's): the result's other keys,
// the page's items, and "continue" and "note" (note(token) says how to ask for the
// next page) while more follow. The first page when token is empty. A page holds at
// most b.Items items (tool.DefaultResultItems without a bound), within b.Bytes.
func (s *Service) ResultPage(ctx context.Context, p *metav1alpha1.WorkflowProcess, st *builtin.Stored, token string,
	b tool.Bounds, note func(token string) string) (map[string]any, error) {
	at := pageToken{Digest: st.Digest[:16]}
	// The token is bound to the process (its UID: a process made again under the
	// same name is another) and to the result (its digest).
	scope := seal.Scope(p.Namespace, p.Name, string(p.UID))
	if token != "" {
		var t pageToken
		if s.tokens.Open(resultKind, scope, token, &t) != nil || t.Digest != at.Digest || t.Chunk < 0 || t.Chunk >= len(st.Chunks) ||
			t.Item < 0 || t.Item >= st.Chunks[t.Chunk].Items {
			return nil, ErrBadToken
		}
		at = t
	}
	out := map[string]any{}
	if err := json.Unmarshal(p.Status.Result.Raw, &out); err != nil {
		return nil, err
	}
	delete(out, "stored")
	out["bytes"] = st.Bytes
	first := 0 // the index of the page's first item in the whole result
	for _, c := range st.Chunks[:at.Chunk] {
		first += c.Items
	}
	first += at.Item
	limit := b.Items
	if limit <= 0 {
		limit = tool.DefaultResultItems // pages, even without a bound on lists
	}
	budget := b.Bytes - pageHeadroom
	ref := builtin.ProcessRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
	items, size := []any{}, 0
	var buf bytes.Buffer
	for at.Chunk < len(st.Chunks) && len(items) < limit {
		chunk, err := builtin.ReadChunk(ctx, s.apiReader, ref, st, at.Chunk)
		if err != nil {
			return nil, err
		}
		full := false
		for ; at.Item < len(chunk) && len(items) < limit; at.Item++ {
			// Its size as it appears in a result's indented text.
			buf.Reset()
			_ = json.Indent(&buf, chunk[at.Item], "      ", "  ")
			n := buf.Len() + 8
			if b.Bytes > 0 && size+n > budget && len(items) > 0 {
				full = true
				break
			}
			var item any
			if err := json.Unmarshal(chunk[at.Item], &item); err != nil {
				return nil, err
			}
			size += n
			items = append(items, item)
		}
		if full {
			break
		}
		if at.Item >= len(chunk) {
			at.Chunk, at.Item = at.Chunk+1, 0
		}
	}
	out["items"] = items
	if at.Chunk < len(st.Chunks) {
		next := s.tokens.Seal(resultKind, scope, at)
		out["continue"] = next
		out["note"] = fmt.Sprintf("items %d to %d of %d. %s", first+1, first+len(items), st.Count(), note(next))
	} else if first > 0 || len(items) < st.Count() {
		out["note"] = fmt.Sprintf("items %d to %d of %d: the last page", first+1, first+len(items), st.Count())
	}
	return out, nil
}
