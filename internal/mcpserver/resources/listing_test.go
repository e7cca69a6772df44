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

package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/identity"
)

// lister is an API server's list of one class's instances, in its order
// (namespace/name), a page at a time: a continue token is the last key of the page
// before.
type lister struct {
	keys  []string
	lists int
}

func (l *lister) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not served")
}

func (l *lister) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.lists++
	o := (&client.ListOptions{}).ApplyOptions(opts)
	out := list.(*metav1.PartialObjectMetadataList)
	for _, k := range l.keys {
		ns, name, _ := strings.Cut(k, "/")
		if k <= o.Continue || (o.Namespace != "" && ns != o.Namespace) {
			continue
		}
		if o.Limit > 0 && int64(len(out.Items)) == o.Limit {
			out.Continue = out.Items[len(out.Items)-1].Namespace + "/" + out.Items[len(out.Items)-1].Name
			return nil
		}
		out.Items = append(out.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	return nil
}

func (l *lister) set(keys []string) {
	l.keys = slices.Clone(keys)
	slices.Sort(l.keys)
}

// reviews answers SubjectAccessReviews: allowed at the cluster scope when cluster,
// else in the namespaces of allow; it counts them.
type reviews struct {
	cluster bool
	allow   map[string]bool
	asked   int
}

func (r *reviews) identities() *identity.Identities {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			sar := obj.(*authorizationv1.SubjectAccessReview)
			r.asked++
			ns := sar.Spec.ResourceAttributes.Namespace
			sar.Status.Allowed = (ns == "" && r.cluster) || r.allow[ns]
			return nil
		},
	}).Build()
	return identity.New(identity.Connection{Manager: c}, nil)
}

var wearers = &catalog.Class{Name: "zorp.wearer", Prefix: "zorp", Kind: "Wearer", Ready: true,
	InstanceAPI: &catalog.InstanceAPI{Group: "zorp.sandbar.dev", Version: "v1", Kind: "Wearer", Plural: "wearers", Established: true}}

// everyNamespace is an account with every namespace in its permissions.
var everyNamespace = &catalog.Account{Namespace: "team", Name: "agent", KubeServiceAccount: "agent",
	Permissions: metav1alpha1.Permissions{Namespaces: []string{"*"}}}

// walkAll pages from cur to the end, each page a request of its own, and returns the
// namespace/name of each instance listed, in order, and the pages.
func walkAll(t *testing.T, s *Service, acct *catalog.Account, cur listCursor) (keys []string, pages int) {
	t.Helper()
	for {
		ctx, asked := identity.WithReviews(context.Background(), identity.MaxReviews)
		out, next, err := s.pageOf(ctx, acct, []*catalog.Class{wearers}, cur, anyRead)
		if err != nil {
			t.Fatal(err)
		}
		if asked.Asked() > identity.MaxReviews {
			t.Fatalf("page %d asked %d reviews", pages, asked.Asked())
		}
		pages++
		for _, r := range out {
			ref, err := ParseURI(r.URI)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, ref.Namespace+"/"+ref.Name)
		}
		if next == nil {
			return keys, pages
		}
		if pages > 10000 {
			t.Fatal("the walk does not end")
		}
		cur = *next
	}
}

// instances are n instances spread over namespaces, whose names sort apart from
// their keys ("a/x" sorts after "a-b/x", as the API server's storage keys do).
func instances(n, namespaces int) []string {
	var out []string
	for i := range n {
		ns := fmt.Sprintf("ns-%02d", i%namespaces)
		if i%namespaces == 0 {
			ns = "ns"
		}
		out = append(out, fmt.Sprintf("%s/w%05d", ns, i))
	}
	return out
}

// A walk lists each chunk of a class from the API server once, however many pages
// it cuts from it, and lists every instance once, in the API server's order.
func TestAWalkListsEachChunkOnce(t *testing.T) {
	api := &lister{}
	api.set(instances(12345, 40))
	rv := &reviews{cluster: true}
	s := &Service{reader: api, ids: rv.identities()}

	keys, pages := walkAll(t, s, everyNamespace, listCursor{})
	if !slices.Equal(keys, api.keys) {
		t.Fatalf("listed %d instances, not the API server's %d in its order", len(keys), len(api.keys))
	}
	if want := (12345 + chunkSize - 1) / chunkSize; api.lists != want {
		t.Errorf("%d lists from the API server over %d pages, not %d", api.lists, pages, want)
	}
	if pages < 12345/instancePage {
		t.Errorf("%d pages of at most %d", pages, instancePage)
	}
	if rv.asked != 1 {
		t.Errorf("asked %d reviews, not one for the class at the cluster scope", rv.asked)
	}
}

