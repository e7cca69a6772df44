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

// sandbar_entity_delete: what it deletes, whom it refuses, and that a refusal
// deletes nothing.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
)

// deleter is the permission that grants sandbar_entity_delete, which no glob grants.
var deleter = metav1alpha1.Permissions{Tools: []string{"*", "sandbar_entity_delete"}}

// bootExists reads a SpaceBoot as an admin: whether it exists, and its resourceVersion.
func bootExists(t *testing.T, ns, name string) (bool, string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return false, ""
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return u.GetDeletionTimestamp() == nil, u.GetResourceVersion()
}

// A delete removes the instance from the API server and names what it deleted, uid
// included; a dry run deletes nothing; a second delete is a not-found answer that
// names the instance and the tool that lists instances.
func TestEntityDeleteRemovesTheInstanceAndSaysWhich(t *testing.T) {
	g := NewWithT(t)
	name := unique("doomed-boot")
	u := newBoot(t, "default", name, map[string]any{"name": "Doomed"})
	_, tok := newAccount(t, unique("deleter"), deleter)
	cs := connect(t, mcpURL, tok, nil)
	args := map[string]any{"confirm": true, "class": "zorp/SpaceBoot", "name": name}

	dry := callTool(t, cs, "sandbar_entity_delete", map[string]any{"confirm": true, "class": "zorp/SpaceBoot", "name": name, "dryRun": true})
	g.Expect(dry.IsError).To(BeFalse(), text(dry))
	g.Expect(text(dry)).To(ContainSubstring("nothing was deleted"))
	exists, _ := bootExists(t, "default", name)
	g.Expect(exists).To(BeTrue(), "a dry run deletes nothing")

	res := callTool(t, cs, "sandbar_entity_delete", args)
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var out map[string]any
	g.Expect(json.Unmarshal([]byte(text(res)), &out)).To(Succeed())
	g.Expect(out).To(And(HaveKeyWithValue("deleted", true), HaveKeyWithValue("class", "zorp/SpaceBoot"),
		HaveKeyWithValue("namespace", "default"), HaveKeyWithValue("name", name), HaveKeyWithValue("uid", string(u.GetUID()))))
	g.Eventually(func() bool { exists, _ := bootExists(t, "default", name); return exists }).
		WithTimeout(timeout).WithPolling(poll).Should(BeFalse())

	res = callTool(t, cs, "sandbar_entity_delete", args)
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(Equal(`no zorp/SpaceBoot named "` + name + `" in namespace "default"; nothing was deleted; ` +
		"call `sandbar_entity_find` with " + `{"class":"zorp/SpaceBoot","namespace":"default"} to list the zorp/SpaceBoot instances`))
}

// Deleting cannot be undone, so the tool is granted only by name: "*" does not show
// or allow it, and a read-only account never has it even when its permissions name
// it. Refused calls delete nothing. An account that names it sees it as destructive
// and idempotent.
func TestEntityDeleteIsGrantedOnlyByNameAndNeverToReadOnlyAccounts(t *testing.T) {
	g := NewWithT(t)
	name := unique("kept-boot")
	newBoot(t, "default", name, map[string]any{"name": "Kept"})
	args := map[string]any{"confirm": true, "class": "zorp/SpaceBoot", "name": name}

	for _, perms := range []metav1alpha1.Permissions{
		{}, {Tools: []string{"*"}}, {Tools: []string{"sandbar_entity_*"}},
		{Tools: []string{"sandbar_entity_delete"}, ReadOnly: true},
	} {
		_, tok := newAccount(t, unique("no-delete"), perms)
		cs := connect(t, mcpURL, tok, nil)
		g.Expect(listTools(t, cs)).NotTo(HaveKey("sandbar_entity_delete"), "%+v", perms)
		res := callTool(t, cs, "sandbar_entity_delete", args)
		g.Expect(res.IsError).To(BeTrue(), "%+v: %s", perms, text(res))
		g.Expect(text(res)).To(HavePrefix("forbidden: "), "%+v", perms)
		if !perms.ReadOnly {
			g.Expect(text(res)).To(ContainSubstring(`the tool "sandbar_entity_delete" is granted only by name`))
		}
		exists, _ := bootExists(t, "default", name)
		g.Expect(exists).To(BeTrue(), "%+v: nothing was deleted", perms)
	}

	for _, named := range []string{"sandbar_entity_delete", "sandbar.entity.delete"} {
		_, tok := newAccount(t, unique("named"), metav1alpha1.Permissions{Tools: []string{named}})
		tools := listTools(t, connect(t, mcpURL, tok, nil))
		g.Expect(tools).To(HaveKey("sandbar_entity_delete"), named)
		a := tools["sandbar_entity_delete"].Annotations
		g.Expect(a.ReadOnlyHint).To(BeFalse())
		g.Expect(a.DestructiveHint).To(HaveValue(BeTrue()))
		g.Expect(a.IdempotentHint).To(BeTrue())
		g.Expect(tools["sandbar_entity_delete"].Description).To(ContainSubstring("permanently"))
	}
}

