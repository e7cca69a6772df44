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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
)

func class(i int) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "zorp.sandbar.dev", Version: "v1", Kind: fmt.Sprintf("Boot%d", i)}
}

// The cache holds at most MaxClasses classes' informers: a find of one more class
// lists through the API server while every class held was found within the last
// minute, and takes the place of the class found least recently once that one has
// been idle for a minute, whose informer stops.
func TestTheCacheHoldsAtMostMaxClasses(t *testing.T) {
	ctx := context.Background()
	informers := &informertest.FakeInformers{}
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
	if _, ok := informers.InformersByGVK[extra]; ok {
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
	if _, ok := informers.InformersByGVK[class(7)]; ok {
		t.Fatalf("the class found least recently still has its informer")
	}
	if len(c.used) != MaxClasses || len(informers.InformersByGVK) != MaxClasses {
		t.Fatalf("%d classes held, %d informers; want %d", len(c.used), len(informers.InformersByGVK), MaxClasses)
	}
}
