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

package verbs

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// idempotencyNote tells a model of create tools how to retry safely.
const idempotencyNote = "To retry safely (after a timeout, or an answer that says the change may or may not have been made), " +
	"give metadata.idempotencyKey: a call with the same key returns the instance the first call made instead of making a second."

// maxIdempotencyKey bounds the key a caller gives.
const maxIdempotencyKey = 128

// idempotencyKey is the label value for a caller's key: a digest of the account (and
// the person, for OAuth), the class, the namespace and the key, so that one account's
// key never finds another's instance. Empty without a key.
func idempotencyKey(c *tool.Call, cl *catalog.Class, ns, key string) (string, error) {
	if key == "" {
		return "", nil
	}
	if len(key) > maxIdempotencyKey {
		return "", tool.BadArgs("metadata.idempotencyKey has %d characters; at most %d", len(key), maxIdempotencyKey)
	}
	parts := []string{c.Account.Namespace, c.Account.Name, cl.Name, ns, key}
	if u := c.Account.User; u != "" {
		// The people signed in with OAuth share an account: each has keys of their own.
		parts = append(parts, u)
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	// 30 bytes are 48 base32 characters: a label value (at most 63), and a name suffix.
	return strings.ToLower(base32.StdEncoding.EncodeToString(sum[:30])), nil
}

// madeEarlier is the instance an earlier create with the same key made, when err
// says that u's name is taken: nil for any other error, or a name taken by an
// instance of another key (or none).
func madeEarlier(ctx context.Context, kc client.Client, u *unstructured.Unstructured, key string, err error) *unstructured.Unstructured {
	if key == "" || !apierrors.IsAlreadyExists(err) {
		return nil
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if kc.Get(ctx, client.ObjectKeyFromObject(u), got) != nil || got.GetLabels()[metav1alpha1.LabelIdempotencyKey] != key {
		return nil
	}
	return got
}
