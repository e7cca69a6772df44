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

package verbs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/instances"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

const (
	maxBatch     = 100
	maxFindLimit = 200
	// defaultFindLimit is how many instances find returns without a limit.
	defaultFindLimit = 20
	// maxFindBytes caps the JSON of one find result, so that a large namespace
	// cannot flood a model's context; the continue token gives the rest.
	maxFindBytes = 64 << 10
	// maxFindPages bounds the API pages one find reads while filtering.
	maxFindPages = 20
	// findScanPage is the size of the API pages find reads when it filters by slot
	// values (a where clause), so that one call looks at up to maxFindPages times as
	// many instances before it gives up for now.
	findScanPage = 500
	// findScanTime bounds how long one find keeps reading pages (less if the call's
	// context ends sooner).
	findScanTime = 10 * time.Second
	// findScanMargin is the time find keeps before the call's deadline to answer.
	findScanMargin = time.Second
)

// Metadata is the Kubernetes metadata a create tool takes.
type Metadata struct {
	Name      string            `json:"name,omitempty" jsonschema:"Name of the instance (lower case, digits, '-' and '.')."`
	Namespace string            `json:"namespace,omitempty" jsonschema:"Namespace; defaults to the account's own."`
	Labels    map[string]string `json:"labels,omitempty" jsonschema:"Kubernetes labels of the instance."`
	// IdempotencyKey makes a create safe to retry.
	IdempotencyKey string `json:"idempotencyKey,omitempty" jsonschema:"A key of your choice (at most 128 characters) that makes this create safe to retry: a call with the same key returns the instance the first one made instead of making another."`
}

type createArgs struct {
	Class      string         `json:"class" jsonschema:"The class, as prefix/Kind (for example zorp/SpaceBoot)."`
	Attributes map[string]any `json:"attributes,omitempty" jsonschema:"Slot values by field name (see sandbar_class_describe)."`
	Metadata   *Metadata      `json:"metadata,omitempty" jsonschema:"Kubernetes metadata of the new instance. Without a name, one is generated."`
	Format     string         `json:"format,omitempty" jsonschema:"Format of source (sandbar_codec_list describes them)."`
	Source     string         `json:"source,omitempty" jsonschema:"The instance as text in the given format. json: its attributes, or an object with metadata and spec. markdown: YAML front matter with the slot values (and metadata), then # <field> sections for the class's section slots."`
}

type entitiesArgs struct {
	Entities []createArgs `json:"entities" jsonschema:"The instances to create, each as sandbar_entity_create takes it."`
}

type findArgs struct {
	Class         string         `json:"class" jsonschema:"The class, as prefix/Kind (for example zorp/SpaceBoot)."`
	Where         map[string]any `json:"where,omitempty" jsonschema:"Slot values the instances must have (equality; for a list slot, membership)."`
	Name          string         `json:"name,omitempty" jsonschema:"Only the instance with this name."`
	LabelSelector string         `json:"labelSelector,omitempty" jsonschema:"A Kubernetes label selector, as app=shop,tier!=test."`
	Namespace     string         `json:"namespace,omitempty" jsonschema:"Namespace; defaults to the account's own."`
	Limit         int64          `json:"limit,omitempty" jsonschema:"At most this many instances (default 20)."`
	Continue      string         `json:"continue,omitempty" jsonschema:"The continue token of a previous call, for the next page."`
	Format        string         `json:"format,omitempty" jsonschema:"markdown gives each instance as a Markdown document (source) instead of attributes."`
}

var findConstraints = []tool.Constraint{tool.Between("limit", 1, maxFindLimit), tool.OneOf("format", codec.FormatNames()...)}

type updateArgs struct {
	Class           string         `json:"class" jsonschema:"The class, as prefix/Kind (for example zorp/SpaceBoot)."`
	Name            string         `json:"name" jsonschema:"Name of the instance."`
	Namespace       string         `json:"namespace,omitempty" jsonschema:"Namespace; defaults to the account's own."`
	Attributes      map[string]any `json:"attributes" jsonschema:"Slot values to set; null removes a slot."`
	ResourceVersion string         `json:"resourceVersion,omitempty" jsonschema:"Fail unless the instance is still at this version (from find or create)."`
}

type deleteArgs struct {
	Class           string `json:"class" jsonschema:"The class, as prefix/Kind (for example zorp/SpaceBoot)."`
	Name            string `json:"name" jsonschema:"Name of the instance."`
	Namespace       string `json:"namespace,omitempty" jsonschema:"Namespace; defaults to the account's own."`
	ResourceVersion string `json:"resourceVersion,omitempty" jsonschema:"Delete only if the instance is still at this version (from find, create or update)."`
	DryRun          bool   `json:"dryRun,omitempty" jsonschema:"Check that the delete would be allowed, without deleting anything (a server-side dry run)."`
}