// An account with every namespace that may not list a class cluster-wide sees the
// instances of the namespaces it may list there, and no other; each page asks at
// most identity.MaxReviews (one a namespace), ending early when it has, and the next
// page goes on where it stopped.
func TestAWalkAsksANamespaceOnceAndBoundsEachPage(t *testing.T) {
	api := &lister{}
	api.set(instances(3000, 100))
	rv := &reviews{allow: map[string]bool{}}
	var want []string
	for _, k := range api.keys {
		ns, _, _ := strings.Cut(k, "/")
		if n := strings.TrimPrefix(ns, "ns-"); n != ns && n[len(n)-1] == '7' {
			rv.allow[ns] = true
			want = append(want, k)
		}
	}
	s := &Service{reader: api, ids: rv.identities()}

	keys, pages := walkAll(t, s, everyNamespace, listCursor{})
	if !slices.Equal(keys, want) {
		t.Fatalf("listed %d instances, not the %d of the namespaces RBAC allows", len(keys), len(want))
	}
	if rv.asked != 1+100 {
		t.Errorf("asked %d reviews, not one at the cluster scope and one a namespace", rv.asked)
	}
	if pages < 100/identity.MaxReviews {
		t.Errorf("%d pages for 101 reviews of at most %d a page", pages, identity.MaxReviews)
	}
}

// A walk whose chunk went from memory lists it again and goes on after the last
// instance it passed: nothing twice, nothing skipped that both listings hold, and
// what was created after it passed that point is listed.
func TestAWalkGoesOnAfterItsChunkWent(t *testing.T) {
	api := &lister{}
	all := instances(1200, 1)
	api.set(all)
	s := &Service{reader: api, ids: (&reviews{cluster: true}).identities()}

	ctx := context.Background()
	first, next, err := s.pageOf(ctx, everyNamespace, []*catalog.Class{wearers}, listCursor{}, anyRead)
	if err != nil || next == nil || len(first) != instancePage {
		t.Fatalf("first page: %d instances, next %v, %v", len(first), next, err)
	}
	// The chunk goes; an instance is created behind the walk, one ahead of it, and
	// one ahead is deleted.
	s.chunks = chunks{}
	behind, ahead := "ns/w00000a", "ns/w01100a"
	gone := "ns/w01000"
	keys := slices.DeleteFunc(append(slices.Clone(all), behind, ahead), func(k string) bool { return k == gone })
	api.set(keys)

	rest, _ := walkAll(t, s, everyNamespace, *next)
	seen := map[string]int{}
	for _, r := range first {
		ref, _ := ParseURI(r.URI)
		seen[ref.Namespace+"/"+ref.Name]++
	}
	for _, k := range rest {
		seen[k]++
	}
	for _, k := range all {
		if k != gone && seen[k] != 1 {
			t.Errorf("%s listed %d times", k, seen[k])
		}
	}
	if seen[ahead] != 1 || seen[gone] != 0 || seen[behind] != 0 {
		t.Errorf("created ahead: %d, deleted: %d, created behind: %d", seen[ahead], seen[gone], seen[behind])
	}
}

// The chunks kept hold at most maxKeptNames names, and none past chunkTTL after its
// last read.
func TestChunksKeptAreBounded(t *testing.T) {
	var c chunks
	now := time.Now()
	names := make([]string, chunkSize)
	for i := range maxKeptNames/chunkSize + 5 {
		c.put(&chunk{key: chunkKey{walk: fmt.Sprint(i)}, keys: names}, now)
		if c.names > maxKeptNames {
			t.Fatalf("%d names kept after %d chunks", c.names, i+1)
		}
	}
	if c.get(chunkKey{walk: "0"}, now) != nil {
		t.Error("the chunk read least recently is still kept past the bound")
	}
	last := chunkKey{walk: fmt.Sprint(maxKeptNames/chunkSize + 4)}
	if c.get(last, now) == nil {
		t.Error("the newest chunk went")
	}
	if c.get(last, now.Add(chunkTTL+time.Second)) != nil {
		t.Error("a chunk is kept past its TTL")
	}
	c.put(&chunk{key: chunkKey{walk: "new"}, keys: names}, now.Add(2*chunkTTL))
	if len(c.byKey) != 1 || c.names != chunkSize {
		t.Errorf("%d chunks (%d names) kept after the others' TTL", len(c.byKey), c.names)
	}
}

// anyRead is the call policies of a server that has none.
func anyRead(*catalog.Class, string) bool { return true }
