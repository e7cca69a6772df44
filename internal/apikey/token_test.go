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

package apikey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestIssuedTokenParsesVerifiesAndMatchesThePattern(t *testing.T) {
	key, hash, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 43 {
		t.Fatalf("key has %d characters, want 43", len(key))
	}
	token := Format("claude", key)
	if !TokenPattern.MatchString("token: " + token + ".") {
		t.Errorf("TokenPattern does not find %q in text", token)
	}
	got, err := ParseAuthorization("bearer " + token)
	if err != nil {
		t.Fatal(err)
	}
	if got.Service != "claude" || got.Key != key || got.String() != token {
		t.Errorf("parsed %+v from %q", got, token)
	}
	if !Verify(hash, got.Key) {
		t.Error("the issued key does not verify against its hash")
	}
	if Verify(hash, key[:42]+"x") {
		t.Error("a different key verifies")
	}
}

func TestParseRefusesWhatIsNotAToken(t *testing.T) {
	for _, header := range []string{"", "Bearer", "Basic claude:key", "Bearer claude", "Bearer :key", "Bearer claude:", "claude:key"} {
		if _, err := ParseAuthorization(header); err == nil {
			t.Errorf("ParseAuthorization(%q) accepted it", header)
		}
	}
	if _, err := Parse("no-colon"); !errors.Is(err, ErrMalformed) {
		t.Errorf("Parse without a colon: %v, want ErrMalformed", err)
	}
}

func TestAKeysIDIsItsSHA256sFirstSixteenHexCharacters(t *testing.T) {
	key, _, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	id := ID(key)
	// As Helm's sha256sum and trunc 16 make it for the chart's bootstrap Secret.
	sum := sha256.Sum256([]byte(key))
	if want := hex.EncodeToString(sum[:])[:16]; id != want {
		t.Errorf("ID = %q, want %q", id, want)
	}
	if !ValidID([]byte(id)) {
		t.Errorf("ValidID(%q) = false", id)
	}
	for _, bad := range []string{"", id[:15], id + "0", strings.ToUpper(id), "0123456789abcdeg"} {
		if ValidID([]byte(bad)) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
	if ID(key[:42]+"x") == id {
		t.Error("another key has the same id")
	}
}

// The namespaced form names one account; the form made before namespaces names a
// service name only.
func TestANamespacedTokenParses(t *testing.T) {
	key, _, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	token := FormatIn("team-a", "claude", key)
	if token != "team-a/claude:"+key {
		t.Fatalf("FormatIn = %q", token)
	}
	if m := TokenPattern.FindString("token: " + token + "."); m != token {
		t.Errorf("TokenPattern finds %q in text, want the whole token %q", m, token)
	}
	got, err := ParseAuthorization("Bearer " + token)
	if err != nil {
		t.Fatal(err)
	}
	if got != (Token{Namespace: "team-a", Service: "claude", Key: key}) || got.String() != token {
		t.Errorf("parsed %+v from %q", got, token)
	}
	old, err := Parse("claude:" + key)
	if err != nil || old != (Token{Service: "claude", Key: key}) {
		t.Errorf("the form without a namespace: %+v, %v", old, err)
	}
	for _, bad := range []string{"/claude:" + key, "team-a/:" + key, "team-a/claude/x:" + key, "team-a/claude:"} {
		if _, err := Parse(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q): %v, want ErrMalformed", bad, err)
		}
	}
}