// Validation is what a dry run of a create found: the attributes as they would be
// stored.
type Validation struct {
	Valid      bool           `json:"valid"`
	Class      string         `json:"class"`
	Attributes map[string]any `json:"attributes"`
}

// Batch is what a create of several instances did, one result an instance.
type Batch struct {
	Results []BatchResult `json:"results"`
	Created int           `json:"created"`
	Failed  int           `json:"failed"`
}

// BatchResult is the instance made of one item of a batch, or why none was.
type BatchResult struct {
	Index   int     `json:"index"`
	Created *Entity `json:"created,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// Found is a page of the instances a find matched.
type Found struct {
	Class     string   `json:"class"`
	Namespace string   `json:"namespace"`
	Items     []Entity `json:"items"`
	Count     int      `json:"count"`
	Scanned   int      `json:"scanned"`
	Continue  string   `json:"continue,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// Deleted is the instance a delete removed (or would remove, in a dry run).
type Deleted struct {
	Class           string   `json:"class"`
	Namespace       string   `json:"namespace"`
	Name            string   `json:"name"`
	UID             string   `json:"uid"`
	ResourceVersion string   `json:"resourceVersion"`
	Deleted         bool     `json:"deleted"`
	DryRun          bool     `json:"dryRun,omitempty"`
	Finalizers      []string `json:"finalizers,omitempty"`
	Message         string   `json:"message,omitempty"`
}

// InstanceOf says whether an instance is an instance of a class.
type InstanceOf struct {
	Instance   InstanceRef `json:"instance"`
	Of         string      `json:"of"`
	InstanceOf bool        `json:"instanceOf"`
	// Classes are every class it is an instance of: its own and its ancestors.
	Classes []string `json:"classes"`
}

// InstanceRef names an instance.
type InstanceRef struct {
	Class     string `json:"class"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

func (e *Env) entityVerbs() []*tool.Def {
	formats := tool.OneOf("format", codec.FormatNames()...)
	return []*tool.Def{
		tool.Verb(tool.Spec{Group: "entity", Name: "create", Title: "Create an instance",
			Description: "Create an instance of a class: {class, attributes: {slot: value}, metadata?: {name, namespace, labels, idempotencyKey}}, or {class, format: \"json\", source: \"<JSON text>\"}. Missing or wrong slots are reported by name with the expected type. " + idempotencyNote},
			func(ctx context.Context, c *tool.Call, in createArgs) (Entity, error) {
				return e.create(ctx, c, in, false)
			},
			formats).Patch(enum("class", classes(true))).WithActs(createActs),
		tool.Verb(tool.Spec{Group: "entity", Name: "find", Title: "Find instances", ReadOnly: true, Idempotent: true,
			Description: "Find instances of a class and its subclasses: {class, where?: {slot: value}, name?, labelSelector?, namespace?, limit?, continue?}. Results are capped; pass the returned continue token for more."},
			e.find, findConstraints...).Patch(enum("class", classes(false))),
		tool.Verb(tool.Spec{Group: "entity", Name: "update", Title: "Update an instance", Destructive: true,
			Description: "Change slots of an instance with a merge patch: {class, name, attributes: {slot: value or null to remove}, resourceVersion?}. With resourceVersion the update fails if the instance changed since."},
			e.update).Patch(enum("class", classes(true))).WithActs(e.changeActs(actUpdate)),
		// Granted only by name (Explicit): a delete cannot be undone. So an account
		// granted "*" still sees no more than the 40 tools of the strictest client (Cursor).
		tool.Verb(tool.Spec{Group: "entity", Name: "delete", Title: "Delete an instance", Destructive: true, Idempotent: true, Explicit: true, Confirms: true,
			Description: "Delete an instance permanently: {class, name, namespace?, resourceVersion?, dryRun?}. There is no undo. " +
				"With resourceVersion the delete fails if the instance changed since; with dryRun nothing is deleted, the answer says whether it would be."},
			e.delete).Patch(enum("class", classes(true))).WithActs(e.changeActs(actDelete)),
		tool.Verb(tool.Spec{Group: "entity", Name: "validate", Title: "Validate attributes", ReadOnly: true, Idempotent: true,
			Description: "Check attributes against a class without saving anything (a server-side dry run): {class, attributes, metadata?}."},
			func(ctx context.Context, c *tool.Call, in createArgs) (Validation, error) {
				v, err := e.create(ctx, c, in, true)
				return Validation{Valid: err == nil, Class: v.Class, Attributes: v.Attributes}, err
			},
			formats).Patch(enum("class", classes(true))),
	}
}

// ClassTool is a concrete class's own create tool: its arguments are the class's
// slots, and the reserved metadata.
func (e *Env) ClassTool(cl *catalog.Class) *tool.Def {
	desc := fmt.Sprintf("Create a %s instance.", cl.Ident())
	if cl.Description != "" {
		desc += " " + cl.Description
	}
	if len(cl.Required) > 0 {
		desc += " Required: " + strings.Join(cl.Required, ", ") + "."
	}
	desc += " " + idempotencyNote
	className := cl.Name
	return tool.Raw(tool.CanonicalClassTool(cl.Prefix, cl.Kind),
		tool.Spec{Title: "Create " + cl.Ident(), Description: desc},
		ClassInputSchema(cl),
		func(ctx context.Context, c *tool.Call, args map[string]any) (Entity, error) {
			md, err := tool.DecodeValue[Metadata]("metadata", args["metadata"], metadataSchema)
			if err != nil {
				return Entity{}, err
			}
			attrs := map[string]any{}
			for k, v := range args {
				if k != "metadata" {
					attrs[k] = v
				}
			}
			cl := c.Snap.Classes[className]
			if cl == nil {
				return Entity{}, tool.Fail("the class %q is gone; %s", className, tool.Instead(c.Next("sandbar.schema.classes", "list the classes", nil)))
			}
			return e.createEntity(ctx, c, cl, attrs, md, false)
		}).WithActs(classToolActs(className))
}

// create reads {class, attributes, metadata} or {class, format, source}.
func (e *Env) create(ctx context.Context, c *tool.Call, in createArgs, dryRun bool) (Entity, error) {
	cl, err := class(c, in.Class)
	if err != nil {
		return Entity{}, err
	}
	attrs, md := in.Attributes, in.Metadata
	if in.Source != "" {
		if attrs != nil {
			return Entity{}, tool.BadArgs("give either attributes or format and source, not both")
		}
		doc, err := decodeSource(cl, in.Format, in.Source)
		if err != nil {
			return Entity{}, tool.Fail("source (%s): %v", orDefault(in.Format, string(metav1alpha1.CodecJSON)), err)
		}
		attrs = doc.Attributes
		if md == nil && doc.Metadata != nil {
			m, err := tool.DecodeValue[Metadata]("source metadata", doc.Metadata, metadataSchema)
			if err != nil {
				return Entity{}, err
			}
			md = &m
		}
	}
	if attrs == nil {
		attrs = map[string]any{}
	}
	if md == nil {
		md = &Metadata{}
	}
	return e.createEntity(ctx, c, cl, attrs, *md, dryRun)
}

// createEntity coerces attributes against the class and creates the instance in the
// caller's namespace (or only checks it, with dryRun).
func (e *Env) createEntity(ctx context.Context, c *tool.Call, cl *catalog.Class, attrs map[string]any, md Metadata, dryRun bool) (Entity, error) {
	if err := concrete(c.Snap, cl); err != nil {
		return Entity{}, err
	}
	tool.NoteInstance(ctx, cl.Name, md.Namespace, md.Name)
	spec, problems := catalog.Coerce(cl, attrs)
	if len(problems) > 0 {
		return Entity{}, tool.Fail("Validation failed for %s: %s. Example: %s", cl.Ident(), strings.Join(problems, "; "), exampleArgs(cl))
	}
	ns, err := authorize.Namespace(c.Account, md.Namespace)
	if err != nil {
		return Entity{}, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(cl.GVK())
	u.SetNamespace(ns)
	if _, ok := md.Labels[metav1alpha1.LabelIdempotencyKey]; ok {
		return Entity{}, tool.BadArgs("the label %s is the server's: give metadata.idempotencyKey instead", metav1alpha1.LabelIdempotencyKey)
	}
	key := ""
	if !dryRun {
		if key, err = idempotencyKey(c, cl, ns, md.IdempotencyKey); err != nil {
			return Entity{}, err
		}
	}
	switch {
	case md.Name != "":
		u.SetName(md.Name)
	case key != "":
		// A name of the key's own: a retry that runs while the first call is still
		// on its way (past a timeout) makes the same object, not a second one.
		u.SetName(strings.ToLower(cl.Kind) + "-" + key[:12])
	default:
		u.SetGenerateName(strings.ToLower(cl.Kind) + "-")
	}
	if len(md.Labels) > 0 || key != "" {
		labels := maps.Clone(md.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		if key != "" {
			labels[metav1alpha1.LabelIdempotencyKey] = key
		}
		u.SetLabels(labels)
	}
	u.SetAnnotations(map[string]string{metav1alpha1.AnnotationCreatedBy: c.Account.Namespace + "/" + c.Account.Name})
	var opts []client.CreateOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	kc, err := e.as(c)
	if err != nil {
		return Entity{}, err
	}
	tool.NoteInstance(ctx, cl.Name, ns, md.Name)
	if err := checkRefs(ctx, kc, c, ns, cl, spec); err != nil {
		return Entity{}, err
	}
	if err := kc.Create(ctx, u, opts...); err != nil {
		if made := madeEarlier(ctx, kc, u, key, err); made != nil {
			view := EntityView(cl, made)
			view.Note = "an earlier call with this idempotencyKey made this instance; nothing new was created"
			return view, nil
		}
		return Entity{}, apiFailure(c, err, cl, u.GetName())
	}
	tool.NoteInstance(ctx, cl.Name, ns, u.GetName())
	if dryRun {
		// What would be stored: the attributes as coerced.
		return Entity{Class: cl.Ident(), Attributes: spec}, nil
	}
	e.Instances.Wrote(u, false)
	view := EntityView(cl, u)
	view.Note = toStart(c, cl, u.GetName())
	return view, nil
}

// apiFailure turns the API server's refusals into messages for the caller; other
// errors stay internal.
func apiFailure(c *tool.Call, err error, cl *catalog.Class, name string) error {
	switch {
	case apierrors.IsAlreadyExists(err):
		return tool.Fail("a %s named %q already exists; choose another metadata.name, or %s", cl.Ident(), name,
			tool.Instead(c.Next("sandbar.entity.update", "change it", map[string]any{"class": cl.Ident(), "name": name, "attributes": "<the slots to change>"})))
	case apierrors.IsNotFound(err):
		return tool.Fail("no %s named %q in this namespace; %s", cl.Ident(), name,
			tool.Instead(c.Next("sandbar.entity.find", "list them", map[string]any{"class": cl.Ident()})))
	case apierrors.IsConflict(err):
		return tool.Fail("conflict: the %s %q changed since the given resourceVersion; read it again and retry", cl.Ident(), name)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return tool.Fail("Validation failed for %s: %s", cl.Ident(), apiMessage(err))
	}
	return err
}

func apiMessage(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok {
		st := s.Status()
		if st.Details != nil && len(st.Details.Causes) > 0 {
			var parts []string
			for _, c := range st.Details.Causes {
				parts = append(parts, strings.TrimSpace(c.Field+": "+c.Message))
			}
			return strings.Join(parts, "; ")
		}
		return st.Message
	}
	return err.Error()
}

// exampleArgs shows valid arguments for a class, for error messages.
func exampleArgs(cl *catalog.Class) string {
	ex := map[string]any{}
	for _, s := range cl.Slots {
		if !s.Required && len(ex) >= 3 {
			continue
		}
		ex[s.Field] = catalog.ExampleValue(*s)
	}
	b, _ := json.Marshal(ex)
	return string(b)
}

func (e *Env) createEntities(ctx context.Context, c *tool.Call, in entitiesArgs) (Batch, error) {
	out := Batch{Results: []BatchResult{}}
	for i, item := range in.Entities {
		made, err := e.create(ctx, c, item, false)
		if err != nil {
			if !tool.IsDomain(err) {
				return Batch{}, err
			}
			out.Failed++
			out.Results = append(out.Results, BatchResult{Index: i, Error: err.Error()})
			continue
		}
		out.Results = append(out.Results, BatchResult{Index: i, Created: &made})
	}
	out.Created = len(in.Entities) - out.Failed
	return out, nil
}

// findCursor is the continue token of entity.find: which class of the query, which
// API page of it comes next (none for a page read from the cache), and the last
// instance already answered; instances are read in name order, from the cache or
// the API server, and the next call skips those up to it.
type findCursor struct {
	Class    int    `json:"c"`
	Continue string `json:"k,omitempty"`
	After    string `json:"a,omitempty"`
}

// findQuery is an entity.find call made ready to run: its class and the concrete
// classes it spans, namespace, client, page size, filters, and where its continue
// token says to start.
type findQuery struct {
	in      findArgs
	cl      *catalog.Class
	classes []*catalog.Class
	ns      string
	kc      client.Client
	limit   int64
	scope   string
	cur     findCursor
	sel     labels.Selector
}

// findQueryOf checks a call's arguments and opens its continue token.
func (e *Env) findQueryOf(c *tool.Call, in findArgs) (*findQuery, error) {
	q := &findQuery{in: in, limit: orDefault(in.Limit, defaultFindLimit)}
	var err error
	if q.cl, err = class(c, in.Class); err != nil {
		return nil, err
	}
	if q.ns, err = authorize.Namespace(c.Account, in.Namespace); err != nil {
		return nil, err
	}
	if q.kc, err = e.as(c); err != nil {
		return nil, err
	}
	// The continue token is bound to the query: the class, the namespace and every
	// filter (not the limit or the format, which may change from page to page).
	q.scope = c.Scope(q.cl.Ident(), q.ns, in.Where, in.Name, in.LabelSelector)
	if in.Continue != "" {
		if err := c.Tokens().Open(findKind, q.scope, in.Continue, &q.cur); err != nil {
			return nil, badContinue()
		}
	}
	if in.LabelSelector != "" {
		if q.sel, err = labels.Parse(in.LabelSelector); err != nil {
			return nil, tool.Fail("labelSelector %q: %v", in.LabelSelector, err)
		}
	}
	for field, v := range in.Where {
		if _, ok := q.cl.Slot(field); !ok {
			return nil, tool.Fail("where: %q is not a slot of %s; its slots are: %s", field, q.cl.Ident(), catalog.SlotList(q.cl))
		}
		if v == nil {
			return nil, tool.Fail("where: %q needs a value", field)
		}
	}
	// The query spans the class and its concrete subclasses.
	for _, n := range append([]string{q.cl.Name}, c.Snap.Subclasses(q.cl.Name)...) {
		if k := c.Snap.Classes[n]; k.Servable() {
			q.classes = append(q.classes, k)
		}
	}
	// The classes of the query may have changed since the token was made: a position
	// past them ends the query, and none is before the first.
	if q.cur.Class < 0 {
		return nil, badContinue()
	}
	return q, nil
}

// page lists one page of class k's instances from where the cursor is, with the
// label selector, the name and the part of the where clause the API server checks.
func (q *findQuery) page(ctx context.Context, k *catalog.Class, serverWhere map[string]string, listLimit int64) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.GVK().GroupVersion().WithKind(k.InstanceAPI.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(q.ns), client.Limit(listLimit), client.Continue(q.cur.Continue)}
	if q.sel != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: q.sel})
	}
	fieldSet := client.MatchingFields{}
	if q.in.Name != "" {
		fieldSet["metadata.name"] = q.in.Name
	}
	for f, v := range serverWhere {
		fieldSet["spec."+f] = v
	}
	if len(fieldSet) > 0 {
		opts = append(opts, fieldSet)
	}
	return list, q.kc.List(ctx, list, opts...)
}

// view is an instance as find answers it: its attributes, or its Markdown source.
func (q *findQuery) view(k *catalog.Class, u *unstructured.Unstructured) (Entity, error) {
	v := EntityView(k, u)
	if q.in.Format == string(metav1alpha1.CodecMarkdown) {
		md, err := codec.EncodeMarkdown(k, u.GetName(), v.Attributes)
		if err != nil {
			return Entity{}, err
		}
		v.Attributes, v.Source = nil, md
	}
	return v, nil
}

// find answers a page of the instances of a class and its concrete subclasses that
// match. Each class is read from the manager's cache (cached), whose indexes select
// by the slots every class of the query declares as selectable fields, or else listed
// through the API server, which filters by them. The rest of a where clause is
// checked here: a live list reads large pages and goes on until something matches,
// the list ends, or the bounds (pages, time) are reached, and says how far it scanned.
func (e *Env) find(ctx context.Context, c *tool.Call, in findArgs) (Found, error) {
	q, err := e.findQueryOf(c, in)
	if err != nil {
		return Found{}, err
	}
	serverWhere, scan := selectableWhere(q.classes, in.Where)
	listLimit := q.limit
	if scan {
		listLimit = max(q.limit, findScanPage)
	}
	stopAt := time.Now().Add(findScanTime)
	if d, ok := ctx.Deadline(); ok && d.Add(-findScanMargin).Before(stopAt) {
		stopAt = d.Add(-findScanMargin)
	}
	items, size, next := []Entity{}, 0, ""
	pages, scanned, bounded := 0, 0, false
	cur := &q.cur
	// take answers instance u of class k if it matches, or says the page is full: the
	// next call starts at u (reading its list page again, skipping what was answered).
	// An instance of the cache is copied before it is answered.
	take := func(k *catalog.Class, u *unstructured.Unstructured, cached bool) (full bool, err error) {
		if cur.After != "" && u.GetName() <= cur.After {
			return false, nil
		}
		if !matches(u, in.Where) {
			scanned++
			cur.After = u.GetName()
			return false, nil
		}
		if cached {
			u = u.DeepCopy()
		}
		v, err := q.view(k, u)
		if err != nil {
			return false, err
		}
		n := itemBytes(v)
		if int64(len(items)) == q.limit || (size+n > byteBudget(c, maxFindBytes) && len(items) > 0) {
			next = c.Tokens().Seal(findKind, q.scope, *cur)
			return true, nil
		}
		items = append(items, v)
		size += n
		scanned++
		cur.After = u.GetName()
		return false, nil
	}
scan:
	for ; cur.Class < len(q.classes); cur.Class, cur.Continue, cur.After = cur.Class+1, "", "" {
		k := q.classes[cur.Class]
		cached, source := e.cached(ctx, c, q, k, serverWhere)
		instances.Counted(source)
		if source == instances.Cached {
			for _, u := range cached {
				if !q.selects(u) {
					continue
				}
				full, err := take(k, u, true)
				if err != nil {
					return Found{}, err
				}
				if full {
					break scan
				}
			}
			continue
		}
		for {
			if pages == maxFindPages || (pages > 0 && time.Now().After(stopAt)) {
				next, bounded = c.Tokens().Seal(findKind, q.scope, *cur), true
				break scan
			}
			pages++
			list, err := q.page(ctx, k, serverWhere, listLimit)
			if err != nil && len(serverWhere) > 0 && apierrors.IsBadRequest(err) {
				// An API server without field selectors for custom resources
				// (before Kubernetes 1.31): check the whole clause here.
				serverWhere, listLimit = nil, max(q.limit, findScanPage)
				pages--
				continue
			}
			if err != nil {
				if apierrors.IsResourceExpired(err) {
					return Found{}, tool.Fail("the continue token has expired; start the query again")
				}
				return Found{}, apiFailure(c, err, k, "")
			}
			for i := range list.Items {
				full, err := take(k, &list.Items[i], false)
				if err != nil {
					return Found{}, err
				}
				if full {
					break scan
				}
			}
			// After stays: a token of a cached page may name an instance past this
			// page, and the names of later pages all sort after this one's.
			cur.Continue = list.GetContinue()
			if cur.Continue == "" {
				break
			}
		}
	}
	out := Found{Class: q.cl.Ident(), Namespace: q.ns, Items: items, Count: len(items), Scanned: scanned, Continue: next}
	if bounded && len(items) == 0 {
		out.Note = fmt.Sprintf("scanned %d instances and none matched yet, but more remain: call again with this continue token to scan on", scanned)
	}
	return out, nil
}

// cached is class k's instances in the query's namespace that have the field values
// (of selectable slots, found by index) from the manager's cache, after one check
// that the caller's identity may list them there (its answer kept for a few
// seconds), with source instances.Cached; or the reason the query lists them through
// the API server, as the caller, instead.
func (e *Env) cached(ctx context.Context, c *tool.Call, q *findQuery, k *catalog.Class, fields map[string]string) ([]*unstructured.Unstructured, string) {
	switch {
	case e.Instances == nil:
		return nil, instances.Off
	case q.cur.Continue != "":
		return nil, instances.Continued
	}
	err := e.Identities.Can(ctx, c.Account, identity.Access{Verb: "list", Group: k.InstanceAPI.Group,
		Resource: k.InstanceAPI.Plural, Namespace: q.ns})
	switch {
	case apierrors.IsForbidden(err):
		return nil, instances.Forbidden
	case err != nil:
		return nil, instances.Unchecked
	}
	return e.Instances.List(ctx, instances.Query{GVK: k.GVK(), Namespace: q.ns, Indexed: instanceapi.SelectableSlots(k), Fields: fields})
}

// selects says whether an instance has the query's name and labels.
func (q *findQuery) selects(u *unstructured.Unstructured) bool {
	return (q.in.Name == "" || u.GetName() == q.in.Name) && (q.sel == nil || q.sel.Matches(labels.Set(u.GetLabels())))
}

// selectableWhere is the part of a where clause the API server can check, as field
// selector values: the slots that every class of the query declares selectable, with
// a value of the slot's own kind. scan is true when a part is left to check here.
func selectableWhere(classes []*catalog.Class, where map[string]any) (fields map[string]string, scan bool) {
	fields = map[string]string{}
	for f, v := range where {
		sv, ok := instances.FieldValue(v)
		for _, k := range classes {
			if !ok {
				break
			}
			ok = slices.Contains(instanceapi.SelectableSlots(k), f) && valueFits(k, f, v)
		}
		if !ok {
			scan = true
			continue
		}
		fields[f] = sv
	}
	return fields, scan
}

// valueFits says whether a where value has the JSON kind of the slot's stored values.
func valueFits(k *catalog.Class, field string, v any) bool {
	s, _ := k.Slot(field)
	info, _ := catalog.SlotRange(s)
	switch v.(type) {
	case string:
		return info.CRDType == "string"
	case bool:
		return info.CRDType == "boolean"
	case float64:
		return info.CRDType == "integer"
	}
	return false
}

// findKind is the kind of entity.find's continue token.
const findKind = "entity-find"

// matches says whether an instance has the slot values of a where clause: equal
// values, or for a list slot, one equal item.
func matches(u *unstructured.Unstructured, where map[string]any) bool {
	spec, _ := u.Object["spec"].(map[string]any)
	for field, want := range where {
		got, ok := spec[field]
		if !ok || !equalValue(got, want) {
			return false
		}
	}
	return true
}

func equalValue(got, want any) bool {
	if list, ok := got.([]any); ok {
		if _, wantList := want.([]any); !wantList {
			for _, item := range list {
				if equalValue(item, want) {
					return true
				}
			}
			return false
		}
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	var gv, wv any
	_ = json.Unmarshal(g, &gv)
	_ = json.Unmarshal(w, &wv)
	return reflect.DeepEqual(gv, wv)
}

// instanceOf is the concrete class and the namespace of the one instance a call acts
// on, noted for the audit (with the namespace asked for, even when it is refused).
func instanceOf(ctx context.Context, c *tool.Call, className, namespace, name string) (*catalog.Class, string, error) {
	cl, err := class(c, className)
	if err != nil {
		return nil, "", err
	}
	if err := concrete(c.Snap, cl); err != nil {
		return nil, "", err
	}
	tool.NoteInstance(ctx, cl.Name, namespace, name)
	ns, err := authorize.Namespace(c.Account, namespace)
	if err != nil {
		return nil, "", err
	}
	tool.NoteInstance(ctx, cl.Name, ns, name)
	return cl, ns, nil
}

func (e *Env) update(ctx context.Context, c *tool.Call, in updateArgs) (Entity, error) {
	cl, ns, err := instanceOf(ctx, c, in.Class, in.Namespace, in.Name)
	if err != nil {
		return Entity{}, err
	}
	// Coerce the values that are set; nulls remove slots, required ones excepted.
	set := map[string]any{}
	patch := map[string]any{}
	var problems []string
	for field, v := range in.Attributes {
		s, ok := cl.Slot(field)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%q is not a slot of %s; its slots are: %s", field, cl.Ident(), catalog.SlotList(cl)))
		case v == nil && s.Required:
			problems = append(problems, fmt.Sprintf("slot %q is required and cannot be removed", field))
		case v == nil:
			patch[field] = nil
		default:
			set[field] = v
		}
	}
	partial := *cl
	partial.Required = nil
	coerced, more := catalog.Coerce(&partial, set)
	problems = append(problems, more...)
	if len(problems) > 0 {
		return Entity{}, tool.Fail("Validation failed for %s: %s", cl.Ident(), strings.Join(problems, "; "))
	}
	for k, v := range coerced {
		patch[k] = v
	}
	body := map[string]any{"spec": patch}
	if in.ResourceVersion != "" {
		body["metadata"] = map[string]any{"resourceVersion": in.ResourceVersion}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return Entity{}, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	u.SetNamespace(ns)
	u.SetName(in.Name)
	kc, err := e.as(c)
	if err != nil {
		return Entity{}, err
	}
	if err := checkRefs(ctx, kc, c, ns, cl, coerced); err != nil {
		return Entity{}, err
	}
	if err := kc.Patch(ctx, u, client.RawPatch(types.MergePatchType, raw)); err != nil {
		return Entity{}, apiFailure(c, err, cl, in.Name)
	}
	e.Instances.Wrote(u, false)
	return EntityView(cl, u), nil
}

// delete removes an instance, as the caller: RBAC decides. It reads the instance first
// so that the answer names exactly what was deleted (its uid is a precondition of the
// delete), and a given resourceVersion is a precondition too.
func (e *Env) delete(ctx context.Context, c *tool.Call, in deleteArgs) (Deleted, error) {
	if in.Name == "" {
		return Deleted{}, tool.BadArgs("name is empty: give the name of the instance to delete")
	}
	cl, ns, err := instanceOf(ctx, c, in.Class, in.Namespace, in.Name)
	if err != nil {
		return Deleted{}, err
	}
	kc, err := e.as(c)
	if err != nil {
		return Deleted{}, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: in.Name}, u); err != nil {
		return Deleted{}, e.deleteFailure(c, err, cl, ns, in.Name, in.ResourceVersion)
	}
	if in.ResourceVersion != "" && in.ResourceVersion != u.GetResourceVersion() {
		return Deleted{}, e.staleVersion(cl, ns, in.Name, in.ResourceVersion)
	}
	if !in.DryRun {
		if err := c.Confirm(fmt.Sprintf("Delete the %s %q in namespace %q for good?", cl.Ident(), in.Name, ns)); err != nil {
			return Deleted{}, err
		}
	}
	uid := u.GetUID()
	pre := client.Preconditions{UID: &uid}
	if in.ResourceVersion != "" {
		pre.ResourceVersion = &in.ResourceVersion
	}
	opts := []client.DeleteOption{pre}
	if in.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := kc.Delete(ctx, u, opts...); err != nil {
		return Deleted{}, e.deleteFailure(c, err, cl, ns, in.Name, in.ResourceVersion)
	}
	if !in.DryRun {
		e.Instances.Wrote(u, true)
	}
	out := Deleted{Class: cl.Ident(), Namespace: ns, Name: in.Name, UID: string(uid),
		ResourceVersion: u.GetResourceVersion(), Deleted: !in.DryRun, DryRun: in.DryRun}
	switch {
	case in.DryRun:
		out.Message = "the delete would be allowed; nothing was deleted"
	case len(u.GetFinalizers()) > 0:
		out.Finalizers = u.GetFinalizers()
		out.Message = "the instance is being deleted; the API server removes it once its finalizers are done"
	}
	return out, nil
}

// deleteFailure says what a refused delete means; nothing was deleted.
func (e *Env) deleteFailure(c *tool.Call, err error, cl *catalog.Class, ns, name, rv string) error {
	switch {
	case apierrors.IsNotFound(err):
		return tool.Fail("no %s named %q in namespace %q; nothing was deleted; %s", cl.Ident(), name, ns, tool.Instead(toFind(c, cl, ns)))
	case apierrors.IsConflict(err) && rv != "":
		return e.staleVersion(cl, ns, name, rv)
	case apierrors.IsConflict(err):
		return tool.Fail("conflict: the %s %q in namespace %q was replaced while it was being deleted; nothing was deleted; retry",
			cl.Ident(), name, ns)
	}
	return apiFailure(c, err, cl, name)
}

func (e *Env) staleVersion(cl *catalog.Class, ns, name, rv string) error {
	return tool.Fail("conflict: the %s %q in namespace %q changed since resourceVersion %q; nothing was deleted; "+
		"read it again (%s) and retry with its current resourceVersion", cl.Ident(), name, ns, rv, tool.Encode(e.Style, "sandbar.entity.find"))
}

func (e *Env) instanceOf(ctx context.Context, c *tool.Call, in instanceOfArgs) (InstanceOf, error) {
	cl, err := class(c, in.Class)
	if err != nil {
		return InstanceOf{}, err
	}
	of, err := class(c, in.Of)
	if err != nil {
		return InstanceOf{}, err
	}
	ns, err := authorize.Namespace(c.Account, in.Namespace)
	if err != nil {
		return InstanceOf{}, err
	}
	if err := concrete(c.Snap, cl); err != nil {
		return InstanceOf{}, err
	}
	if _, err := e.read(ctx, c, cl, ns, in.Name); err != nil {
		return InstanceOf{}, err
	}
	return InstanceOf{
		Instance:   InstanceRef{Class: cl.Ident(), Name: in.Name, Namespace: ns},
		Of:         of.Ident(),
		InstanceOf: isA(cl, of),
		Classes:    append([]string{cl.Ident()}, idents(c.Snap, cl.Ancestors)...),
	}, nil
}

// read reads an instance of cl as the account; a refusal is said as apiFailure says it.
func (e *Env) read(ctx context.Context, c *tool.Call, cl *catalog.Class, ns, name string) (*unstructured.Unstructured, error) {
	kc, err := e.as(c)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, apiFailure(c, err, cl, name)
	}
	return u, nil
}

// checkRefs refuses values of ref slots that name no existing instance of the
// target class (or a subclass) in the namespace, looked up as the account.
func checkRefs(ctx context.Context, kc client.Reader, c *tool.Call, ns string, cl *catalog.Class, spec map[string]any) error {
	missing, err := builtin.MissingRefs(ctx, kc, c.Snap, ns, cl, spec)
	switch {
	case apierrors.IsForbidden(err):
		return tool.Fail("forbidden: the references of this %s cannot be checked, because this account may not read their targets in namespace %q; nothing was written", cl.Ident(), ns)
	case err != nil:
		return err
	case len(missing) == 0:
		return nil
	}
	problems := make([]string, len(missing))
	for i, m := range missing {
		problems[i] = m.Problem()
	}
	instead := ""
	if target := c.Snap.Classes[missing[0].Target]; target != nil {
		instead = "; " + missingInstance(c, target, ns, missing[0].Name)
	}
	return tool.Fail("Validation failed for %s: %s. Nothing was written: refer to an existing instance or create it first, then call again%s",
		cl.Ident(), strings.Join(problems, "; "), instead)
}
