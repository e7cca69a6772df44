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

// Package instances serves the instances of the classes that find reads from the
// manager's informer cache: a class's informer starts on its first find and stops
// once no find has read it for a while. A replica's own writes are read back: while
// the cache is behind the last write this replica made to a class, its finds go to
// the API server.
package instances

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Idle is how long a class's informer is kept after its last find.
const Idle = 10 * time.Minute

// MaxClasses is how many classes' instances the cache holds at once: each is an
// informer (a watch and about nine goroutines) besides its instances.
const MaxClasses = 100

// MaxInstances bounds the instances the cache holds, as counted when each class's
// informer first lists it (about 3.5 KiB of heap each, measured with small ones): a
// class that would take it past the bound is listed through the API server.
const MaxInstances = 20000

// syncLimit is how long a class's informer may take to list it before finds stop
// waiting for it (and start it again after Idle).
const syncLimit = time.Minute

// ListsMetric is the name of the counter of finds' lists, by where they were read.
const ListsMetric = "sandbar_mcp_find_lists_total"

// Sources of a find's list, the values of the source label.
const (
	// Cached: read from the informer cache, after one authorization check.
	Cached = "cache"
	// Forbidden: the identity may not list the class in the namespace as one check
	// says (RBAC by resourceNames, for one): the API server decides, by a live List.
	Forbidden = "forbidden"
	// Behind: the cache had not yet seen this replica's last write to the class.
	Behind = "behind"
	// Continued: a continue token of the API server's, from a live List before.
	Continued = "continue"
	// Unchecked: the check could not be asked (the API server failed, or the
	// request had asked all its reviews).
	Unchecked = "unchecked"
	// Unavailable: the cache has not listed the class (its informer has just
	// started, or the manager may not watch the class, or its API is not served).
	Unavailable = "unavailable"
	// Full: the cache holds MaxClasses classes, each found within the last minute,
	// or the class's instances would take it past MaxInstances.
	Full = "full"
	// Off: the server has no cache of instances.
	Off = "off"
)

var lists = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: ListsMetric,
	Help: "Lists of entity.find and class.instances, by source: cache, or a live List of the API server because the identity's RBAC is not one namespace-and-resource check (forbidden), the cache was behind this replica's write (behind), a live continue token (continue), the check could not be asked (unchecked), the cache has not listed the class yet (unavailable), the cache holds as many classes or instances as it may (full) or there is no cache (off).",
}, []string{"source"})

func init() { metrics.Registry.MustRegister(lists) }

// Counted counts one list of a find from source.
func Counted(source string) { lists.WithLabelValues(source).Inc() }

// Cache is the instances the manager's cache holds, for finds.
type Cache struct {
	cache cache.Cache

	mu sync.Mutex
	// used is when each class was last found; started, when an informer that has not
	// listed its class yet was first asked; refused, until when a class is listed
	// through the API server (its informer did not list it within syncLimit, or it
	// had too many instances), and why.
	used    map[schema.GroupVersionKind]time.Time
	started map[schema.GroupVersionKind]time.Time
	refused map[schema.GroupVersionKind]refusal
	written map[schema.GroupVersionKind]writes
	// indexed are the slots each class's informer has indexes of.
	indexed map[schema.GroupVersionKind][]string
	// counts are the instances of each class when its informer first listed it, and
	// total their sum.
	counts map[schema.GroupVersionKind]int
	total  int
	// lives are the classes' locks (life).
	lives map[schema.GroupVersionKind]*sync.RWMutex
}

// refusal is until when a class is listed through the API server, and why.
type refusal struct {
	until  time.Time
	source string
}

// write is a write this replica made to an instance of a class, and when.
type write struct {
	key     client.ObjectKey
	version uint64
	deleted bool
	at      time.Time
}

// writeWindow is how long finds wait for the cache to see a write: past it, finds
// are read from the cache whatever it has (a watch brings a write in milliseconds;
// one it has not brought in a minute was replaced by what it has).
const writeWindow = time.Minute

// New serves finds from c, the manager's cache.
func New(c cache.Cache) *Cache {
	return &Cache{cache: c, used: map[schema.GroupVersionKind]time.Time{}, started: map[schema.GroupVersionKind]time.Time{},
		refused: map[schema.GroupVersionKind]refusal{}, written: map[schema.GroupVersionKind]writes{},
		indexed: map[schema.GroupVersionKind][]string{}, counts: map[schema.GroupVersionKind]int{},
		lives: map[schema.GroupVersionKind]*sync.RWMutex{}}
}

