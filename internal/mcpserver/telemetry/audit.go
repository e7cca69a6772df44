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

package telemetry

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// Outcomes of audit events.
const (
	Allowed = "allowed"
	Denied  = "denied"
	Error   = "error"
)

// Event is one audit event: one JSON line.
type Event struct {
	// Time is when the request ended, UTC; ID is unique to the event: for an MCP
	// request, the server's id of it, as in the manager's request log and the tool
	// result's _meta (dev.sandbar/requestId).
	Time time.Time `json:"time"`
	ID   string    `json:"id"`
	// Outcome is allowed, denied or error; Reason says why it was denied (the refusal
	// the client was told) or how it failed (a JSON-RPC code, tool_error).
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// Who: the account, the Kubernetes user it acts as, the client's address.
	Account *Ref   `json:"account,omitempty"`
	User    string `json:"user,omitempty"`
	Client  string `json:"client,omitempty"`
	// What: the MCP method (or "http" for a request refused before any was read)
	// and the tool.
	Method string `json:"method"`
	Tool   string `json:"tool,omitempty"`
	// Which object: the instance and its class, the WorkflowProcess, when known.
	Object  *Object `json:"object,omitempty"`
	Process *Ref    `json:"process,omitempty"`
	// Approval is the Approval of a call a policy held, and DecidedBy the people
	// who approved it (or the one who denied it), in the event of what came of it
	// (method "approval").
	Approval  *Ref     `json:"approval,omitempty"`
	DecidedBy []string `json:"decidedBy,omitempty"`
	// Policies are the call policies' decisions on the call: the policy, the rule
	// and its action ("ClusterCallPolicy price-limit, rule over-limit: Deny").
	Policies []string `json:"policies,omitempty"`
	// RequestID is the JSON-RPC id; SessionID the MCP session; TraceID the span's
	// trace, when traces are exported.
	RequestID string `json:"requestId,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	TraceID   string `json:"traceId,omitempty"`
	// Arguments are the call's arguments, redacted, only with AuditArguments.
	Arguments any `json:"arguments,omitempty"`
}

// Ref names a namespaced object.
type Ref struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Object is an instance of a class.
type Object struct {
	Class     string `json:"class"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

type auditor struct {
	mu        sync.Mutex
	out       io.Writer
	arguments bool
}

// write writes one event as a line; the line is written whole or not at all.
func (a *auditor) write(e *Event) {
	e.Time = time.Now().UTC()
	if e.ID == "" {
		e.ID = newID()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.out.Write(b)
}

// newID is the id of a request or an audit event: 128 random bits, unique, and not
// a secret, so from math/rand/v2's generator (seeded by the runtime), which costs a
// small part of what crypto/rand does on every request.
func newID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// OpenSink opens where audit events go: "stdout", "stderr", a file path (appended
// to, created with mode 0600) or "off" (nil). The manager logs to stderr, so stdout
// carries audit events only.
func OpenSink(spec string) (io.WriteCloser, error) {
	switch spec {
	case "", "off":
		return nil, nil
	case "stdout":
		return nopCloser{os.Stdout}, nil
	case "stderr":
		return nopCloser{os.Stderr}, nil
	}
	f, err := os.OpenFile(spec, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	return f, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
