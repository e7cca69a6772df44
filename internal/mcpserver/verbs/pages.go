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
	"encoding/json"
	"fmt"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// Lists come in pages, so that no client cuts a result without saying so: at most
// the server's page size (tool.Bounds.Items) and, together, within its byte bound;
// the continue token of a page gives the next one.

// listArgs are the paging arguments of a verb that lists.
type listArgs struct {
	Limit    int64  `json:"limit,omitempty" jsonschema:"At most this many items (default and most: the server's page size)."`
	Continue string `json:"continue,omitempty" jsonschema:"The continue token of a previous call, for the next page."`
}

// pageKind is the kind of a listing verb's continue token.
const pageKind = "page"

// badContinue refuses a continue token that does not open (see package seal).
func badContinue() error {
	return tool.BadArgs("argument \"continue\" is not a token this server gave out for this query, or a stale one: " +
		"call again without it to start from the first page")
}

// pageCursor is where the next page starts.
type pageCursor struct {
	Offset int `json:"o"`
}

// headroom is room left in the byte bound for what a result holds besides its items.
const headroom = 2 << 10

// byteBudget is how many bytes of items a result may hold: the server's bound less
// headroom, or fallback when it sets none (or a larger one).
func byteBudget(c *tool.Call, fallback int) int {
	if b := c.Bounds.Bytes - headroom; c.Bounds.Bytes > 0 && (fallback <= 0 || b < fallback) {
		return b
	}
	return fallback
}

// itemBytes is an item's size as it appears in a result's text (indented JSON):
// the length json.MarshalIndent(v, "    ", "  ") gives, plus 6, counted on the compact
// JSON rather than indented again (a find sizes every item it answers).
func itemBytes(v any) int {
	b, _ := json.Marshal(v)
	return indentedLen(b, len("    "), len("  ")) + 6
}

// indentedLen is the length of what json.Indent makes of compact JSON (as
// json.Marshal writes it) with a prefix and an indent of those lengths: each element
// of a non-empty object or array on a line of its own, a space after each colon.
func indentedLen(compact []byte, prefix, indent int) int {
	n, depth := 0, 0
	opened, inString, escaped := false, false, false
	for _, c := range compact {
		if inString {
			n++
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if opened && c != '}' && c != ']' { // the first element of an object or array
			opened = false
			depth++
			n += 1 + prefix + indent*depth
		}
		switch c {
		case '"':
			inString = true
			n++
		case '{', '[':
			opened = true // {} and [] stay on their line
			n++
		case ',':
			n += 2 + prefix + indent*depth
		case ':':
			n += 2
		case '}', ']':
			if opened {
				opened = false
			} else {
				depth--
				n += 1 + prefix + indent*depth
			}
			n++
		default:
			n++
		}
	}
	return n
}

// Page is what a listing verb's answer says of its page besides the items: how
// many items there are in all and, when more remain, the continue token of the
// next page and a note that says so.
type Page struct {
	Total    int    `json:"total"`
	Continue string `json:"continue,omitempty"`
	Note     string `json:"note,omitempty"`
}

// page is one page of items and what the answer says of it.
// The continue token is bound to the call's account and tool and to query, the
// arguments that chose the items.
func page[T any](c *tool.Call, items []T, in listArgs, query any) ([]T, Page, error) {
	scope := c.Scope(query)
	start := 0
	if in.Continue != "" {
		var cur pageCursor
		if err := c.Tokens().Open(pageKind, scope, in.Continue, &cur); err != nil || cur.Offset <= 0 {
			return nil, Page{}, badContinue()
		}
		start = min(cur.Offset, len(items))
	}
	limit := len(items)
	if n := c.Bounds.Items; n > 0 {
		limit = n
	}
	if in.Limit > 0 && int(in.Limit) < limit {
		limit = int(in.Limit)
	}
	budget := byteBudget(c, 0)
	end, size := start, 0
	for end < len(items) && end-start < limit {
		if budget > 0 {
			size += itemBytes(items[end])
			if size > budget && end > start {
				break
			}
		}
		end++
	}
	pg := Page{Total: len(items)}
	if end < len(items) {
		pg.Continue = c.Tokens().Seal(pageKind, scope, pageCursor{Offset: end})
		pg.Note = fmt.Sprintf("items %d to %d of %d; pass \"continue\" for the next page", start+1, end, len(items))
	}
	return nonNil(items[start:end]), pg, nil
}