// An account whose Kubernetes identity may read instances in a namespace but not
// delete them is refused in the API server's words, and the instance stays.
func TestEntityDeleteWithoutRBACDeleteIsForbiddenAndDeletesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, account := unique("viewers"), unique("viewer")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-viewer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-viewer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}},
		&metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account},
			Spec: metav1alpha1.ServiceAccountSpec{ServiceName: account, ServiceAccountName: "agent",
				APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: account + "-key"}, Permissions: deleter}},
	}
	for _, o := range objs {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), objs[0]) })
	tok := issueWhenReady(t, ns, account)
	name := unique("guarded-boot")
	newBoot(t, ns, name, map[string]any{"name": "Guarded"})

	cs := connect(t, mcpURL, tok, nil)
	g.Expect(listTools(t, cs)).To(HaveKey("sandbar_entity_delete"))
	res := callTool(t, cs, "sandbar_entity_delete", map[string]any{"confirm": true, "class": "zorp/SpaceBoot", "name": name})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(And(HavePrefix("forbidden: "),
		ContainSubstring(`User "system:serviceaccount:`+ns+`:agent" cannot delete resource "spaceboots"`),
		ContainSubstring(`in the namespace "`+ns+`"`)))
	exists, _ := bootExists(t, ns, name)
	g.Expect(exists).To(BeTrue(), "nothing was deleted")
	g.Expect(boots(t, ns)).To(Equal([]string{name}))
}

// A delete at a resourceVersion the instance has moved past is a conflict, and the
// instance stays with its change; at its current version the delete goes through.
func TestEntityDeleteAtAStaleResourceVersionDeletesNothing(t *testing.T) {
	g := NewWithT(t)
	name := unique("moving-boot")
	u := newBoot(t, "default", name, map[string]any{"name": "Before"})
	stale := u.GetResourceVersion()
	g.Expect(k8s.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"name":"After"}}`)))).To(Succeed())
	_, tok := newAccount(t, unique("deleter"), deleter)
	cs := connect(t, mcpURL, tok, nil)

	res := callTool(t, cs, "sandbar_entity_delete", map[string]any{"confirm": true, "class": "zorp/SpaceBoot", "name": name, "resourceVersion": stale})
	g.Expect(res.IsError).To(BeTrue(), text(res))
	g.Expect(text(res)).To(And(HavePrefix("conflict: "), ContainSubstring(`changed since resourceVersion "`+stale+`"`),
		ContainSubstring("nothing was deleted")))
	exists, current := bootExists(t, "default", name)
	g.Expect(exists).To(BeTrue(), "nothing was deleted")
	g.Expect(current).To(Equal(u.GetResourceVersion()))

	res = callTool(t, cs, "sandbar_entity_delete", map[string]any{"confirm": true, "class": "zorp/SpaceBoot", "name": name, "resourceVersion": current})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Eventually(func() bool { exists, _ := bootExists(t, "default", name); return exists }).
		WithTimeout(timeout).WithPolling(poll).Should(BeFalse())
}

// A delete is audited with the account and the instance it deleted.
func TestEntityDeleteIsAudited(t *testing.T) {
	g := NewWithT(t)
	url, path := auditedServer(t, false)
	name := unique("audited-boot")
	newBoot(t, "default", name, map[string]any{"name": "Audited"})
	account := unique("deleter")
	_, tok := newAccount(t, account, deleter)
	res := callTool(t, connect(t, url, tok, nil), "sandbar_entity_delete", map[string]any{"confirm": true, "class": "zorp/SpaceBoot", "name": name})
	g.Expect(res.IsError).To(BeFalse(), text(res))

	events, raw := readAudit(t, path)
	e := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_entity_delete" })
	g.Expect(e).NotTo(BeNil(), raw)
	g.Expect(e.Outcome).To(Equal(telemetry.Allowed))
	g.Expect(e.Account).To(Equal(&telemetry.Ref{Namespace: "default", Name: account}))
	g.Expect(e.Object).To(Equal(&telemetry.Object{Class: "zorp.spaceboot", Namespace: "default", Name: name}))
}

// A delete asks the user through a client that can ask (elicitation), at both
// revisions against the API server: declined, the instance stays; accepted, it goes.
func TestDeleteAsksTheUserThroughTheClient(t *testing.T) {
	g := NewWithT(t)
	_, tok := newAccount(t, unique("asked"), deleter)
	for _, rev := range []string{sessionRevision, revision2026} {
		for _, action := range []string{"decline", "accept"} {
			name := unique("asked-boot")
			newBoot(t, "default", name, map[string]any{"name": "Asked"})
			var question string
			cs, _ := connectAt(t, mcpURL, tok, rev, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					question = req.Params.Message
					return &mcp.ElicitResult{Action: action, Content: map[string]any{"confirm": action == "accept"}}, nil
				}})
			res := callTool(t, cs, "sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": name})
			g.Expect(question).To(Equal(`Delete the zorp/SpaceBoot "`+name+`" in namespace "default" for good?`), "%s %s", rev, action)
			exists, _ := bootExists(t, "default", name)
			if action == "decline" {
				g.Expect(res.IsError).To(BeTrue(), "%s: %s", rev, text(res))
				g.Expect(exists).To(BeTrue(), "%s: declined, the instance stays", rev)
				continue
			}
			g.Expect(res.IsError).To(BeFalse(), "%s: %s", rev, text(res))
			g.Eventually(func() bool { exists, _ := bootExists(t, "default", name); return exists }).
				WithTimeout(timeout).WithPolling(poll).Should(BeFalse(), "%s: accepted, the instance is gone", rev)
		}
	}
}
