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

package authserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// Tokens are the server's access tokens as the OAuth route checks them.
func (s *Server) Tokens() oauth.Issued { return issued{s} }

type issued struct{ s *Server }

// KeySet verifies a signature with the key of the ring the token names.
func (i issued) KeySet() oidc.KeySet { return ringKeySet{i.s.keys} }

// Check refuses what is not an access token of a grant that still exists: an ID
// token (signed by the same keys, it names no client_id and no grant) or a
// token of a revoked grant.
func (i issued) Check(ctx context.Context, claims map[string]any) error {
	if c, _ := claims["client_id"].(string); c == "" {
		return errors.New("the token is not an access token (it names no client_id)")
	}
	name, _ := claims[ClaimGrant].(string)
	if name == "" {
		return errors.New("the token names no grant")
	}
	alive, err := i.s.grants.Alive(ctx, name)
	if err != nil {
		return fmt.Errorf("%w: %v", oauth.ErrUnavailable, err)
	}
	if !alive {
		return errors.New("the token's grant was revoked or has expired")
	}
	return nil
}

type ringKeySet struct{ keys *KeyStore }

func (k ringKeySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the token must have one signature")
	}
	key, ok := k.keys.Find(ctx, jws.Signatures[0].Header.KeyID)
	if !ok {
		return nil, errors.New("the token is signed by a key this server does not hold")
	}
	return jws.Verify(key.JWK.Public())
}
