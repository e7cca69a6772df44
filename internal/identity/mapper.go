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

package identity

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// discoveryTimeout ends a discovery request of the manager's REST mapper, whatever
// waits for it: the lookups of requests wait only until their own deadlines (Resolve),
// and this bounds the lookup they leave behind.
const discoveryTimeout = 30 * time.Second

// backstop bounds what an account's client waits for when its context has no
// deadline of its own: one request to the API server, or a REST mapping.
const backstop = time.Minute

// maxMappings bounds the mappings kept; past it the cache starts over.
const maxMappings = 10000

// Mapper is the REST mapper of the manager and of the clients that act as accounts:
// it stands in front of controller-runtime's lazy one, which asks the API server
// (discovery) the first time a kind of a group it has not seen is used, as a Class's
// instances are when their CRD came after the manager started. That lookup has no
// deadline, and every other lookup, of any kind, waits on its lock meanwhile. Here a
// mapping found once is answered without a lock, a kind not known yet is looked up
// once for all who ask, and a request waits for that lookup only until its own
// deadline (Resolve, which the clients of accounts call before each request).
type Mapper struct {
	inner meta.RESTMapper

	// known is the mappings found, read without a lock; mu serialises their
	// replacement (copy on write: a new kind is rare).
	known   atomic.Pointer[map[mappingKey]*meta.RESTMapping]
	mu      sync.Mutex
	lookups singleflight.Group
}

// mappingKey is a kind in one version (or "", the preferred one).
type mappingKey struct {
	gk      schema.GroupKind
	version string
}

func (k mappingKey) String() string { return k.gk.String() + "/" + k.version }

// NewMapper puts a Mapper in front of inner.
func NewMapper(inner meta.RESTMapper) *Mapper {
	m := &Mapper{inner: inner}
	m.known.Store(&map[mappingKey]*meta.RESTMapping{})
	return m
}

// NewRESTMapper is the manager's REST mapper (a manager.Options.MapperProvider): a
// Mapper in front of controller-runtime's dynamic one, whose discovery requests end
// after discoveryTimeout.
func NewRESTMapper(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	bounded := *hc
	bounded.Timeout = discoveryTimeout
	inner, err := apiutil.NewDynamicRESTMapper(cfg, &bounded)
	if err != nil {
		return nil, err
	}
	return NewMapper(inner), nil
}

// Resolve finds the mapping of gvk, if it is not known yet, before ctx ends (or
// backstop, for a context without a deadline). A lookup the caller stops waiting for
// goes on, and its answer is kept for the next caller.
func (m *Mapper) Resolve(ctx context.Context, gvk schema.GroupVersionKind) error {
	k := mappingKey{gk: gvk.GroupKind(), version: gvk.Version}
	if m.cached(k) != nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, backstop)
		defer cancel()
	}
	ch := m.lookups.DoChan(k.String(), func() (any, error) { return m.find(k) })
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return fmt.Errorf("finding the API resource of %s: %w", gvk.GroupKind(), ctx.Err())
	}
}

func (m *Mapper) cached(k mappingKey) *meta.RESTMapping { return (*m.known.Load())[k] }

// find asks the inner mapper and keeps what it finds. A lookup that ended between a
// caller's look at what is kept and its joining the lookups is not made again.
func (m *Mapper) find(k mappingKey) (*meta.RESTMapping, error) {
	if mapping := m.cached(k); mapping != nil {
		return mapping, nil
	}
	var versions []string
	if k.version != "" {
		versions = []string{k.version}
	}
	mapping, err := m.inner.RESTMapping(k.gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.known.Load()
	next := make(map[mappingKey]*meta.RESTMapping, len(old)+1)
	if len(old) < maxMappings {
		for key, v := range old {
			next[key] = v
		}
	}
	next[k] = mapping
	m.known.Store(&next)
	return mapping, nil
}

// RESTMapping is the mapping of a kind: a known one at once, else looked up once for
// all who ask meanwhile.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) > 1 {
		return m.inner.RESTMapping(gk, versions...)
	}
	k := mappingKey{gk: gk}
	if len(versions) == 1 {
		k.version = versions[0]
	}
	if mapping := m.cached(k); mapping != nil {
		return mapping, nil
	}
	v, err, _ := m.lookups.Do(k.String(), func() (any, error) { return m.find(k) })
	if err != nil {
		return nil, err
	}
	return v.(*meta.RESTMapping), nil
}

