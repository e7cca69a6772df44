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
	"container/list"
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
)

// The instances of resources/list. A walk (a client paging from the first page of
// instances to the last) reads each class's instances from the API server in chunks
// of up to chunkSize names (metadata only, with the manager's rights), and its pages
// of instancePage are cut from those chunks, which are kept for the walk's next pages:
// a page is a read of memory, and the API server is asked once a chunk, not once a
// page. What a page shows of a chunk is what the caller's Kubernetes identity may
// list, asked as SubjectAccessReviews per class and namespace, never per instance.

// Pages of resources/list: the SDK's pages of metamodel objects, then pages of at
// most instancePage instances, each from at most classesPerPage classes, so that no
// one answer waits on a thousand lists.
const (
	instancePage   = 500
	classesPerPage = 100
)

// Chunks of a listing. A chunk holds only the names of the instances (namespace and
// name, not their metadata): maxKeptNames of them cost about 10 MiB. Past it, or
// chunkTTL after its last read, a chunk goes; a walk that still needs it lists it
// again (see listCursor.After).
const (
	chunkSize    = 5000
	maxKeptNames = 100_000
	chunkTTL     = time.Minute
)

// listCursor is where the next page of resources/list starts: in the metamodel
// objects (Meta: the SDK's own cursor), or at a class's instances in a namespace
// ("" when the caller may use every namespace), in the chunk listed from a Kubernetes
// continue token ("" for the first), after the instance After ("namespace/name").
// Walk names the walk, whose chunks are kept for it.
//
// After is a key, not a position in the chunk: a first chunk that has to be listed
// again (it went from memory) is a newer listing, where the walk goes on after the
// last instance it passed, as the API server orders them (by namespace/name), with
// no instance twice or skipped that both listings hold. A later chunk's continue
// token lists the same instances again, or fails once the API server has compacted
// its version (the cursor has then expired).
type listCursor struct {
	Meta      *string `json:"m,omitempty"`
	Walk      string  `json:"w,omitempty"`
	Class     string  `json:"c,omitempty"`
	Namespace string  `json:"n,omitempty"`
	Continue  string  `json:"k,omitempty"`
	After     string  `json:"a,omitempty"`
}

// newWalk names a walk.
func newWalk() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// listInstances lists one page of the instances the caller may list, from cur, and
// the cursor of the next page (nil after the last). A page ends early, with a cursor
// where it stopped, when the request has asked all the SubjectAccessReviews it may
// (identity.MaxReviews): the next page goes on from there with the answers kept.
func (s *Service) listInstances(ctx context.Context, acct *catalog.Account, cur listCursor, governed readable) ([]*mcp.Resource, *listCursor, error) {
	if !s.guard.May(acct, authorize.InstancesVerb) {
		return nil, nil, nil
	}
	snap := s.store.Load()
	var classes []*catalog.Class
	for _, n := range snap.ClassNames() {
		if c := snap.Classes[n]; c.Servable() {
			classes = append(classes, c)
		}
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i].Ident() < classes[j].Ident() })
	return s.pageOf(ctx, acct, classes, cur, governed)
}

// readable says whether the call policies let the request read cl's instances in ns.
type readable func(cl *catalog.Class, ns string) bool