// Wrote records a write this replica made: u as the API server answered it
// (created or updated), or deleted.
func (c *Cache) Wrote(u *unstructured.Unstructured, deleted bool) {
	if c == nil {
		return
	}
	v, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	if err != nil && !deleted {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gvk := u.GroupVersionKind()
	w := write{key: client.ObjectKeyFromObject(u), version: v, deleted: deleted, at: time.Now()}
	ws := c.written[gvk]
	switch {
	case deleted:
		// The version a deleted object had says nothing of the delete's: the last
		// delete is kept apart from the newest create or update.
		ws.delete = w
	case v >= ws.change.version:
		ws.change = w
	}
	c.written[gvk] = ws
}

// writes are the newest create or update this replica made to a class's instances,
// and its last delete (either may be the zero write: none).
type writes struct {
	change, delete write
}

// behind says whether the cache has yet to see one of ws made within writeWindow.
func (c *Cache) behind(ctx context.Context, gvk schema.GroupVersionKind, ws writes, inf cache.Informer, now time.Time) bool {
	for _, w := range []write{ws.change, ws.delete} {
		if !w.at.IsZero() && now.Sub(w.at) < writeWindow && !c.seen(ctx, gvk, w, inf) {
			return true
		}
	}
	return false
}

// Query is what a find lists of one class.
type Query struct {
	GVK       schema.GroupVersionKind
	Namespace string
	// Indexed are the slots of the class that are indexed, its selectable fields
	// (as the API server has them: a string, an integer or a boolean).
	Indexed []string
	// Fields are the values some of the indexed slots must have, as field selector
	// values.
	Fields map[string]string
}

// List is the instances of q's class in its namespace, with its fields, in the order
// of their names, as the cache has them, with source Cached; they are the cache's
// own, not to be changed. Otherwise it lists nothing and says why the caller lists
// through the API server instead: the cache has not seen the last write this
// replica made to the class (Behind), it has not listed the class yet
// (Unavailable), or it holds as many classes or instances as it may (Full). A find
// never waits for a class's first listing: the first one starts the informer, and
// finds are read from it once it has listed the class. An informer that has not
// listed its class within syncLimit (the manager may not watch it) is stopped, and
// not started again for Idle.
func (c *Cache) List(ctx context.Context, q Query) ([]*unstructured.Unstructured, string) {
	gvk := q.GVK
	// The class's informer is not stopped while a find reads it (stop), so what this
	// find starts or indexes is what the next one finds.
	life := c.life(gvk)
	life.RLock()
	defer life.RUnlock()
	now := time.Now()
	c.mu.Lock()
	if r, ok := c.refused[gvk]; ok && now.Before(r.until) {
		c.mu.Unlock()
		return nil, r.source
	}
	if _, ok := c.used[gvk]; !ok && len(c.used) >= MaxClasses {
		// Room for one more: the class found least recently goes, unless every class
		// held was found within the last minute.
		lru, at := oldest(c.used)
		if now.Sub(at) < time.Minute {
			c.mu.Unlock()
			return nil, Full
		}
		// Its place now; the rest of what is kept of it goes with its informer, once
		// no find reads it (unless a find takes it up again first).
		delete(c.used, lru)
		go c.stop(context.WithoutCancel(ctx), lru, now)
	}
	c.used[gvk] = now
	ws := c.written[gvk]
	_, starting := c.started[gvk]
	_, counted := c.counts[gvk]
	indexed := slices.Equal(c.indexed[gvk], q.Indexed)
	c.mu.Unlock()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	inf, err := c.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, Unavailable
	}
	if !indexed {
		if err := c.index(ctx, obj, q.Indexed); err != nil {
			return nil, Unavailable
		}
		c.mu.Lock()
		c.indexed[gvk] = slices.Clone(q.Indexed)
		c.mu.Unlock()
	}
	if !inf.HasSynced() {
		c.mu.Lock()
		started, ok := c.started[gvk]
		if !ok {
			c.started[gvk] = now
		} else if now.Sub(started) > syncLimit {
			c.forget(gvk)
			c.refused[gvk] = refusal{until: now.Add(Idle), source: Unavailable}
			c.mu.Unlock()
			go c.stop(context.WithoutCancel(ctx), gvk, now)
			return nil, Unavailable
		}
		c.mu.Unlock()
		return nil, Unavailable
	}
	if starting {
		c.mu.Lock()
		delete(c.started, gvk)
		c.mu.Unlock()
	}
	if !counted && !c.count(ctx, gvk, inf, now) {
		return nil, Full
	}
	if c.behind(ctx, gvk, ws, inf, now) {
		return nil, Behind
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(q.Namespace), client.UnsafeDisableDeepCopy}
	if len(q.Fields) > 0 {
		fields := client.MatchingFields{}
		for slot, v := range q.Fields {
			fields["spec."+slot] = v
		}
		opts = append(opts, fields)
	}
	if err := c.cache.List(ctx, list, opts...); err != nil {
		return nil, Unavailable
	}
	items := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		items[i] = &list.Items[i]
	}
	slices.SortFunc(items, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return items, Cached
}

