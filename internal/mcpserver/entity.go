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

package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
)

const (
	maxBatch     = 100
	maxFindLimit = 200
	// maxFindBytes caps the JSON of one find result, so that a large namespace
	// cannot flood a model's context; the continue token gives the rest.
	maxFindBytes = 64 << 10
	// maxFindPages bounds the API pages one find reads while filtering.
	maxFindPages = 20
)

// concrete checks that a class can have instances, and says what to use instead.
func (c *call) concrete(cl *catalog.Class) error {
	if cl.Abstract {
		subs := c.concreteSubclasses(cl)
		if len(subs) == 0 {
			return fail("cannot instantiate abstract class %s; it has no concrete subclasses", cl.Ident())
		}
		return fail("cannot instantiate abstract class %s; concrete subclasses: %s", cl.Ident(), strings.Join(subs, ", "))
	}
	if !cl.Servable() {
		msg := "it is not ready"
		if cl.Problem != nil {
			msg = cl.Problem.Message
		}
		return fail("class %s cannot take instances right now: %s", cl.Ident(), msg)
	}
	return nil
}

func (c *call) create(ctx context.Context) (any, error) {
	return c.createFromArgs(ctx, c.args, false)
}

func (c *call) validate(ctx context.Context) (any, error) {
	return c.createFromArgs(ctx, c.args, true)
}

// createFromArgs reads {class, attributes, metadata} or {class, format, source}.
func (c *call) createFromArgs(ctx context.Context, args map[string]any, dryRun bool) (any, error) {
	sub := &call{s: c.s, snap: c.snap, acct: c.acct, args: args}
	cl, err := sub.class("class")
	if err != nil {
		return nil, err
	}
	attrs, err := sub.object("attributes")
	if err != nil {
		return nil, err
	}
	meta, err := sub.object("metadata")
	if err != nil {
		return nil, err
	}
	if source, ok := args["source"]; ok {
		if attrs != nil {
			return nil, badParams("give either attributes or format and source, not both")
		}
		text, ok := source.(string)
		if !ok {
			return nil, badParams("argument \"source\" must be a string")
		}
		format, _ := args["format"].(string)
		var doc *codec.Document
		var err error
		switch metav1alpha1.CodecFormat(format) {
		case metav1alpha1.CodecJSON, "":
			doc, err = codec.DecodeJSON(text)
		case metav1alpha1.CodecMarkdown:
			doc, err = codec.DecodeMarkdown(cl, text)
		default:
			return nil, fail("unknown format %q; the formats are: json, markdown", format)
		}
		if err != nil {
			return nil, fail("source (%s): %v", orDefault(format, "json"), err)
		}
		attrs = doc.Attributes
		if meta == nil {
			meta = doc.Metadata
		}
	}
	if attrs == nil {
		attrs = map[string]any{}
	}
	return c.createEntity(ctx, cl.Name, attrs, meta, dryRun)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// createEntity coerces attributes against the class and creates the instance in the
// caller's namespace (or only checks it, with dryRun).
func (c *call) createEntity(ctx context.Context, className string, attrs, meta map[string]any, dryRun bool) (any, error) {
	cl := c.snap.Classes[className]
	if cl == nil {
		return nil, fail("unknown class %q", className)
	}
	if err := c.concrete(cl); err != nil {
		return nil, err
	}
	spec, problems := catalog.Coerce(cl, attrs)
	if len(problems) > 0 {
		return nil, fail("Validation failed for %s: %s. Example: %s", cl.Ident(), strings.Join(problems, "; "), exampleArgs(cl))
	}
	md, err := parseMetadata(meta)
	if err != nil {
		return nil, err
	}
	ns, err := c.namespace(md.namespace)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(cl.GVK())
	u.SetNamespace(ns)
	if md.name != "" {
		u.SetName(md.name)
	} else {
		u.SetGenerateName(strings.ToLower(cl.Kind) + "-")
	}
	if len(md.labels) > 0 {
		u.SetLabels(md.labels)
	}
	u.SetAnnotations(map[string]string{"meta.sandbar.dev/created-by": c.acct.Namespace + "/" + c.acct.Name})
	var opts []client.CreateOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.s.client.Create(ctx, u, opts...); err != nil {
		return nil, apiFailure(err, cl, u.GetName())
	}
	if dryRun {
		return map[string]any{"valid": true, "class": cl.Ident(), "attributes": spec}, nil
	}
	return entityView(cl, u), nil
}

type metadata struct {
	name, namespace string
	labels          map[string]string
}

// parseMetadata reads the "metadata" argument strictly: a misspelt key or a name that
// is not a string is an error, not an instance with a generated name.
func parseMetadata(m map[string]any) (metadata, error) {
	var md metadata
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "name", "namespace":
			s, ok := v.(string)
			if !ok {
				return md, fail("metadata.%s must be a string, got %s", k, catalog.DescribeValue(v))
			}
			if k == "name" {
				md.name = s
			} else {
				md.namespace = s
			}
		case "labels":
			l, ok := v.(map[string]any)
			if !ok {
				return md, fail("metadata.labels must be an object of strings, got %s", catalog.DescribeValue(v))
			}
			md.labels = map[string]string{}
			for lk, lv := range l {
				s, ok := lv.(string)
				if !ok {
					return md, fail("label %q must have a string value, got %s", lk, catalog.DescribeValue(lv))
				}
				md.labels[lk] = s
			}
		default:
			return md, fail("metadata.%s is not allowed; metadata takes name, namespace and labels", k)
		}
	}
	return md, nil
}

