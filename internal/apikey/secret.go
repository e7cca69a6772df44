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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// HashKey is the key of a ServiceAccount's Secret that holds the hash.
func HashKey(sa *metav1alpha1.ServiceAccount) string {
	if k := sa.Spec.APIKeySecretRef.Key; k != "" {
		return k
	}
	return DefaultKey
}

// DefaultIDKey is the Secret key of the key's id beside the hash under DefaultKey.
const DefaultIDKey = "api-key-id"

// IDKey is the key of a ServiceAccount's Secret that holds the id of its API key
// (ID), beside the hash: api-key-id beside api-key-hash, else the hash's key with
// "-id" after it.
func IDKey(sa *metav1alpha1.ServiceAccount) string {
	if k := HashKey(sa); k != DefaultKey {
		return k + "-id"
	}
	return DefaultIDKey
}

// Secret is the labelled Secret that holds a ServiceAccount's key hash and the key's
// id (none when id is empty).
func Secret(sa *metav1alpha1.ServiceAccount, hash []byte, id string) *corev1.Secret {
	data := map[string][]byte{HashKey(sa): hash}
	if id != "" {
		data[IDKey(sa)] = []byte(id)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: sa.Namespace,
			Name:      sa.Spec.APIKeySecretRef.Name,
			Labels:    map[string]string{metav1alpha1.LabelAPIKey: "true"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// Issue gives an existing ServiceAccount a new key: it writes the hash and the key's
// id into the account's Secret and returns the bearer token
// "<namespace>/<service-name>:<key>", which is not stored anywhere. It creates the
// Secret, or updates one already labelled for API keys; any other Secret of that
// name is left alone and the key refused, so that a ServiceAccount cannot make it
// overwrite a Secret it was not made for.
func Issue(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	var sa metav1alpha1.ServiceAccount
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sa); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("ServiceAccount %s/%s (serviceaccounts.meta.sandbar.dev) not found; create it first, or use --dry-run to print both", namespace, name)
		}
		return "", err
	}
	key, hash, err := Generate()
	if err != nil {
		return "", err
	}
	want := Secret(&sa, hash, ID(key))
	var existing corev1.Secret
	err = c.Get(ctx, client.ObjectKeyFromObject(want), &existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.Create(ctx, want); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	case existing.Labels[metav1alpha1.LabelAPIKey] != "true":
		return "", fmt.Errorf("refused to write the key hash into Secret %s/%s: it exists and is not labelled %s=true, "+
			"so it may hold something else (a certificate, another application's credentials); point the ServiceAccount's "+
			"spec.apiKeySecretRef at a new Secret name, or label this Secret if it is meant for API keys",
			existing.Namespace, existing.Name, metav1alpha1.LabelAPIKey)
	default:
		if existing.Data == nil {
			existing.Data = map[string][]byte{}
		}
		for k, v := range want.Data {
			existing.Data[k] = v
		}
		if err := c.Update(ctx, &existing); err != nil {
			return "", err
		}
	}
	return FormatIn(sa.Namespace, sa.Spec.ServiceName, key), nil
}
