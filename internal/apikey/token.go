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
// ("<namespace>/<service-name>:<key>", or "<service-name>:<key>" as before namespaces,
// the key 256 random bits in URL-safe base64), how it is
// issued (the key shown once, only its bcrypt hash and its public id stored in a
// labelled Secret), parsed and verified. The MCP server's authentication, the
// create-key command and the redaction of tokens in answers all use this one
// description.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// DefaultKey is the Secret key of the hash when the ServiceAccount names none.
const DefaultKey = "api-key-hash"

// Cost is the bcrypt cost of the hashes Generate makes. Verify reads the cost from
// the hash, so keys of any cost verify. Test suites that issue many keys lower it to
// bcrypt.MinCost before they start (under the race detector a hash of the default
// cost takes about a second to make and another to verify); nothing else changes it.
var Cost = bcrypt.DefaultCost

// keyBytes is the entropy of a key: 32 bytes, 43 characters of URL-safe base64.
const keyBytes = 32

// TokenPattern matches a whole token as this package issues it (a namespace of
// DNS-label characters and a slash, or none; a service name of DNS-label
// characters, a colon, the 43-character key). Redaction uses it to find tokens in
// text.
var TokenPattern = regexp.MustCompile(`\b(?:[a-z0-9][a-z0-9-]{0,62}/)?[a-z0-9][a-z0-9-]{0,62}:[A-Za-z0-9_-]{43}\b`)

// ErrMalformed is a token that is not "<namespace>/<service-name>:<key>" or
// "<service-name>:<key>".
var ErrMalformed = errors.New("malformed token (want <namespace>/<service-name>:<api-key>)")

// Token is a parsed bearer token.
type Token struct {
	// Namespace is the ServiceAccount's namespace; empty in a token of the form made
	// before namespaces, which names a service name only.
	Namespace string
	// Service is the ServiceAccount's spec.serviceName.
	Service string
	// Key is the secret part; it is compared with the stored hash only.
	Key string
}

// String is the token as a client sends it after "Bearer ".
func (t Token) String() string {
	if t.Namespace != "" {
		return FormatIn(t.Namespace, t.Service, t.Key)
	}
	return Format(t.Service, t.Key)
}

// FormatIn joins a namespace, a service name and a key into a token: the form that
// names one ServiceAccount whatever accounts of other namespaces use the same service
// name. Service names are unique in a namespace only.
func FormatIn(namespace, service, key string) string { return namespace + "/" + service + ":" + key }

// Format joins a service name and a key into a token of the form made before
// namespaces, which every account that uses the service name may claim.
func Format(service, key string) string { return service + ":" + key }

// Parse reads "<namespace>/<service-name>:<key>" or "<service-name>:<key>". It checks
// the shape only; Verify checks the key.
func Parse(token string) (Token, error) {
	name, key, found := strings.Cut(strings.TrimSpace(token), ":")
	if !found || name == "" || key == "" {
		return Token{}, ErrMalformed
	}
	namespace, service, scoped := strings.Cut(name, "/")
	if !scoped {
		return Token{Service: name, Key: key}, nil
	}
	if namespace == "" || service == "" || strings.Contains(service, "/") {
		return Token{}, ErrMalformed
	}
	return Token{Namespace: namespace, Service: service, Key: key}, nil
}

// ParseAuthorization reads an HTTP Authorization header of the form
// "Bearer <namespace>/<service-name>:<key>" or "Bearer <service-name>:<key>" (the
// scheme in any case).
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

// IDLength is the length of a key's id.
const IDLength = 16

// ID is the public id of a key: the first 16 hex characters of its SHA-256. It is
// stored beside the key's bcrypt hash, so that the server can tell, without a bcrypt
// comparison, whether a presented key may be the account's: one whose id differs is
// not. An id may be stored where the hash is because a key is 256 random bits: 64
// bits of its SHA-256 help no one find it. (Of a key someone chose, a short password,
// the id would be a fast way to test guesses: store none for such a key.)
func ID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:IDLength/2])
}

// ValidID reports whether a stored id has the form ID gives it: 16 lower-case hex
// characters.
func ValidID(id []byte) bool {
	if len(id) != IDLength {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Verify reports whether a key matches a stored hash. bcrypt compares in constant
// time and is slow by design (about 60 ms): callers cache the outcome.
func Verify(hash []byte, key string) bool {
	return bcrypt.CompareHashAndPassword(hash, []byte(key)) == nil
}