// RESTMappings is the inner mapper's.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return m.inner.RESTMappings(gk, versions...)
}

// KindFor is the inner mapper's.
func (m *Mapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return m.inner.KindFor(resource)
}

// KindsFor is the inner mapper's.
func (m *Mapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return m.inner.KindsFor(resource)
}

// ResourceFor is the inner mapper's.
func (m *Mapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return m.inner.ResourceFor(input)
}

// ResourcesFor is the inner mapper's.
func (m *Mapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return m.inner.ResourcesFor(input)
}

// ResourceSingularizer is the inner mapper's.
func (m *Mapper) ResourceSingularizer(resource string) (string, error) {
	return m.inner.ResourceSingularizer(resource)
}

// bounded is a client whose every request first finds the REST mapping of its object
// within the request's deadline (Mapper.Resolve): the client itself would look it up
// without one.
type bounded struct {
	client.Client
	mapper *Mapper
}

// boundedClient is c with its mappings found within each request's deadline, or c
// itself when there is no Mapper (or no c).
func boundedClient(c client.Client, m *Mapper) client.Client {
	if c == nil || m == nil {
		return c
	}
	return &bounded{Client: c, mapper: m}
}

// resolve finds the mapping of obj's kind (a list's items' kind); an object whose
// kind the scheme does not know is left to the client to refuse.
func (b *bounded) resolve(ctx context.Context, obj runtime.Object) error {
	gvk, err := apiutil.GVKForObject(obj, b.Scheme())
	if err != nil {
		return nil
	}
	if meta.IsListType(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return b.mapper.Resolve(ctx, gvk)
}

func (b *bounded) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := b.resolve(ctx, obj); err != nil {
		return err
	}
	return b.Client.Get(ctx, key, obj, opts...)
}

func (b *bounded) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := b.resolve(ctx, list); err != nil {
		return err
	}
	return b.Client.List(ctx, list, opts...)
}

func (b *bounded) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := b.resolve(ctx, obj); err != nil {
		return err
	}
	return b.Client.Create(ctx, obj, opts...)
}

func (b *bounded) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := b.resolve(ctx, obj); err != nil {
		return err
	}
	return b.Client.Delete(ctx, obj, opts...)
}

func (b *bounded) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := b.resolve(ctx, obj); err != nil {
		return err
	}
	return b.Client.Update(ctx, obj, opts...)
}

func (b *bounded) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := b.resolve(ctx, obj); err != nil {
		return err
	}
	return b.Client.Patch(ctx, obj, patch, opts...)
}

func (b *bounded) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := b.resolve(ctx, obj); err != nil {
		return err
	}
	return b.Client.DeleteAllOf(ctx, obj, opts...)
}

func (b *bounded) Status() client.SubResourceWriter { return b.SubResource("status") }

func (b *bounded) SubResource(subResource string) client.SubResourceClient {
	return &boundedSub{SubResourceClient: b.Client.SubResource(subResource), b: b}
}

// boundedSub is a subresource of a bounded client's objects.
type boundedSub struct {
	client.SubResourceClient
	b *bounded
}

func (s *boundedSub) Get(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceGetOption) error {
	if err := s.b.resolve(ctx, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Get(ctx, obj, subResource, opts...)
}

func (s *boundedSub) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	if err := s.b.resolve(ctx, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Create(ctx, obj, subResource, opts...)
}

func (s *boundedSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.b.resolve(ctx, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *boundedSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.b.resolve(ctx, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}
