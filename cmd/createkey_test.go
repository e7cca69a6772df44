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
	"bytes"
	"io"
	"os"
	"regexp"
	"testing"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// capture runs f with stdout and stderr going to buffers.
func capture(t *testing.T, f func() int) (code int, stdout, stderr string) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	var out, errb bytes.Buffer
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(&out, outR); done <- struct{}{} }()
	go func() { _, _ = io.Copy(&errb, errR); done <- struct{}{} }()
	code = f()
	os.Stdout, os.Stderr = oldOut, oldErr
	_ = outW.Close()
	_ = errW.Close()
	<-done
	<-done
	return code, out.String(), errb.String()
}

func TestCreateKeyDryRunPrintsOnlyTheHash(t *testing.T) {
	code, stdout, stderr := capture(t, func() int { return createKey([]string{"--dry-run", "--name", "bot", "--namespace", "team"}) })
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`Token \(shown only now\): (team/bot):(\S+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no token on stderr: %q", stderr)
	}
	key := m[2]
	if bytes.Contains([]byte(stdout), []byte(key)) {
		t.Fatal("the key itself is in the YAML")
	}
	objs, err := testenv.Decode([]byte(stdout))
	if err != nil || len(objs) != 2 {
		t.Fatalf("want a Secret and a ServiceAccount, got %d objects (%v):\n%s", len(objs), err, stdout)
	}
	var secret corev1.Secret
	var sa metav1alpha1.ServiceAccount
	for _, o := range objs {
		b, _ := yaml.Marshal(o.Object)
		switch o.GetKind() {
		case "Secret":
			_ = yaml.Unmarshal(b, &secret)
		case "ServiceAccount":
			_ = yaml.Unmarshal(b, &sa)
		}
	}
	if secret.Labels[metav1alpha1.LabelAPIKey] != "true" || secret.Namespace != "team" {
		t.Errorf("Secret %s/%s labels %v: want namespace team and the api-key label", secret.Namespace, secret.Name, secret.Labels)
	}
	if err := bcrypt.CompareHashAndPassword(secret.Data["api-key-hash"], []byte(key)); err != nil {
		t.Errorf("the stored hash does not match the printed key: %v", err)
	}
	if got := string(secret.Data["api-key-id"]); got != apikey.ID(key) {
		t.Errorf("the stored id is %q, want the printed key's, %q", got, apikey.ID(key))
	}
	if sa.Spec.ServiceName != "bot" || sa.Spec.APIKeySecretRef.Name != secret.Name {
		t.Errorf("ServiceAccount = %+v, want serviceName bot and the Secret %s", sa.Spec, secret.Name)
	}
}

func TestCreateKeyNeedsAName(t *testing.T) {
	code, _, stderr := capture(t, func() int { return createKey(nil) })
	if code != 2 || !bytes.Contains([]byte(stderr), []byte("Usage: manager create-key --name NAME")) {
		t.Errorf("exit %d, stderr %q: want 2 and the usage", code, stderr)
	}
}
