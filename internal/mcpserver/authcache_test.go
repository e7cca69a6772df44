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
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

// lagging is a cache that has not seen one Secret yet, as a replica's just started,
// or one that is behind a key just issued, has not.
type lagging struct {
	client.Client
	hidden client.ObjectKey
}

func (l lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == l.hidden {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

// A key whose Secret the replica's cache has not seen yet, while the API server
// answers, is not called invalid: the refusal is checked against the Secret in the
// API server, and the answer is 503 with Retry-After, so the client tries again
// once the cache has it. A key that is wrong against the Secret as the API server
// has it is still 401.
func TestAKeyTheCacheHasNotSeenIsUnavailableNotInvalid(t *testing.T) {
	g := NewWithT(t)
	sa, tok := newAccount(t, unique("lagging"), metav1alpha1.Permissions{})
	cluster := managerCluster
	cluster.Client = lagging{Client: managerCluster.Client, hidden: client.ObjectKey{Namespace: sa.Namespace, Name: sa.Spec.APIKeySecretRef.Name}}
	url, err := startServerWith(context.Background(), store, mcpserver.Options{}, cluster)
	g.Expect(err).NotTo(HaveOccurred())

	status, h, body := rawCall(t, url, map[string]string{"Authorization": "Bearer " + tok}, initializeBody)
	g.Expect(status).To(Equal(http.StatusServiceUnavailable), body)
	g.Expect(h.Get("Retry-After")).NotTo(BeEmpty())

	_, other := newAccount(t, unique("seen"), metav1alpha1.Permissions{})
	wrong := other[:len(other)-4] + "AAAA"
	status, _, body = rawCall(t, url, map[string]string{"Authorization": "Bearer " + wrong}, initializeBody)
	g.Expect(status).To(Equal(http.StatusUnauthorized), body)

	status, _, body = rawCall(t, mcpURL, map[string]string{"Authorization": "Bearer " + tok}, initializeBody)
	g.Expect(status).To(Equal(http.StatusOK), "the key, where the cache has its Secret: %s", body)
}

// A namespaced token of an account the replica's catalog does not have yet (a
// replica just started, an account just created), while the API server has it, is
// not called invalid either: 503 with Retry-After. A service name the namespace has
// no account for is 401.
func TestATokenOfAnAccountTheCatalogHasNotSeenIsUnavailableNotInvalid(t *testing.T) {
	g := NewWithT(t)
	sa, tok := newAccount(t, unique("unseen"), metav1alpha1.Permissions{})
	// A catalog as it was before the account: the suite's, without it.
	snap := *store.Load()
	snap.Accounts = maps.Clone(snap.Accounts)
	delete(snap.Accounts, sa.Spec.ServiceName)
	behind := catalog.NewStore()
	behind.Publish(&snap)
	url := serveStore(t, behind, mcpserver.Options{})

	status, h, body := rawCall(t, url, map[string]string{"Authorization": "Bearer " + tok}, initializeBody)
	g.Expect(status).To(Equal(http.StatusServiceUnavailable), body)
	g.Expect(h.Get("Retry-After")).NotTo(BeEmpty())

	status, _, body = rawCall(t, url, map[string]string{"Authorization": "Bearer " + sa.Namespace + "/" + unique("nobody") + ":AAAAAAAAAAAAAAAAAAAAAAAA"}, initializeBody)
	g.Expect(status).To(Equal(http.StatusUnauthorized), body)
}

// withAccount is snap with the account of sa as change makes it (unchecked: as a
// replica's catalog has it before the leader checked it).
func withAccount(snap *catalog.Snapshot, sa *metav1alpha1.ServiceAccount, change func(*catalog.Account)) *catalog.Snapshot {
	next := *snap // a copy: Publish numbers the snapshot it is given
	next.Accounts = maps.Clone(snap.Accounts)
	for service, a := range next.Accounts {
		if a.Namespace == sa.Namespace && a.Name == sa.Name {
			changed := *a
			change(&changed)
			next.Accounts[service] = &changed
		}
	}
	return &next
}

func unchecked(a *catalog.Account) { a.Ready, a.Unchecked = false, true }

// An account the leader has not checked yet (as a chart's bootstrap account right
// after the install, or one just created) is not refused for that. While a
// replica's first build has one, /readyz fails (for at most AccountsCheckWait), so a
// load balancer, or `helm install --wait`, waits for its key to work; meanwhile the
// right key gets 503 with Retry-After, as often as its client asks (no failed
// attempt spent), a wrong one 401; once it is checked, the replica is ready and the
// key works.
func TestReadyWaitsForTheAccountsToBeChecked(t *testing.T) {
	g := NewWithT(t)
	sa, tok := newAccount(t, unique("unchecked"), metav1alpha1.Permissions{})
	st := catalog.NewStore() // no build yet: the server is started without waiting
	url := serveStore(t, st, mcpserver.Options{AccountsCheckWait: time.Hour})
	base := strings.TrimSuffix(url, "/mcp")
	st.Publish(withAccount(store.Load(), sa, unchecked))

	// The replica serves the build (another account is listed its tools) ...
	cs := connect(t, url, token, nil)
	g.Eventually(func() map[string]*mcp.Tool { return listTools(t, cs) }).WithTimeout(timeout).WithPolling(poll).
		Should(HaveKey("sandbar_class_zorp_SpaceBoot"))
	// ... and is not ready while the account is not checked.
	g.Expect(readyAt(base)).To(BeFalse(), "ready with an account not checked yet")
	for range 12 { // more than a client's failed attempts (10)
		status, h, body := rawCall(t, url, map[string]string{"Authorization": "Bearer " + tok}, initializeBody)
		g.Expect(status).To(Equal(http.StatusServiceUnavailable), body)
		g.Expect(h.Get("Retry-After")).NotTo(BeEmpty())
		g.Expect(body).To(ContainSubstring("not checked yet"))
	}
	wrong := tok[:len(tok)-4] + "AAAA"
	status, _, body := rawCall(t, url, map[string]string{"Authorization": "Bearer " + wrong}, initializeBody)
	g.Expect(status).To(Equal(http.StatusUnauthorized), "a wrong key of an account not checked yet: %s", body)
	g.Expect(readyAt(base)).To(BeFalse())

	st.Publish(withAccount(store.Load(), sa, func(*catalog.Account) {}))
	g.Eventually(readyAt).WithArguments(base).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(),
		"ready once the account is checked")
	status, _, body = rawCall(t, url, map[string]string{"Authorization": "Bearer " + tok}, initializeBody)
	g.Expect(status).To(Equal(http.StatusOK), body)

	// Without a leader to check it, a replica is ready all the same once
	// AccountsCheckWait has passed.
	alone := catalog.NewStore()
	url = serveStore(t, alone, mcpserver.Options{AccountsCheckWait: time.Second})
	alone.Publish(withAccount(store.Load(), sa, unchecked))
	g.Eventually(readyAt).WithArguments(strings.TrimSuffix(url, "/mcp")).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(),
		"ready after AccountsCheckWait")
}