// apiFailure turns the API server's refusals into messages for the caller; other
// errors stay internal.
func apiFailure(err error, cl *catalog.Class, name string) error {
	switch {
	case apierrors.IsAlreadyExists(err):
		return fail("a %s named %q already exists; choose another metadata.name or use sandbar_entity_update", cl.Ident(), name)
	case apierrors.IsNotFound(err):
		return fail("no %s named %q in this namespace; sandbar_entity_find lists them", cl.Ident(), name)
	case apierrors.IsConflict(err):
		return fail("conflict: the %s %q changed since the given resourceVersion; read it again and retry", cl.Ident(), name)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return fail("Validation failed for %s: %s", cl.Ident(), apiMessage(err))
	case apierrors.IsForbidden(err):
		return fail("forbidden: %s", apiMessage(err))
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

func entityView(cl *catalog.Class, u *unstructured.Unstructured) map[string]any {
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	v := map[string]any{
		"class":           cl.Ident(),
		"name":            u.GetName(),
		"namespace":       u.GetNamespace(),
		"attributes":      spec,
		"resourceVersion": u.GetResourceVersion(),
		"kubernetes":      map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()},
	}
	if l := u.GetLabels(); len(l) > 0 {
		v["labels"] = l
	}
	if t := u.GetCreationTimestamp(); !t.IsZero() {
		v["createdAt"] = t.UTC().Format("2006-01-02T15:04:05Z")
	}
	return v
}

// exampleArgs shows valid arguments for a class, for error messages.
func exampleArgs(cl *catalog.Class) string {
	ex := map[string]any{}
	for _, s := range cl.Slots {
		if !s.Required && len(ex) >= 3 {
			continue
		}
		ex[s.Field] = exampleValue(s)
	}
	b, _ := json.Marshal(ex)
	return string(b)
}

func exampleValue(s catalog.Slot) any {
	var v any
	switch {
	case len(s.Enum) > 0:
		v = s.Enum[0]
	default:
		switch s.Range {
		case "integer":
			v = 1
		case "number":
			v = 1.5
		case "boolean":
			v = true
		case "date-time":
			v = "2026-01-31T12:00:00Z"
		case "uuid":
			v = "123e4567-e89b-12d3-a456-426614174000"
		case "uri":
			v = "https://example.com/"
		case "keyword":
			v = "ns/name"
		case "ref":
			v = "name-of-" + strings.ToLower(s.Target)
		case "json":
			v = map[string]any{}
		default:
			v = "text"
		}
	}
	if s.Many() {
		return []any{v}
	}
	return v
}

func (c *call) createEntities(ctx context.Context) (any, error) {
	raw, ok := c.args["entities"].([]any)
	if !ok {
		return nil, badParams("argument \"entities\" must be a list of {class, attributes}")
	}
	if len(raw) > maxBatch {
		return nil, badParams("at most %d entities at once", maxBatch)
	}
	results := []map[string]any{}
	failed := 0
	for i, item := range raw {
		args, ok := item.(map[string]any)
		if !ok {
			return nil, badParams("entities[%d] must be an object", i)
		}
		out, err := c.createFromArgs(ctx, args, false)
		if err != nil {
			if _, domain := err.(*domainError); !domain {
				return nil, err
			}
			failed++
			results = append(results, map[string]any{"index": i, "error": err.Error()})
			continue
		}
		results = append(results, map[string]any{"index": i, "created": out})
	}
	return map[string]any{"results": results, "created": len(raw) - failed, "failed": failed}, nil
}

// findCursor is the continue token of entity.find: which class of the query, which
// API page of it comes next, and the last instance already returned from that page
// (pages list instances in name order).
type findCursor struct {
	Class    int    `json:"c"`
	Continue string `json:"k,omitempty"`
	After    string `json:"a,omitempty"`
}

func (c *call) findEntities(ctx context.Context) (any, error) {
	cl, err := c.class("class")
	if err != nil {
		return nil, err
	}
	where, err := c.object("where")
	if err != nil {
		return nil, err
	}
	name, err := c.str("name", false)
	if err != nil {
		return nil, err
	}
	selector, err := c.str("labelSelector", false)
	if err != nil {
		return nil, err
	}
	ns, err := c.namespaceArg()
	if err != nil {
		return nil, err
	}
	limit, err := c.integer("limit", 20, 1, maxFindLimit)
	if err != nil {
		return nil, err
	}
	token, err := c.str("continue", false)
	if err != nil {
		return nil, err
	}
	format, err := c.str("format", false)
	if err != nil {
		return nil, err
	}
	if format != "" && format != string(metav1alpha1.CodecJSON) && format != string(metav1alpha1.CodecMarkdown) {
		return nil, fail("unknown format %q; the formats are: json, markdown", format)
	}
	var cur findCursor
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || json.Unmarshal(b, &cur) != nil {
			return nil, badParams("argument \"continue\" is not a token this server gave out")
		}
	}
	var sel labels.Selector
	if selector != "" {
		if sel, err = labels.Parse(selector); err != nil {
			return nil, fail("labelSelector %q: %v", selector, err)
		}
	}
	for field, v := range where {
		if _, ok := cl.Slot(field); !ok {
			return nil, fail("where: %q is not a slot of %s; its slots are: %s", field, cl.Ident(), catalog.SlotList(cl))
		}
		if v == nil {
			return nil, fail("where: %q needs a value", field)
		}
	}

	// The query spans the class and its concrete subclasses.
	var classes []*catalog.Class
	for _, n := range append([]string{cl.Name}, c.snap.Subclasses(cl.Name)...) {
		if k := c.snap.Classes[n]; k.Servable() {
			classes = append(classes, k)
		}
	}

	items := []map[string]any{}
	size := 0
	next := ""
	pages := 0
scan:
	for ; cur.Class < len(classes); cur.Class, cur.Continue, cur.After = cur.Class+1, "", "" {
		k := classes[cur.Class]
		for {
			if pages == maxFindPages {
				next = encodeCursor(cur)
				break scan
			}
			pages++
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(k.GVK().GroupVersion().WithKind(k.InstanceAPI.Kind + "List"))
			opts := []client.ListOption{client.InNamespace(ns), client.Limit(limit), client.Continue(cur.Continue)}
			if sel != nil {
				opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
			}
			if name != "" {
				opts = append(opts, client.MatchingFields{"metadata.name": name})
			}
			if err := c.s.client.List(ctx, list, opts...); err != nil {
				if apierrors.IsResourceExpired(err) {
					return nil, fail("the continue token has expired; start the query again")
				}
				return nil, apiFailure(err, k, "")
			}
			for i := range list.Items {
				u := &list.Items[i]
				if (cur.After != "" && u.GetName() <= cur.After) || !matches(u, where) {
					continue
				}
				v := entityView(k, u)
				if format == string(metav1alpha1.CodecMarkdown) {
					md, err := codec.EncodeMarkdown(k, u.GetName(), v["attributes"].(map[string]any))
					if err != nil {
						return nil, err
					}
					delete(v, "attributes")
					v["source"] = md
				}
				b, _ := json.Marshal(v)
				if int64(len(items)) == limit || (size+len(b) > maxFindBytes && len(items) > 0) {
					// The next call reads this page again and skips what it returned.
					next = encodeCursor(cur)
					break scan
				}
				items = append(items, v)
				size += len(b)
				cur.After = u.GetName()
			}
			cur.Continue, cur.After = list.GetContinue(), ""
			if cur.Continue == "" {
				break
			}
		}
	}
	out := map[string]any{"class": cl.Ident(), "namespace": ns, "items": items, "count": len(items)}
	if next != "" {
		out["continue"] = next
	}
	return out, nil
}

