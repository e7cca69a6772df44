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
	"math"
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
	// assign is the assignment pattern: only its value is redacted, and only a
	// secretish value of a secretName.
	assign bool
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
	// Provider keys by their prefixes: GitHub fine-grained personal access tokens,
	// Stripe secret and restricted keys (live and test), npm and Hugging Face access
	// tokens, GitLab personal, project, deploy and runner tokens, Google API keys.
	{re: regexp.MustCompile(`\b(?:github_pat_[A-Za-z0-9_]{40,}|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|npm_[A-Za-z0-9]{36}\b|hf_[A-Za-z0-9]{34,}\b|` +
		`gl(?:pat|ptt|dt|rt)-[A-Za-z0-9_-]{20,}|AIza[A-Za-z0-9_-]{35})`), maybe: providerMaybe},
	// A random-looking value assigned to a name that says it is secret, in text:
	// DB_PASSWORD=..., "apiToken": "...", clientSecret: ... (JSON, YAML, env).
	{re: assignment, maybe: assignmentMaybe, assign: true},
}

// assignment is a secret-named key, what assigns to it, and a value of at least
// minSecret characters; String redacts the value when both secretName and secretish
// say so.
var assignment = regexp.MustCompile(`(?i)([A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|credentials?|(?:api|access|secret|private|signing|encryption)[_.-]?key))` +
	`(\\?["']?[ \t]*[:=][ \t]*\\?["']?)([^\s"'\x60,;&<>(){}\[\]\\]{16,})`)

// providerMaybe is true for text where a provider's key may start: a word github_,
// sk_, rk_, npm_ or hf_, or a word that starts gl or AIza.
func providerMaybe(s string) bool {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '_')
		if j < 0 {
			break
		}
		at := i + j
		i = at + 1
		start := at
		for start > 0 && isWordByte(s[start-1]) && s[start-1] != '_' {
			start--
		}
		if start > 0 && isWordByte(s[start-1]) {
			continue
		}
		switch s[start:at] {
		case "github", "sk", "rk", "npm", "hf":
			return true
		}
	}
	return startsWordIn(s, "gl") || startsWordIn(s, "AIza")
}

// assignmentMaybe is true for text where a colon or an equals sign follows a
// secret name, as the assignment pattern needs.
func assignmentMaybe(s string) bool {
	return assignsSecret(s, ':') || assignsSecret(s, '=')
}

// assignsSecret reports whether sign follows a secret name somewhere in s (quotes,
// blanks and a backslash may come between).
func assignsSecret(s string, sign byte) bool {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], sign)
		if j < 0 {
			return false
		}
		end := i + j
		i = end + 1
		for end > 0 && strings.IndexByte(" \t\"'\\", s[end-1]) >= 0 {
			end--
		}
		start := end
		for start > 0 && (isKeyByte(s[start-1]) || s[start-1] == '.') {
			start--
		}
		if secretName(s[start:end]) {
			return true
		}
	}
}

// secretNames are how the name of a key that holds a secret ends (lower case, its
// separators dropped): apiToken, DB_PASSWORD, client-secret, private_key.
var secretNames = []string{
	"password", "passwd", "passphrase", "secret", "token", "credential", "credentials",
	"apikey", "accesskey", "secretkey", "privatekey", "signingkey", "encryptionkey",
}

// notSecretNames end like a secret name and name something else: protocol tokens
// that are handles, not credentials.
var notSecretNames = []string{"progresstoken", "pagetoken", "nexttoken"}

// secretName reports whether a key's name says its value is a secret. Only the end
// of the name counts, in any case and without its separators (- _ .): secretName
// and tokenType name something else.
func secretName(key string) bool {
	if len(key) < len("token") {
		return false
	}
	// Most keys end in a letter no secret name ends in.
	last := len(key) - 1
	for last > 0 && (key[last] == '-' || key[last] == '_' || key[last] == '.') {
		last--
	}
	switch key[last] | 0x20 {
	case 'd', 'e', 't', 'n', 'l', 's', 'y':
	default:
		return false
	}
	for _, s := range secretNames {
		if endsWithFold(key, s) {
			for _, n := range notSecretNames {
				if endsWithFold(key, n) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// endsWithFold reports whether key ends with stem (lower-case letters) in any case,
// with separators (- _ .) anywhere in key ignored.
func endsWithFold(key, stem string) bool {
	i := len(key)
	for j := len(stem) - 1; j >= 0; j-- {
		for i > 0 && (key[i-1] == '-' || key[i-1] == '_' || key[i-1] == '.') {
			i--
		}
		if i == 0 || key[i-1]|0x20 != stem[j] {
			return false
		}
		i--
	}
	return true
}

// minSecret is the length of the shortest value secretish accepts.
const minSecret = 16

// secretish reports whether s looks generated rather than written: long, in one
// piece, varied (at least 3 bits of entropy a character), and switching often
// between lower case, upper case and digits, as random keys, hex digests and UUIDs
// do and names (db-credentials-prod-2024, spaceboot-0123456789), references
// (vault:secret/data/app#password), placeholders and URLs do not. A random value
// of one case of letters alone is not seen.
func secretish(s string) bool {
	if len(s) < minSecret || strings.Contains(s, "://") {
		return false
	}
	var counts [256]int
	prev, switches, alnum := 0, 0, 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b <= ' ' || b == 0x7f {
			return false
		}
		counts[b]++
		c := 0
		switch {
		case b >= 'a' && b <= 'z':
			c = 1
		case b >= 'A' && b <= 'Z':
			c = 2
		case b >= '0' && b <= '9':
			c = 3
		}
		if c != 0 {
			alnum++
			if prev != 0 && c != prev {
				switches++
			}
		}
		prev = c
	}
	if switches < 4 || switches*10 < alnum*3 {
		return false
	}
	entropy := 0.0
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(s))
			entropy -= p * math.Log2(p)
		}
	}
	return entropy >= 3
}

// minCredential is the length of the shortest string any pattern matches.
const minCredential = 15

// containsFold reports whether s contains lower (ASCII lower case) in any case.
func containsFold(lower string) func(string) bool {
	return func(s string) bool { return hasFold(s, lower) }
}

func hasFold(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		if s[i]|0x20 == lower[0] && strings.EqualFold(s[i:i+len(lower)], lower) {
			return true
		}
	}
	return false
}

// startsWord reports whether sub occurs in s at the start of a word.
func startsWord(sub string) func(string) bool {
	return func(s string) bool { return startsWordIn(s, sub) }
}

func startsWordIn(s, sub string) bool {
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
		if p.assign {
			s = assigned(p.re, s)
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

// assigned is s with the secretish values of its secret-named assignments redacted.
func assigned(re *regexp.Regexp, s string) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		key, value := s[m[2]:m[3]], s[m[6]:m[7]]
		if !secretName(key) || !secretish(value) {
			continue
		}
		b.WriteString(s[last:m[6]])
		b.WriteString(Redacted)
		last = m[7]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// keyLength is the length of a Sandbar key (32 bytes in unpadded base64url).
const keyLength = 43