// pageOf is the page of the instances of classes (in order of their idents) that
// acct may list, from cur, and the cursor of the next page.
func (s *Service) pageOf(ctx context.Context, acct *catalog.Account, classes []*catalog.Class, cur listCursor, governed readable) ([]*mcp.Resource, *listCursor, error) {
	// The namespaces to list: the caller's, or all ("") for an account that may use
	// every namespace.
	namespaces := sortedUnique(authorize.Namespaces(acct))
	wide := slices.Contains(namespaces, "*")
	if wide {
		namespaces = []string{""}
	}
	if cur.Walk == "" {
		cur.Walk = newWalk()
	}
	p := &listPage{s: s, ctx: ctx, acct: acct, wide: wide, verdicts: map[[2]string]error{}, governed: governed, allowed: map[[2]string]bool{}}
	first := sort.Search(len(classes), func(i int) bool { return classes[i].Ident() >= cur.Class })
	for i := first; i < len(classes); i++ {
		cl := classes[i]
		at := listCursor{Walk: cur.Walk, Class: cl.Ident()}
		if i-first == classesPerPage || len(p.out) == instancePage {
			return p.out, &at, nil
		}
		for _, ns := range namespaces {
			at.Namespace, at.Continue, at.After = ns, "", ""
			if cl.Ident() == cur.Class {
				if ns < cur.Namespace {
					continue
				}
				if ns == cur.Namespace {
					at.Continue, at.After = cur.Continue, cur.After
				}
			}
			stopped, err := p.listIn(cl, &at)
			if err != nil {
				return nil, nil, err
			}
			if stopped {
				return p.out, &at, nil
			}
		}
	}
	return p.out, nil, nil
}

func sortedUnique(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// listPage is one page of instances as it is made.
type listPage struct {
	s    *Service
	ctx  context.Context
	acct *catalog.Account
	// wide is true for an account that may use every namespace.
	wide bool
	out  []*mcp.Resource
	// verdicts are the answers asked for this page, by class and namespace ("": the
	// cluster scope): nil when the identity may list the class's instances there.
	verdicts map[[2]string]error
	// governed says whether the call policies let the request read them, asked
	// once a page for each class and namespace (allowed keeps the answers).
	governed readable
	allowed  map[[2]string]bool
}

// listIn adds to the page the instances of cl in at.Namespace ("": every namespace)
// that the caller may list, from at, and moves at along. It says whether the page
// stopped (full, or out of reviews) before the end of them; at is then where the
// next page starts.
func (p *listPage) listIn(cl *catalog.Class, at *listCursor) (stopped bool, err error) {
	if at.Namespace != "" {
		switch ok, err := p.mayList(cl, at.Namespace); {
		case err != nil:
			return true, nil
		case !ok:
			return false, nil
		}
	}
	mime := codec.MIMEType(cl.Codec.Format)
	for {
		if len(p.out) == instancePage {
			return true, nil
		}
		ch, err := p.s.chunk(p.ctx, at.Walk, cl, at.Namespace, at.Continue)
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			return false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the cursor has expired: list the resources again from the start"}
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || runtime.IsNotRegisteredError(err):
			// The class's API is not served (yet): it has no instances to list.
			return false, nil
		case err != nil:
			return false, authorize.RPCError(err)
		}
		after := at.After
		from := sort.Search(len(ch.keys), func(i int) bool { return ch.keys[i] > after })
		for _, key := range ch.keys[from:] {
			if len(p.out) == instancePage {
				return true, nil
			}
			ns, name, _ := strings.Cut(key, "/")
			if at.Namespace == "" {
				ok, err := p.mayList(cl, ns)
				if err != nil {
					return true, nil
				}
				if !ok {
					at.After = key
					continue
				}
			}
			p.out = append(p.out, &mcp.Resource{URI: InstanceURI(cl.Prefix, cl.Kind, ns, name), Name: name,
				Title: cl.Ident() + " " + ns + "/" + name, MIMEType: mime})
			at.After = key
		}
		if ch.next == "" {
			return false, nil
		}
		at.Continue, at.After = ch.next, ""
	}
}

// mayList says whether the caller may list cl's instances in ns: its Sandbar
// permissions name ns (or every namespace), and its Kubernetes identity may list
// them there. For an account with every namespace, the cluster scope is asked first:
// one review answers for every namespace when a ClusterRoleBinding grants it, and
// only when it does not is each namespace that has instances asked. The error is the
// request's having asked all the reviews it may (identity.TooManyReviews): the page
// stops there.
//
// A class is listed with the manager's rights before its namespaces are known, but
// nothing of an instance reaches the page until the caller may list its namespace,
// and the number of namespaces asked is bounded by the reviews a request may ask,
// not by the namespaces that have instances: a page out of reviews ends early, and
// the next goes on from the first instance it did not decide.
func (p *listPage) mayList(cl *catalog.Class, ns string) (bool, error) {
	if !authorize.NamespaceAllowed(p.acct, ns) || !p.governs(cl, ns) {
		return false, nil
	}
	if p.wide {
		err := p.verdict(cl, "")
		if err == nil || identity.TooManyReviews(err) {
			return err == nil, err
		}
	}
	err := p.verdict(cl, ns)
	if identity.TooManyReviews(err) {
		return false, err
	}
	return err == nil, nil
}