// index indexes the informer of obj's class by the values of slots, so that List
// selects by them; an index the informer has is kept.
func (c *Cache) index(ctx context.Context, obj client.Object, slots []string) error {
	for _, slot := range slots {
		err := c.cache.IndexField(ctx, obj, "spec."+slot, func(o client.Object) []string {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return nil
			}
			spec, _ := u.Object["spec"].(map[string]any)
			if v, ok := FieldValue(spec[slot]); ok {
				return []string{v}
			}
			return nil
		})
		if err != nil && !strings.Contains(err.Error(), "indexer conflict") {
			return err
		}
	}
	return nil
}

// FieldValue is a slot's value as the API server writes a selectable field's (a
// string, a boolean or an integer), or false for any other value.
func FieldValue(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10), true
		}
	}
	return "", false
}

// seen says whether the cache has seen write w: the object at its version or
// later, or gone after a delete, or gone since (the informer has listed past the
// write). A cache that has seen a write has seen every earlier one: an informer takes
// the watch's events in order.
func (c *Cache) seen(ctx context.Context, gvk schema.GroupVersionKind, w write, inf cache.Informer) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.cache.Get(ctx, w.key, u, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		if w.deleted {
			return true
		}
		synced, ok := inf.(interface{ LastSyncResourceVersion() string })
		if !ok {
			return false
		}
		v, err := strconv.ParseUint(synced.LastSyncResourceVersion(), 10, 64)
		return err == nil && v > w.version
	}
	if err != nil {
		return false
	}
	v, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return false
	}
	return v > w.version || (v == w.version && !w.deleted)
}

// Run stops the informers of the classes no find has read for Idle, until ctx
// ends.
func (c *Cache) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) { c.evict(ctx, time.Now().Add(-Idle)) }, Idle/4)
}

// evict stops the informers of the classes last found before cold.
func (c *Cache) evict(ctx context.Context, cold time.Time) {
	c.mu.Lock()
	var gone []schema.GroupVersionKind
	for gvk, at := range c.used {
		if at.Before(cold) {
			gone = append(gone, gvk)
		}
	}
	for gvk, r := range c.refused {
		if r.until.Before(time.Now()) {
			delete(c.refused, gvk)
		}
	}
	c.mu.Unlock()
	for _, gvk := range gone {
		c.stop(ctx, gvk, cold)
	}
}

// count counts the instances of a class whose informer has just listed it, and
// stops the informer if they would take the cache past MaxInstances: then the class
// is listed through the API server for Idle.
func (c *Cache) count(ctx context.Context, gvk schema.GroupVersionKind, inf cache.Informer, now time.Time) bool {
	n := 0
	if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok && s.GetStore() != nil {
		n = len(s.GetStore().ListKeys())
	}
	c.mu.Lock()
	if _, ok := c.counts[gvk]; ok {
		c.mu.Unlock()
		return true
	}
	if c.total+n > MaxInstances {
		c.forget(gvk)
		c.refused[gvk] = refusal{until: now.Add(Idle), source: Full}
		c.mu.Unlock()
		go c.stop(context.WithoutCancel(ctx), gvk, now)
		return false
	}
	c.counts[gvk] = n
	c.total += n
	c.mu.Unlock()
	return true
}

// forget drops what is kept of a class but its lock; c.mu is held.
func (c *Cache) forget(gvk schema.GroupVersionKind) {
	c.total -= c.counts[gvk]
	delete(c.counts, gvk)
	delete(c.used, gvk)
	delete(c.started, gvk)
	delete(c.written, gvk)
	delete(c.indexed, gvk)
}

// life is the lock of a class's informer: finds hold it to read, stop to stop it.
// A class keeps its lock for the life of the process.
func (c *Cache) life(gvk schema.GroupVersionKind) *sync.RWMutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lives[gvk]
	if !ok {
		l = &sync.RWMutex{}
		c.lives[gvk] = l
	}
	return l
}

// stop stops a class's informer once no find reads it, unless the class has been
// found since cold: then it is held again.
func (c *Cache) stop(ctx context.Context, gvk schema.GroupVersionKind, cold time.Time) {
	life := c.life(gvk)
	life.Lock()
	defer life.Unlock()
	c.mu.Lock()
	if at, ok := c.used[gvk]; ok && !at.Before(cold) {
		c.mu.Unlock()
		return
	}
	c.forget(gvk)
	c.mu.Unlock()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	_ = c.cache.RemoveInformer(ctx, u)
}

// oldest is the class found least recently, and when.
func oldest(used map[schema.GroupVersionKind]time.Time) (schema.GroupVersionKind, time.Time) {
	var lru schema.GroupVersionKind
	var at time.Time
	for gvk, t := range used {
		if at.IsZero() || t.Before(at) {
			lru, at = gvk, t
		}
	}
	return lru, at
}
