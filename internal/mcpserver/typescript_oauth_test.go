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
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/oauth"
)

// The hosted-connector flow, by the TypeScript SDK client's OAuth support
// (hack/ts-client/oauth.mjs): from the 401 on the OAuth route to the metadata, the
// issuer's discovery, dynamic registration, the authorization redirect and the code
// exchange with PKCE, then tools/list and a create as the token's Kubernetes user.
func TestTypeScriptSDKClientSignsInWithOAuth(t *testing.T) {
	g := NewWithT(t)
	tsClient(t)
	s := newOAuthServer(t, oauth.Config{Scopes: []string{"mcp"}})
	sub := unique("carol")
	s.is.LoginAs(map[string]any{"sub": sub, "groups": []string{"ts-team"}})
	ns := namespaceFor(t, rbacv1.GroupKind, "oidc:ts-team")

	out := runScript(t, "oauth.mjs", "MCP_URL="+s.oauth, "MCP_NAMESPACE="+ns)
	var seen map[string]any
	g.Expect(json.Unmarshal(out, &seen)).To(Succeed(), "%s", out)
	g.Expect(seen).To(HaveKeyWithValue("registered", true))
	g.Expect(seen).To(HaveKeyWithValue("redirects", BeEquivalentTo(1)))
	g.Expect(seen).To(HaveKeyWithValue("resource", s.oauth), "the client asks for a token for the resource of the metadata")
	g.Expect(seen).To(HaveKeyWithValue("scope", "mcp"), "the client asks for the scopes of the metadata")
	g.Expect(seen).To(HaveKeyWithValue("codeChallengeMethod", "S256"))

	// The instance is there, created as the token's user.
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ts-oauth-boot"}, u)).To(Succeed())
	g.Expect(u.GetAnnotations()[metav1alpha1.AnnotationCreatedBy]).To(Equal("default/" + oauth.AccountName("oidc:"+sub)))
}