// governs says whether the call policies let the request read cl's instances in
// ns, once a page: the decision is counted and audited once, not for each instance.
func (p *listPage) governs(cl *catalog.Class, ns string) bool {
	key := [2]string{cl.Ident(), ns}
	ok, asked := p.allowed[key]
	if !asked {
		ok = p.governed(cl, ns)
		p.allowed[key] = ok
	}
	return ok
}

// verdict asks whether the caller's identity may list cl's instances in ns ("": the
// cluster scope), once a page (and once a few seconds: identity keeps the answer).
func (p *listPage) verdict(cl *catalog.Class, ns string) error {
	key := [2]string{cl.Ident(), ns}
	if err, ok := p.verdicts[key]; ok {
		return err
	}
	err := p.s.may(p.ctx, p.acct, "list", cl, ns, "")
	if !identity.TooManyReviews(err) {
		p.verdicts[key] = err
	}
	return err
}

// chunk is a listing of up to chunkSize instances of a class, from a continue token.
type chunk struct {
	key chunkKey
	// keys are the instances' namespace/name, in the API server's order.
	keys []string
	// next is the continue token of the next chunk ("" after the last).
	next string
	used time.Time
	elem *list.Element
}

// chunkKey names a chunk: its walk, class, namespace ("": all) and continue token.
type chunkKey struct{ walk, class, namespace, token string }

// chunks keeps the chunks that walks listed, the most recently read first, up to
// maxKeptNames names, each until chunkTTL after its last read.
type chunks struct {
	mu    sync.Mutex
	byKey map[chunkKey]*chunk
	lru   list.List
	names int
}

func (c *chunks) get(k chunkKey, now time.Time) *chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.byKey[k]
	if ch == nil {
		return nil
	}
	if now.Sub(ch.used) > chunkTTL {
		c.drop(ch)
		return nil
	}
	ch.used = now
	c.lru.MoveToFront(ch.elem)
	return ch
}

func (c *chunks) put(ch *chunk, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[chunkKey]*chunk{}
	}
	if old := c.byKey[ch.key]; old != nil {
		c.drop(old)
	}
	ch.used = now
	ch.elem = c.lru.PushFront(ch)
	c.byKey[ch.key] = ch
	c.names += len(ch.keys)
	for back := c.lru.Back(); back != nil && back != ch.elem; back = c.lru.Back() {
		oldest := back.Value.(*chunk)
		if c.names <= maxKeptNames && now.Sub(oldest.used) <= chunkTTL {
			break
		}
		c.drop(oldest)
	}
}

// drop forgets ch; c.mu is held.
func (c *chunks) drop(ch *chunk) {
	c.lru.Remove(ch.elem)
	delete(c.byKey, ch.key)
	c.names -= len(ch.keys)
}