func encodeCursor(cur findCursor) string {
	b, _ := json.Marshal(cur)
	return base64.RawURLEncoding.EncodeToString(b)
}

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

func (c *call) update(ctx context.Context) (any, error) {
	cl, err := c.class("class")
	if err != nil {
		return nil, err
	}
	if err := c.concrete(cl); err != nil {
		return nil, err
	}
	name, err := c.str("name", true)
	if err != nil {
		return nil, err
	}
	ns, err := c.namespaceArg()
	if err != nil {
		return nil, err
	}
	attrs, err := c.object("attributes")
	if err != nil {
		return nil, err
	}
	if attrs == nil {
		return nil, badParams("missing argument \"attributes\"")
	}
	rv, err := c.str("resourceVersion", false)
	if err != nil {
		return nil, err
	}
	// Coerce the values that are set; nulls remove slots, required ones excepted.
	set := map[string]any{}
	patch := map[string]any{}
	var problems []string
	for field, v := range attrs {
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
		return nil, fail("Validation failed for %s: %s", cl.Ident(), strings.Join(problems, "; "))
	}
	for k, v := range coerced {
		patch[k] = v
	}
	body := map[string]any{"spec": patch}
	if rv != "" {
		body["metadata"] = map[string]any{"resourceVersion": rv}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	u.SetNamespace(ns)
	u.SetName(name)
	if err := c.s.client.Patch(ctx, u, client.RawPatch(types.MergePatchType, raw)); err != nil {
		return nil, apiFailure(err, cl, name)
	}
	return entityView(cl, u), nil
}

func (c *call) instanceOf(ctx context.Context) (any, error) {
	cl, err := c.class("class")
	if err != nil {
		return nil, err
	}
	of, err := c.class("of")
	if err != nil {
		return nil, err
	}
	name, err := c.str("name", true)
	if err != nil {
		return nil, err
	}
	ns, err := c.namespaceArg()
	if err != nil {
		return nil, err
	}
	if err := c.concrete(cl); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	if err := c.s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, apiFailure(err, cl, name)
	}
	return map[string]any{
		"instance":   map[string]any{"class": cl.Ident(), "name": name, "namespace": ns},
		"of":         of.Ident(),
		"instanceOf": isA(cl, of),
		"classes":    append([]string{cl.Ident()}, c.idents(cl.Ancestors)...),
	}, nil
}
