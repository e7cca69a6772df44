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

package seal

import (
	"strings"
	"testing"
	"time"
)

type position struct {
	Offset int `json:"o"`
}

func TestATokenOpensOnlyAsItWasSealed(t *testing.T) {
	s, err := New([]byte(strings.Repeat("k", MinKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope("team-a", "claude", "", "zorp/SpaceBoot")
	token := s.Seal("page", scope, position{Offset: 7})
	var p position
	if err := s.Open("page", scope, token, &p); err != nil || p.Offset != 7 {
		t.Fatalf("the token as sealed: %+v, %v", p, err)
	}
	other, _ := New([]byte(strings.Repeat("o", MinKeyBytes)))
	for _, tc := range []struct {
		name, kind, scope, token string
		sealer                   *Sealer
	}{
		{"another kind", "find", scope, token, s},
		{"another scope", "page", Scope("team-b", "claude", "", "zorp/SpaceBoot"), token, s},
		{"parts that join alike", "page", Scope("team-a", "claude", "zorp/SpaceBoot"), token, s},
		{"another key", "page", scope, token, other},
		{"truncated", "page", scope, token[:len(token)-1], s},
		{"empty", "page", scope, "", s},
		{"too long", "page", scope, strings.Repeat("A", maxTokenBytes+1), s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.sealer.Open(tc.kind, tc.scope, tc.token, &p); err != ErrInvalid {
				t.Errorf("opened: %v", err)
			}
		})
	}
}

func TestATokenGoesStale(t *testing.T) {
	s := Random()
	now := time.Now()
	s.now = func() time.Time { return now }
	token := s.Seal("page", "", position{Offset: 1})
	s.now = func() time.Time { return now.Add(TTL + time.Second) }
	var p position
	if err := s.Open("page", "", token, &p); err != ErrInvalid {
		t.Errorf("a token past its TTL opened: %v", err)
	}
}

func TestAKeyTooShortIsRefused(t *testing.T) {
	if _, err := New(make([]byte, MinKeyBytes-1)); err == nil {
		t.Error("a 31-byte key was taken")
	}
}
