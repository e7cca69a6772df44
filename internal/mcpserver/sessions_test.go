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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

// follower is an MCP session subscribed to one instance, with the updates it hears.
type follower struct {
	cs      *mcp.ClientSession
	updated chan string
}

func follow(t *testing.T, tok, uri string) follower {
	t.Helper()
	f := follower{updated: make(chan string, 64)}
	f.cs = connect(t, mcpURL, tok, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { f.updated <- r.Params.URI },
	})
	NewWithT(t).Expect(f.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})).To(Succeed())
	return f
}

// streamCase sets up a boot in namespace default that the account sa (with token
// tok) and the suite's own account (the witness, whose hearing of an update shows
// that one was sent) both follow.
func streamCase(t *testing.T, sa *metav1alpha1.ServiceAccount, tok string) (target, witness follower, touch func()) {
	t.Helper()
	g := NewWithT(t)
	name := unique("stream-boot")
	boot := newBoot(t, "default", name, map[string]any{"name": "Streamed"})
	uri := resources.InstanceURI("zorp", "SpaceBoot", "default", name)
	target, witness = follow(t, tok, uri), follow(t, token, uri)
	price := 0
	touch = func() {
		price++
		g.Expect(k8s.Patch(context.Background(), boot, client.RawPatch("application/merge-patch+json",
			[]byte(`{"spec":{"price":`+jsonNumber(float64(price))+`}}`)))).To(Succeed())
		g.Eventually(witness.updated).WithTimeout(timeout).Should(Receive(Equal(uri)))
	}
	touch()
	g.Eventually(target.updated).WithTimeout(timeout).Should(Receive(Equal(uri)), "the stream works before the lock-out")
	return target, witness, touch
}

// A stream opened before an account was locked out hears nothing more, and its
// session is closed: deactivation, a new key and deletion each lock it out.
func TestLockedOutAccountsOpenStreamStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock func(g Gomega, sa *metav1alpha1.ServiceAccount)
	}{
		{"deactivated", func(g Gomega, sa *metav1alpha1.ServiceAccount) {
			g.Expect(k8s.Patch(context.Background(), sa, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"active":false}}`)))).To(Succeed())
		}},
		{"new key", func(g Gomega, sa *metav1alpha1.ServiceAccount) {
			_, err := apikey.Issue(context.Background(), k8s, sa.Namespace, sa.Name)
			g.Expect(err).NotTo(HaveOccurred())
		}},
		{"deleted", func(g Gomega, sa *metav1alpha1.ServiceAccount) {
			g.Expect(k8s.Delete(context.Background(), sa)).To(Succeed())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sa, tok := newAccount(t, unique("streamer"), metav1alpha1.Permissions{})
			target, _, touch := streamCase(t, sa, tok)
			ended := make(chan struct{})
			go func() { _ = target.cs.Wait(); close(ended) }()

			tc.lock(g, sa)
			g.Eventually(ended).WithTimeout(timeout).Should(BeClosed(), "the server ends the locked-out session")
			touch()
			g.Consistently(target.updated).WithTimeout(time.Second).ShouldNot(Receive())
		})
	}
}

// An account whose namespaces no longer include an instance's hears no more of it
// on the stream it opened before; the session itself goes on.
func TestAccountLosingANamespaceHearsNoMoreOfIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A tenant of its own namespace whose Kubernetes identity may also read default,
	// and whose permissions name default.
	ns, name := unique("team"), unique("streamer")
	sa := &metav1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: name, ServiceAccountName: "agent",
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: name + "-key"},
			Permissions:     metav1alpha1.Permissions{Namespaces: []string{"default"}}}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbar-instance-viewer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}},
		sa,
	}
	for _, o := range objs {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), objs[2])
		_ = k8s.Delete(context.Background(), objs[0])
	})
	target, _, touch := streamCase(t, sa, issueWhenReady(t, ns, name))

	g.Expect(k8s.Patch(ctx, sa, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"permissions":{"namespaces":["elsewhere"]}}}`)))).To(Succeed())
	g.Eventually(func() []string {
		if a := store.Load().Accounts[name]; a != nil {
			return a.Permissions.Namespaces
		}
		return nil
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal([]string{"elsewhere"}))
	touch()
	g.Consistently(target.updated).WithTimeout(time.Second).ShouldNot(Receive())
	g.Expect(target.cs.Ping(ctx, nil)).To(Succeed(), "the session goes on")
}
