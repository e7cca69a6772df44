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

package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
)

// Import creates or updates the instances of a bundle, idempotently.
const Import = "sandbar.import"

// ImportInput is the input of Import.
type ImportInput struct {
	Bundle *Bundle `json:"bundle,omitempty"`
}

// Bundle is a set of instances, as Export makes it.
type Bundle struct {
	// Format is the format of the items' source: json or markdown.
	Format string       `json:"format,omitempty" jsonschema:"The format of the items' source: json or markdown."`
	Items  []BundleItem `json:"items" jsonschema:"The instances."`
}

// BundleItem is one instance: its attributes, or its source as a document.
type BundleItem struct {
	Class      string         `json:"class" jsonschema:"The class, as prefix/Kind."`
	Name       string         `json:"name,omitempty" jsonschema:"Name of the instance."`
	Attributes map[string]any `json:"attributes,omitempty" jsonschema:"Slot values by field name."`
	Source     string         `json:"source,omitempty" jsonschema:"The instance as a document in the bundle's format."`
}

// importOutcomes are what importing an item can do, each counted in the result.
var importOutcomes = []string{"created", "updated", "unchanged", "failed"}

var importJob = newJob(Import, "sandbar.project.import",
	"Imports a bundle: creates missing instances and updates changed ones, reporting created, updated and failed counts.",
	importBundle,
	func(r Result) string {
		return fmt.Sprintf("created %d, updated %d, unchanged %d, failed %d",
			r.count("created"), r.count("updated"), r.count("unchanged"), r.count("failed"))
	})

func importBundle(ctx context.Context, env Env, in ImportInput, run *Run) (bool, error) {
	if in.Bundle == nil {
		return false, failf("the input needs a bundle with items")
	}
	r, items := run.Result, in.Bundle.Items
	end := min(run.Cursor.Item+chunk, len(items))
	bundled := bundledTargets(env.Snapshot, items)
	for i := run.Cursor.Item; i < end; i++ {
		outcome, err := importItem(ctx, env, items[i], bundled)
		if err != nil {
			r["failed"] = r.num("failed") + 1
			r.appendCapped("errors", map[string]any{"index": i, "name": items[i].Name, "error": err.Error()})
			continue
		}
		r[outcome] = r.num(outcome) + 1
	}
	run.Cursor.Item = end
	run.Progress = &metav1alpha1.Progress{Done: int64(end), Total: int64(len(items)), Message: fmt.Sprintf("%d of %d items", end, len(items))}
	if end < len(items) {
		return false, nil
	}
	for _, k := range importOutcomes {
		r[k] = r.num(k)
	}
	return true, nil
}

// bundledTargets reports whether the bundle holds an instance of a class (by its
// catalog name) with a name; it looks at the bundle once, when first asked.
func bundledTargets(snap *catalog.Snapshot, items []BundleItem) func(class, name string) bool {
	var names map[string]bool
	return func(class, name string) bool {
		if names == nil {
			names = map[string]bool{}
			for _, item := range items {
				cl := snap.FindClass(item.Class)
				if cl == nil {
					continue
				}
				n := item.Name
				if n == "" && item.Source != "" {
					if doc, err := codec.DecodeMarkdown(cl, item.Source); err == nil {
						n, _ = doc.Metadata["name"].(string)
					}
				}
				names[cl.Name+"/"+n] = true
			}
		}
		return names[class+"/"+name]
	}
}

// danglingRefs are the references of an item's spec whose target neither exists in
// the namespace nor is an item of the bundle (of the target class or a subclass).
func danglingRefs(ctx context.Context, env Env, cl *catalog.Class, spec map[string]any, bundled func(class, name string) bool) ([]string, error) {
	missing, err := MissingRefs(ctx, env.Client, env.Snapshot, env.Namespace, cl, spec)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, m := range missing {
		inBundle := false
		for _, n := range append([]string{m.Target}, env.Snapshot.Subclasses(m.Target)...) {
			inBundle = inBundle || bundled(n, m.Name)
		}
		if !inBundle {
			problems = append(problems, m.Problem()+" (nor is it an item of the bundle)")
		}
	}
	return problems, nil
}

// importItem creates or updates one item. An instance it writes carries the process
// and what it did in an annotation, so that a chunk done again (its status write
// lost to a conflict) counts the item as it did the first time, not as unchanged.
// An item with a reference to an instance that neither exists nor is in the bundle
// is refused, and nothing of it is written.
func importItem(ctx context.Context, env Env, item BundleItem, bundled func(class, name string) bool) (string, error) {
	ns, by := env.Namespace, env.Namespace+"/"+env.Process
	cl, name, spec, err := decodeItem(env.Snapshot, item)
	if err != nil {
		return "", err
	}
	dangling, err := danglingRefs(ctx, env, cl, spec, bundled)
	if err != nil {
		return "", fmt.Errorf("its references could not be checked, so nothing of it was written: %w", err)
	}
	if len(dangling) > 0 {
		return "", fmt.Errorf("refused, nothing of it was written: %s", strings.Join(dangling, "; "))
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	switch {
	case apierrors.IsNotFound(err):
		u = &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(cl.GVK())
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetAnnotations(map[string]string{metav1alpha1.AnnotationImportedBy: by + " created"})
		return "created", env.Client.Create(ctx, u)
	case err != nil:
		return "", err
	}
	if sameSpec(u, spec) {
		if done, ok := strings.CutPrefix(u.GetAnnotations()[metav1alpha1.AnnotationImportedBy], by+" "); ok {
			return done, nil
		}
		return "unchanged", nil
	}
	u.Object["spec"] = spec
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[metav1alpha1.AnnotationImportedBy] = by + " updated"
	u.SetAnnotations(annotations)
	return "updated", env.Client.Update(ctx, u)
}

// ItemDocument is what an import reads of an item: its class, its name (the item's,
// else its source's) and its attributes (its source's, a Markdown document, when it
// has one). The call policies read an import's items with it, as the import writes
// them.
func ItemDocument(snap *catalog.Snapshot, item BundleItem) (*catalog.Class, string, map[string]any, error) {
	cl := snap.FindClass(item.Class)
	if cl == nil || !cl.Servable() {
		return nil, "", nil, fmt.Errorf("class %q cannot take instances", item.Class)
	}
	if item.Source == "" {
		return cl, item.Name, item.Attributes, nil
	}
	doc, err := codec.DecodeMarkdown(cl, item.Source)
	if err != nil {
		return nil, "", nil, err
	}
	name := item.Name
	if n, ok := doc.Metadata["name"].(string); ok && name == "" {
		name = n
	}
	return cl, name, doc.Attributes, nil
}

// decodeItem is an item as an import writes it: its class, its name, and its spec,
// the attributes (decoded from its source when it has one) coerced against the class.
func decodeItem(snap *catalog.Snapshot, item BundleItem) (*catalog.Class, string, map[string]any, error) {
	cl, name, attrs, err := ItemDocument(snap, item)
	if err != nil {
		return nil, "", nil, err
	}
	if name == "" {
		return nil, "", nil, fmt.Errorf("an item needs a name")
	}
	spec, problems := catalog.Coerce(cl, attrs)
	if len(problems) > 0 {
		return nil, "", nil, fmt.Errorf("%v", problems)
	}
	return cl, name, spec, nil
}

// sameSpec reports whether an instance's spec is spec already, so that importing
// spec over it leaves it unchanged.
func sameSpec(u *unstructured.Unstructured, spec map[string]any) bool {
	current, _ := u.Object["spec"].(map[string]any)
	return normalized(current) == normalized(spec)
}

func normalized(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
