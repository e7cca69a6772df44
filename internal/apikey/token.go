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

// Package apikey is the bearer token of an MCP ServiceAccount: its format
// ("<service-name>:<key>", the key 256 random bits in URL-safe base64), how it is
// issued (the key shown once, only its bcrypt hash stored in a labelled Secret),
// parsed and verified. The MCP server's authentication, the create-key command and
// the redaction of tokens in answers all use this one description.
package apikey

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// DefaultKey is the Secret key of the hash when the ServiceAccount names none.
const DefaultKey = "api-key-hash"

// Cost is the bcrypt cost of the hashes Generate makes.
const Cost = bcrypt.DefaultCost

// keyBytes is the entropy of a key: 32 bytes, 43 characters of URL-safe base64.
const keyBytes = 32

// TokenPattern matches a whole token as this package issues it (a service name of
// DNS-label characters, a colon, the 43-character key). Redaction uses it to find
// tokens in text.
var TokenPattern = regexp.MustCompile(`\b[a-z0-9][a-z0-9-]{0,62}:[A-Za-z0-9_-]{43}\b`)

// ErrMalformed is a token that is not "<service-name>:<key>".
var ErrMalformed = errors.New("malformed token (want <service-name>:<api-key>)")

// Token is a parsed bearer token.
type Token struct {
	// Service is the ServiceAccount's spec.serviceName.
	Service string
	// Key is the secret part; it is compared with the stored hash only.
	Key string
}

// String is the token as a client sends it after "Bearer ".
func (t Token) String() string { return Format(t.Service, t.Key) }

// Format joins a service name and a key into a token.
func Format(service, key string) string { return service + ":" + key }

// Parse reads "<service-name>:<key>". It checks the shape only; Verify checks the key.
func Parse(token string) (Token, error) {
	service, key, found := strings.Cut(strings.TrimSpace(token), ":")
	if !found || service == "" || key == "" {
		return Token{}, ErrMalformed
	}
	return Token{Service: service, Key: key}, nil
}

// ParseAuthorization reads an HTTP Authorization header of the form
// "Bearer <service-name>:<key>" (the scheme in any case).
func ParseAuthorization(header string) (Token, error) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return Token{}, errors.New("the Authorization header is not a bearer token")
	}
	return Parse(token)
}

// Generate makes a new key and its bcrypt hash.
func Generate() (key string, hash []byte, err error) {
	b := make([]byte, keyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	key = base64.RawURLEncoding.EncodeToString(b)
	hash, err = bcrypt.GenerateFromPassword([]byte(key), Cost)
	return key, hash, err
}

// Verify reports whether a key matches a stored hash. bcrypt compares in constant
// time and is slow by design (about 60 ms): callers cache the outcome.
func Verify(hash []byte, key string) bool {
	return bcrypt.CompareHashAndPassword(hash, []byte(key)) == nil
}
