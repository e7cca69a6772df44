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

package tool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds limit one tool result, so that no client cuts it without saying so (Claude
// Code keeps 25,000 tokens of a result by default, and JSON is about three bytes a
// token). Lists are cut into pages of at most Items items (verbs with a limit and a
// continue argument); any result whose text is longer than Bytes is cut into windows
// of at most Bytes bytes, which a read-only tool gives one after the other. The
// structured content of a cut result is the whole answer, as the tool's output
// schema says it: the bound is on the text, which is what clients show a model.
type Bounds struct {
	// Bytes bounds the text of a result (0: no bound).
	Bytes int
	// Items bounds the items of one page of a list (0: no bound).
	Items int
	// Scrub, when set, redacts a result's text before it is cut, so that no
	// credential is split across two parts where redaction would miss both halves.
	Scrub func(string) string
	// Vouch, when set, is told of a result that Scrub left as it was where it was
	// made, and that went out uncut (redact.Vouch), so that it is not scanned again.
	Vouch func(context.Context, *mcp.CallToolResult)
}

// Default bounds: 64 KiB of JSON is about 22,000 tokens, within Claude Code's default
// of 25,000; 100 items a page.
const (
	DefaultResultBytes = 64 << 10
	DefaultResultItems = 100
	// MinResultBytes is the smallest byte bound: room for one item and the note.
	MinResultBytes = 4 << 10
)

// ContinueArg is the argument that asks a read-only tool for the next window of a
// result that was cut.
const ContinueArg = "resultContinue"

// addContinueArg adds ContinueArg to the input schema of a read-only tool.
func addContinueArg(s *jsonschema.Schema) {
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	s.Properties[ContinueArg] = &jsonschema.Schema{Type: "string",
		Description: "Only when a previous result was cut: the token it ended with, for the next part (with the same other arguments)."}
}

// window is where a cut result goes on: the byte offset into its text and a hash of
// the whole text, so that a result that changed meanwhile is refused, not spliced.
type window struct {
	Offset int    `json:"o"`
	Hash   string `json:"h"`
}

func textHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8])
}

// readContinue takes ContinueArg out of a call's arguments: the window it asks for
// (nil when absent), and the arguments without it. The token opens only for the
// call's account and tool and the same other arguments (see windowScope).
func readContinue(c *Call, raw json.RawMessage) (*window, json.RawMessage, error) {
	// Arguments without the name, spelled plainly or with escapes, have no token:
	// most calls are answered without decoding them here.
	if !bytes.Contains(raw, []byte(ContinueArg)) && bytes.IndexByte(raw, '\\') < 0 {
		return nil, raw, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil || args[ContinueArg] == nil {
		return nil, raw, nil
	}
	var token string
	_ = json.Unmarshal(args[ContinueArg], &token)
	delete(args, ContinueArg)
	rest, _ := json.Marshal(args)
	if token == "" {
		return nil, rest, nil // an empty token asks for the start, as none does
	}
	var w window
	if err := c.Tokens().Open(windowKind, windowScope(c, rest), token, &w); err != nil || w.Offset <= 0 {
		return nil, nil, BadArgs("argument %q is not a token this server gave out for these arguments, or a stale one: "+
			"call again without it for the result from its start", ContinueArg)
	}
	return &w, rest, nil
}

// windowKind is the kind of a result's continue token.
const windowKind = "result-window"

// windowScope binds a result's continue token to the call's account and tool and
// its other arguments, in one spelling whatever spelling the client used.
func windowScope(c *Call, args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) == nil {
		args, _ = json.Marshal(m)
	}
	sum := sha256.Sum256(args)
	return c.Scope(hex.EncodeToString(sum[:16]))
}

// bound cuts a result whose text exceeds the byte bound: the window w asks for (the
// first when nil), then a note that says what was cut and, for a read-only tool, the
// token of the next window (sealed for c and args, the call's arguments without a
// token). A result that fits is returned as it is.
func bound(res *mcp.CallToolResult, d *Def, c *Call, args json.RawMessage, w *window) (*mcp.CallToolResult, error) {
	name, b := c.Tool, c.Bounds
	max, text := b.Bytes, Text(res)
	if b.Scrub != nil && (w != nil || (max > 0 && len(text) > max)) {
		text = b.Scrub(text)
	}
	if w == nil && (max <= 0 || len(text) <= max) {
		return res, nil
	}
	start := 0
	if w != nil {
		if w.Hash != textHash(text) || w.Offset >= len(text) {
			return nil, Fail("the result changed since it was cut (or the token belongs to other arguments): call %s again without %q",
				name, ContinueArg)
		}
		start = w.Offset
	}
	end := len(text)
	if max > 0 && end-start > max {
		end = start + max
		for end > start && !utf8.RuneStart(text[end]) {
			end--
		}
	}
	part := text[start:end]
	var note string
	switch {
	case end == len(text):
		note = fmt.Sprintf("[the end of the result: bytes %d to %d of %d]", start, end, len(text))
	case d.ReadOnly:
		token := c.Tokens().Seal(windowKind, windowScope(c, args), window{Offset: end, Hash: textHash(text)})
		note = fmt.Sprintf("[result cut: bytes %d to %d of %d. Call %s again with the same arguments and %q: %q for the next part; "+
			"the first texts of the parts, joined, are the whole result]", start, end, len(text), name, ContinueArg, token)
	default:
		note = fmt.Sprintf("[result cut: bytes %d to %d of %d (the server's bound on a result). The call itself completed; "+
			"read what it made with the read-only verbs]", start, end, len(text))
	}
	// The structured content stays whole: it must match the tool's output schema,
	// and a client that reads it needs no next part.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: part}, &mcp.TextContent{Text: note}},
		StructuredContent: res.StructuredContent}, nil
}

// Cut bounds a result that has no way to ask for the rest (tasks/result): one whose
// text exceeds the byte bound becomes its first part (of the scrubbed text) and the
// note that note(shown, total) gives, which says where the whole result is; its
// structured content, an empty object.
func Cut(res *mcp.CallToolResult, b Bounds, note func(shown, total int) string) *mcp.CallToolResult {
	max, text := b.Bytes, Text(res)
	if max <= 0 || len(text) <= max {
		return res
	}
	if b.Scrub != nil {
		if text = b.Scrub(text); len(text) <= max {
			return &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: text}},
				StructuredContent: res.StructuredContent}
		}
	}
	var structured any
	if res.StructuredContent != nil {
		// Not the whole result (the bound is on what is sent), yet an object, which
		// the output schema of a task-running tool allows: it requires nothing.
		structured = map[string]any{}
	}
	end := max
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return &mcp.CallToolResult{IsError: res.IsError, StructuredContent: structured,
		Content: []mcp.Content{&mcp.TextContent{Text: text[:end]}, &mcp.TextContent{Text: note(end, len(text))}}}
}
