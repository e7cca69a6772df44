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

package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

// Whatever an instance holds, credentials do not leave the server: not the server's
// own tokens, not key hashes, not common key formats.
func TestCredentialsAreRedacted(t *testing.T) {
	g := NewWithT(t)
	hash, _ := bcrypt.GenerateFromPassword([]byte("k"), bcrypt.MinCost)
	secrets := []string{
		token,
		string(hash),
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
		"AKIAIOSFODNN7EXAMPLE",
		"ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	}
	order := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"number": "ORD-42", "customer": "leaky " + secrets[0],
		"notes": map[string]any{"hash": secrets[1], "pem": secrets[2], "list": []any{secrets[3], secrets[4]}, "jwt": secrets[5]},
	}}}
	order.SetAPIVersion("order.sandbar.dev/v1")
	order.SetKind("Order")
	order.SetNamespace("default")
	order.SetName("leaky")
	g.Expect(k8s.Create(context.Background(), order)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), order) })

	cs := connect(t, mcpURL, token, nil)
	res := callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "order/Order", "name": "leaky"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	out := text(res)
	g.Expect(out).To(ContainSubstring("ORD-42"))
	g.Expect(out).To(ContainSubstring(redact.Redacted))
	structured, _ := res.StructuredContent.(map[string]any)
	g.Expect(structured).NotTo(BeNil())

	var read *mcp.ReadResourceResult
	g.Eventually(func() error {
		var err error
		read, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: resources.InstanceURI("order", "Order", "default", "leaky")})
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	for _, s := range secrets {
		for _, where := range []string{out, read.Contents[0].Text, fmtJSON(structured)} {
			for _, line := range strings.Split(s, "\n") {
				g.Expect(where).NotTo(ContainSubstring(line))
			}
		}
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
