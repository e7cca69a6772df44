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
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StateKeyDataKey is the key of the Secret that holds the state key.
const StateKeyDataKey = "state-key"

// StateKey is the key every replica seals what passes through a browser with (an
// authorization request between the steps of a login, the cookies of the
// upstream login): 32 random bytes in a Secret, made by the first replica that
// finds none. A replica that loses the race to make it reads the winner's.
func StateKey(ctx context.Context, c client.Client, r client.Reader, name types.NamespacedName) ([]byte, error) {
	for range 3 {
		var secret corev1.Secret
		err := r.Get(ctx, name, &secret)
		if err == nil {
			key := secret.Data[StateKeyDataKey]
			if len(key) != 32 {
				return nil, fmt.Errorf("the Secret %s holds no 32-byte %s (delete it to make a new one)", name, StateKeyDataKey)
			}
			return key, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the authorization server's state key (Secret %s): %w", name, err)
		}
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		if err := c.Create(ctx, newSecret(name.Namespace, name.Name, "oauth-state-key", corev1.SecretTypeOpaque, StateKeyDataKey, key)); err == nil {
			return key, nil
		} else if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("making the authorization server's state key (Secret %s): %w", name, err)
		}
	}
	return nil, fmt.Errorf("the Secret %s was made and deleted again while it was read", name)
}

// sealer seals values with AES-256-GCM under a purpose, with an expiry: what one
// purpose sealed never opens as another's, and nothing opens after its time.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

type sealed struct {
	Expires int64           `json:"e"`
	Value   json.RawMessage `json:"v"`
}

var errSealed = errors.New("not sealed by this server, changed, or expired")

// seal is v as an opaque URL-safe string that opens until ttl has passed.
func (s *sealer) seal(purpose string, v any, ttl time.Duration) (string, error) {
	value, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(sealed{Expires: time.Now().Add(ttl).Unix(), Value: value})
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(purpose))), nil
}

// open reads what seal sealed for the same purpose into v.
func (s *sealer) open(purpose, text string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return errSealed
	}
	plain, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(purpose))
	if err != nil {
		return errSealed
	}
	var box sealed
	if err := json.Unmarshal(plain, &box); err != nil || time.Now().Unix() > box.Expires {
		return errSealed
	}
	if err := json.Unmarshal(box.Value, v); err != nil {
		return errSealed
	}
	return nil
}
