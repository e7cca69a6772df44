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

package workflow

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Issuer seals the processes the manager starts for accounts, and tells them from
// any other: a process created with kubectl (or by anyone but a manager) that names
// an account as its owner is no task of that account's and, of a built-in workflow,
// does not run. This holds whatever admission policy the cluster has.
type Issuer struct {
	key []byte
	mu  sync.Mutex
	// seen are verdicts on processes by UID and generation (a spec change makes
	// another generation), so that a list does not compute a MAC of every input.
	seen map[seenKey]bool
}

type seenKey struct {
	uid        types.UID
	generation int64
	mark       string
}

// maxSeen bounds the verdicts kept; past it they are forgotten all at once.
const maxSeen = 1 << 14

// processKey is the key of an issuer made without one: every issuer of this process
// shares it, so that the MCP server and the controllers in one manager agree. A
// manager given no key (--mcp-token-key-file) reads its own processes only.
var processKey = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

// NewIssuer is an issuer with a key every replica shares (nil: this process's own).
func NewIssuer(key []byte) *Issuer {
	if len(key) == 0 {
		key = processKey
	}
	return &Issuer{key: append([]byte(nil), key...), seen: map[seenKey]bool{}}
}

// mac is the seal of a process's identity and spec as it was created.
func (i *Issuer) mac(p *metav1alpha1.WorkflowProcess) string {
	h := hmac.New(sha256.New, i.key)
	var input, subject []byte
	if p.Spec.Input != nil {
		input = canonical(p.Spec.Input.Raw)
	}
	if p.Spec.Subject != nil {
		subject, _ = json.Marshal(p.Spec.Subject)
	}
	for _, part := range [][]byte{[]byte("process/v1"), []byte(p.Namespace), []byte(p.Name), []byte(p.Spec.Owner),
		[]byte(p.Spec.Definition), subject, input} {
		var n [8]byte
		for j, l := 0, len(part); j < 8; j, l = j+1, l>>8 {
			n[j] = byte(l)
		}
		h.Write(n[:])
		h.Write(part)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Issue seals a process about to be created.
func (i *Issuer) Issue(p *metav1alpha1.WorkflowProcess) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[metav1alpha1.AnnotationIssued] = i.mac(p)
}

// Issued says whether a manager sharing the key started the process as it is.
func (i *Issuer) Issued(p *metav1alpha1.WorkflowProcess) bool {
	got := p.Annotations[metav1alpha1.AnnotationIssued]
	if got == "" {
		return false
	}
	k := seenKey{p.UID, p.Generation, got}
	if p.UID != "" {
		i.mu.Lock()
		ok, known := i.seen[k]
		i.mu.Unlock()
		if known {
			return ok
		}
	}
	ok := hmac.Equal([]byte(got), []byte(i.mac(p)))
	if p.UID != "" {
		i.mu.Lock()
		if len(i.seen) >= maxSeen {
			clear(i.seen)
		}
		i.seen[k] = ok
		i.mu.Unlock()
	}
	return ok
}

// canonical is a JSON value as Go encodes it: the API server stores a process's
// input as JSON of its own spelling (escapes, spaces, the order of keys).
func canonical(raw []byte) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}
