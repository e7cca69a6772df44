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
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// NameStyle is how tool names are spelled.
type NameStyle string

const (
	// StyleUnderscore gives names such as sandbar_entity_create, which every client
	// accepts (Claude Desktop and claude.ai require ^[a-zA-Z0-9_-]{1,64}$, Codex
	// rejects dots).
	StyleUnderscore NameStyle = "underscore"
	// StyleDotted gives the names of the original Sandbar: sandbar.entity.create,
	// sandbar.class.zorp.SpaceBoot.
	StyleDotted NameStyle = "dotted"
)

// maxToolName is the longest tool name served; longer names are shortened.
const maxToolName = 64

// ClientSafeName is the pattern every name of the underscore style matches.
var ClientSafeName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// CanonicalVerb is the dotted name of an operational verb: sandbar.<group>.<verb>.
func CanonicalVerb(group, verb string) string { return "sandbar." + group + "." + verb }

// CanonicalClassTool is the dotted name of a class's create tool:
// sandbar.class.<prefix>.<Kind>.
func CanonicalClassTool(prefix, kind string) string { return "sandbar.class." + prefix + "." + kind }

// Encode spells a canonical (dotted) name in a style. Names longer than 64
// characters are cut and end in 8 hex digits of the canonical name's SHA-256, so
// that the same canonical name always gives the same tool name.
func Encode(style NameStyle, canonical string) string {
	name := canonical
	if style != StyleDotted {
		name = strings.ReplaceAll(canonical, ".", "_")
	}
	if len(name) <= maxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(canonical))
	return name[:maxToolName-9] + "_" + hex.EncodeToString(sum[:4])
}

var verbName = regexp.MustCompile(`\bsandbar_[a-z]+_[a-z-]+\b`)

// Dotted rewrites the underscore verb names in a text (a description, the server's
// instructions) to the dotted style.
func Dotted(text string) string {
	return verbName.ReplaceAllStringFunc(text, func(n string) string { return strings.ReplaceAll(n, "_", ".") })
}

// Spell is the text in a style: as written (underscore names) or Dotted.
func (s NameStyle) Spell(text string) string {
	if s == StyleDotted {
		return Dotted(text)
	}
	return text
}
