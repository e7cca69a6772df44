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
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

// apiLog records the requests a server sends the API server: method, path and the
// user it impersonates.
type apiLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *apiLog) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.Path+" as "+r.Header.Get("Impersonate-User"))
		l.mu.Unlock()
		return next.RoundTrip(r)
	})
}

// take returns the requests recorded so far and forgets them.
func (l *apiLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// serveRecorded starts a server (with opts) whose clients acting as accounts, and the
// manager's client it asks SubjectAccessReviews with, record their requests to the API
// server as they send them.
func serveRecorded(t *testing.T, opts mcpserver.Options) (string, *apiLog) {
	t.Helper()
	log := &apiLog{}
	cluster := managerCluster
	cfg := rest.CopyConfig(mgrConfig)
	cfg.WrapTransport = log.RoundTrip
	cluster.Connection.Config = cfg
	mc, err := client.New(cfg, cluster.Connection.Options)
	if err != nil {
		t.Fatal(err)
	}
	cluster.Connection.Manager = mc
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	u, err := startServerWith(ctx, store, opts, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return u, log
}

// An instance created through MCP is one request to the API server: the POST of the
// instance, made as the account's own Kubernetes ServiceAccount. No read, dry run or
// SubjectAccessReview comes before it. With an idempotency key, the retry that finds
// its name taken reads the instance once to see whether the key made it.
func TestEntityCreateIsOneRequestAsTheAccount(t *testing.T) {
	g := NewWithT(t)
	url, log := serveRecorded(t, mcpserver.Options{})
	cs := connect(t, url, token, nil)
	const path = "/apis/zorp.sandbar.dev/v1/namespaces/default/spaceboots"
	const as = " as system:serviceaccount:default:claude"
	name, key := unique("one-request"), unique("key")
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), benchSpaceBoot(name)) })
	log.take()

	res := callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot",
		"attributes": map[string]any{"name": "One", "price": 1.5, "tentacleCount": 4},
		"metadata":   map[string]any{"name": name, "idempotencyKey": key}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(log.take()).To(Equal([]string{"POST " + path + as}))
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, u)).To(Succeed())
	g.Expect(u.GetAnnotations()).To(HaveKeyWithValue("meta.sandbar.dev/created-by", "default/claude"))

	res = callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot",
		"attributes": map[string]any{"name": "One", "price": 1.5, "tentacleCount": 4},
		"metadata":   map[string]any{"name": name, "idempotencyKey": key}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	g.Expect(text(res)).To(ContainSubstring("an earlier call with this idempotencyKey made this instance"))
	g.Expect(log.take()).To(Equal([]string{"POST " + path + as, "GET " + path + "/" + name + as}))
}