// chunk is the chunk of cl's instances in ns ("": all) listed from token for walk:
// the one kept, or a new listing from the API server.
func (s *Service) chunk(ctx context.Context, walk string, cl *catalog.Class, ns, token string) (*chunk, error) {
	key := chunkKey{walk: walk, class: cl.Ident(), namespace: ns, token: token}
	if ch := s.chunks.get(key, time.Now()); ch != nil {
		return ch, nil
	}
	page := &metav1.PartialObjectMetadataList{}
	page.SetGroupVersionKind(cl.GVK().GroupVersion().WithKind(cl.GVK().Kind + "List"))
	opts := []client.ListOption{client.Limit(chunkSize), client.Continue(token)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := s.reader.List(ctx, page, opts...); err != nil {
		return nil, err
	}
	ch := &chunk{key: key, next: page.Continue, keys: make([]string, len(page.Items))}
	for i, m := range page.Items {
		ch.keys[i] = m.Namespace + "/" + m.Name
	}
	// The API server lists in this order already (its storage keys end in
	// namespace/name); the page is cut by a binary search in it.
	slices.Sort(ch.keys)
	s.chunks.put(ch, time.Now())
	return ch, nil
}

// listKind is the kind of resources/list's cursor.
const listKind = "resources-list"

// cursorScope binds a cursor of resources/list to the account that listed.
func cursorScope(acct *catalog.Account) string {
	if acct == nil {
		return seal.Scope()
	}
	return seal.Scope(acct.Namespace, acct.Name, acct.User)
}

func (s *Service) encode(acct *catalog.Account, c listCursor) string {
	return s.tokens.Seal(listKind, cursorScope(acct), c)
}

// decodeCursor opens a cursor of resources/list that the server sealed for acct.
func (s *Service) decodeCursor(acct *catalog.Account, cursor string) (listCursor, error) {
	if cursor == "" {
		empty := ""
		return listCursor{Meta: &empty}, nil
	}
	var c listCursor
	if err := s.tokens.Open(listKind, cursorScope(acct), cursor, &c); err != nil || (c.Meta == nil && c.Class == "") {
		return c, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "invalid cursor: pass the nextCursor of the previous page, or none to start again"}
	}
	return c, nil
}

func (s *Service) list(ctx context.Context, next mcp.MethodHandler, req *mcp.ListResourcesRequest) (mcp.Result, error) {
	var params mcp.ListResourcesParams
	if req.Params != nil {
		params = *req.Params
	}
	acct := caller.Of(req.GetExtra())
	cur, err := s.decodeCursor(acct, params.Cursor)
	if err != nil {
		return nil, err
	}
	// The SDK's answer carries the metamodel's page and what every answer has (its
	// cache hints); on a page of instances only the latter is kept.
	sdkParams := params
	sdkParams.Cursor = ""
	if cur.Meta != nil {
		sdkParams.Cursor = *cur.Meta
	}
	res, err := next(ctx, "resources/list", &mcp.ListResourcesRequest{Session: req.Session, Params: &sdkParams, Extra: req.Extra})
	if err != nil {
		return res, err
	}
	sdk := res.(*mcp.ListResourcesResult)
	out := *sdk
	out.Resources, out.NextCursor = []*mcp.Resource{}, ""
	if cur.Meta != nil {
		out.Resources = s.metaOf(acct, sdk)
		if sdk.NextCursor != "" {
			out.NextCursor = s.encode(acct, listCursor{Meta: &sdk.NextCursor})
			return &out, nil
		}
		cur = listCursor{}
	}
	snap := s.store.Load()
	items, nextCur, err := s.listInstances(ctx, acct, cur, func(cl *catalog.Class, ns string) bool {
		return s.Reads == nil || s.Reads(ctx, req, "resources/list", snap, cl, ns, "") == nil
	})
	if err != nil {
		return nil, err
	}
	out.Resources = append(out.Resources, items...)
	if nextCur != nil {
		out.NextCursor = s.encode(acct, *nextCur)
	}
	return &out, nil
}

// metaOf are the metamodel objects of the SDK's page, if the caller may read the
// metamodel, and the views it may read.
func (s *Service) metaOf(acct *catalog.Account, res *mcp.ListResourcesResult) []*mcp.Resource {
	out := []*mcp.Resource{}
	metamodel := s.guard.May(acct, authorize.MetamodelVerb)
	for _, r := range res.Resources {
		ref, err := ParseURI(r.URI)
		if err != nil || ref.IsInstance() {
			continue
		}
		// A view is read with the metamodel or with a tool that names it.
		if metamodel || (ref.IsApp() && s.mayReadApp(acct, ref)) {
			out = append(out, r)
		}
	}
	return out
}
