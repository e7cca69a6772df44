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

// Package redact keeps credentials out of everything the server sends: every result
// and every JSON-RPC error of every method (tool results, task statuses, lists of
// tools, prompts and resources with their descriptions, resource contents, prompts),
// and every notification and request the server sends a client (progress, logging).
// Whatever looks like a token, a key hash or a private key is replaced, wherever it
// sits in the message: in a string value, in a map key, at any depth.
package redact

import (
	"regexp"
	"strings"

	"github.com/sandbar-dev/sandbar/internal/apikey"
)

// Redacted replaces what looks like a credential in what the server sends.
const Redacted = "[REDACTED]"

// pattern is a credential format. maybe is a cheap test that every match passes, so
// that most strings (names, enum values, prose) never reach the regular expression.
type pattern struct {
	re    *regexp.Regexp
	maybe func(string) bool
	// glued is the token pattern that also matches one character after the key.
	glued bool
}

func contains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

// credentialPatterns match values that must never reach a model's context, even if
// someone stored them in an instance: this server's bearer tokens and key hashes,
// and common key formats.
var credentialPatterns = []pattern{
	// bcrypt hash
	{re: regexp.MustCompile(`\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}`), maybe: contains("$2")},
	// Sandbar bearer token
	{re: apikey.TokenPattern, maybe: keyAfterColon},
	// A Sandbar token glued to a word (MY_TOKEN_svc:key), which TokenPattern's \b
	// does not see: the key is exactly 43 characters, so what follows it is kept.
	{re: regexp.MustCompile(`[a-z0-9][a-z0-9-]{0,62}:[A-Za-z0-9_-]{43}(?:[^A-Za-z0-9_-]|$)`), maybe: keyAfterColon, glued: true},
	// any bearer token
	{re: regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/:-]{20,}=*`), maybe: containsFold("bearer")},
	// PEM private key
	{re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`), maybe: contains("-----BEGIN ")},
	// JWT
	{re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), maybe: startsWord("eyJ")},
	// AWS access key id
	{re: regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`), maybe: func(s string) bool { return startsWord("AKIA")(s) || startsWord("ASIA")(s) }},
	// GitHub token
	{re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`), maybe: startsWord("gh")},
	// Slack token
	{re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), maybe: startsWord("xox")},
	// API keys of the sk- form
	{re: regexp.MustCompile(`\bsk-(ant-)?[A-Za-z0-9_-]{20,}`), maybe: startsWord("sk-")},
}

// minCredential is the length of the shortest string any pattern matches.
const minCredential = 15

// containsFold reports whether s contains lower (ASCII lower case) in any case.
func containsFold(lower string) func(string) bool {
	return func(s string) bool {
		for i := 0; i+len(lower) <= len(s); i++ {
			if s[i]|0x20 == lower[0] && strings.EqualFold(s[i:i+len(lower)], lower) {
				return true
			}
		}
		return false
	}
}

// startsWord reports whether sub occurs in s at the start of a word.
func startsWord(sub string) func(string) bool {
	return func(s string) bool {
		for i := 0; ; {
			j := strings.Index(s[i:], sub)
			if j < 0 {
				return false
			}
			if at := i + j; at == 0 || !isWordByte(s[at-1]) {
				return true
			}
			i += j + 1
		}
	}
}

// keyAfterColon reports whether a colon in s is followed by a key's length of key
// characters, as in every Sandbar token.
func keyAfterColon(s string) bool {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			return false
		}
		p, n := i+j+1, 0
		for p+n < len(s) && n < keyLength && isKeyByte(s[p+n]) {
			n++
		}
		if n == keyLength {
			return true
		}
		i = p
	}
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

func isKeyByte(b byte) bool { return isWordByte(b) || b == '-' }

// String replaces every credential-looking part of s.
func String(s string) string {
	if len(s) < minCredential {
		return s
	}
	for _, p := range credentialPatterns {
		if !p.maybe(s) {
			continue
		}
		if !p.glued {
			s = p.re.ReplaceAllString(s, Redacted)
			continue
		}
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			// The service name has no colon; the key is the 43 characters after it.
			return Redacted + m[strings.IndexByte(m, ':')+1+keyLength:]
		})
	}
	return s
}

// keyLength is the length of a Sandbar key (32 bytes in unpadded base64url).
const keyLength = 43
