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

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tokenKeySecret is the Secret, in the manager's namespace, that holds the token key
// of a manager given no --mcp-token-key-file: made by the first replica that finds
// none, read by the others and after restarts.
const tokenKeySecret = "sandbar-token-key"

// managerNamespace is the manager's namespace: the leader election's, or the pod's;
// "" outside a pod with no flag naming one.
func managerNamespace(leaderElection string) string {
	if leaderElection != "" {
		return leaderElection
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sharedTokenKey reads the token key from the Secret sandbar-token-key of namespace,
// or makes it: the key every replica shares, which seals cursors and the processes
// the MCP server starts (the tasks), so that they are read on any replica and after
// a restart.
func sharedTokenKey(ctx context.Context, cfg *rest.Config, namespace string) ([]byte, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	key := client.ObjectKey{Namespace: namespace, Name: tokenKeySecret}
	for {
		var s corev1.Secret
		err := c.Get(ctx, key, &s)
		if err == nil {
			if k := s.Data["token-key"]; len(k) >= 32 {
				return k, nil
			}
			return nil, fmt.Errorf("the Secret %s/%s holds no token-key of 32 bytes or more", namespace, tokenKeySecret)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the Secret %s/%s: %w", namespace, tokenKeySecret, err)
		}
		raw := make([]byte, 48)
		_, _ = rand.Read(raw)
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tokenKeySecret,
			Labels: map[string]string{"app.kubernetes.io/part-of": "sandbar"}},
			Data: map[string][]byte{"token-key": []byte(base64.RawURLEncoding.EncodeToString(raw))}}
		if err := c.Create(ctx, &s); err == nil {
			return s.Data["token-key"], nil
		} else if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("making the Secret %s/%s: %w", namespace, tokenKeySecret, err)
		}
		// Another replica made it meanwhile: read it.
	}
}
