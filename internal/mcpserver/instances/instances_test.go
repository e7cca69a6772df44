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

package instances

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
)

// listed is an informer that has listed its class: its store holds n instances.
type listed struct {
	*controllertest.FakeInformer
	store toolscache.Store
}

func (l listed) GetStore() toolscache.Store { return l.store }

func listedWith(gvk schema.GroupVersionKind, n int) listed {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	for i := range n {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("default")
		u.SetName(fmt.Sprintf("i%05d", i))
		_ = store.Add(u)
	}
	return listed{FakeInformer: controllertest.NewFakeInformer(controllertest.Synced), store: store}
}

// fake is controller-runtime's fake informers, safe for the concurrent use the
// cache makes of them (a class's informer is stopped in a goroutine of its own).
type fake struct {
	mu sync.Mutex
	*informertest.FakeInformers
}

func (f *fake) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.FakeInformers.GetInformer(ctx, obj, opts...)
}

func (f *fake) RemoveInformer(ctx context.Context, obj client.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.FakeInformers.RemoveInformer(ctx, obj)
}

// has says whether the class has an informer.
func (f *fake) has(gvk schema.GroupVersionKind) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.InformersByGVK[gvk]
	return ok
}

func (f *fake) informers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.InformersByGVK)
}

func class(i int) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "zorp.sandbar.dev", Version: "v1", Kind: fmt.Sprintf("Boot%d", i)}
}

// The cache holds at most MaxClasses classes' informers: a find of one more class
// lists through the API server while every class held was found within the last
// minute, and takes the place of the class found least recently once that one has
// been idle for a minute, whose informer stops.
func TestTheCacheHoldsAtMostMaxClasses(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	informers := &fake{FakeInformers: &informertest.FakeInformers{}}
	c := New(informers)
	for i := range MaxClasses {
		if _, source := c.List(ctx, Query{GVK: class(i), Namespace: "default"}); source != Cached {
			t.Fatalf("class %d of %d: %s", i+1, MaxClasses, source)
		}
	}
	extra := class(MaxClasses)
	if _, source := c.List(ctx, Query{GVK: extra, Namespace: "default"}); source != Full {
		t.Fatalf("one class past %d, each found just now: %s, want %s", MaxClasses, source, Full)
	}
	if informers.has(extra) {
		t.Fatalf("the class past the bound got an informer")
	}

	c.mu.Lock()
	for gvk := range c.used {
		c.used[gvk] = c.used[gvk].Add(-2 * time.Minute)
	}
	c.used[class(7)] = c.used[class(7)].Add(-time.Minute) // found least recently
	c.mu.Unlock()
	if _, source := c.List(ctx, Query{GVK: extra, Namespace: "default"}); source != Cached {
		t.Fatalf("one class past %d, the others idle for two minutes: %s, want %s", MaxClasses, source, Cached)
	}
	g.Eventually(informers.has).WithArguments(class(7)).WithTimeout(10*time.Second).WithPolling(time.Millisecond).Should(BeFalse(),
		"the class found least recently loses its informer")
	c.mu.Lock()
	held := len(c.used)
	c.mu.Unlock()
	g.Expect(held).To(Equal(MaxClasses))
	g.Expect(informers.informers()).To(Equal(MaxClasses))
}

// The cache holds at most MaxInstances instances: a class whose informer lists more
// than are left is stopped, and found through the API server (full) for Idle; the
// classes held before stay.
func TestTheCacheHoldsAtMostMaxInstances(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	small, large := class(0), class(1)
	informers := &fake{FakeInformers: &informertest.FakeInformers{InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		small: listedWith(small, MaxInstances/2),
		large: listedWith(large, MaxInstances/2+1),
	}}}
	c := New(informers)
	if _, source := c.List(ctx, Query{GVK: small, Namespace: "default"}); source != Cached {
		t.Fatalf("a class of %d instances: %s, want %s", MaxInstances/2, source, Cached)
	}
	for range 2 {
		if _, source := c.List(ctx, Query{GVK: large, Namespace: "default"}); source != Full {
			t.Fatalf("a class that takes the cache past %d instances: %s, want %s", MaxInstances, source, Full)
		}
	}
	g.Eventually(informers.has).WithArguments(large).WithTimeout(10*time.Second).WithPolling(time.Millisecond).Should(BeFalse(),
		"the class past the bound loses its informer")
	if _, source := c.List(ctx, Query{GVK: small, Namespace: "default"}); source != Cached {
		t.Fatalf("the class held before: %s, want %s", source, Cached)
	}
}
