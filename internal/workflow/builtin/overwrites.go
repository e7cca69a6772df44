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
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Overwrite is an existing instance that an import would change.
type Overwrite struct {
	// Class is the instance's class, as prefix/Kind.
	Class string
	Name  string
}

func (o Overwrite) String() string { return fmt.Sprintf("%s %q", o.Class, o.Name) }

// overwritesPage is how many instances one list of Overwrites reads.
const overwritesPage = 500

// Overwrites are the existing instances in namespace that importing items would
// change, by the rule the import itself follows: an item for which no instance
// exists creates one, and an item whose spec is the instance's already leaves it
// unchanged; neither is an overwrite. Items the import would refuse before reading
// anything (an unknown class, a missing name, attributes that do not fit the class)
// are not counted. It reads with r, so the caller's RBAC decides, one paged list per
// class of the bundle rather than one read per item; an error of a list (a
// Forbidden one, say) is returned as it is. The instances come in the order of the
// items that first name them.
func Overwrites(ctx context.Context, r client.Reader, snap *catalog.Snapshot, namespace string, items []BundleItem) ([]Overwrite, error) {
	type wanted struct {
		first int              // the index of the first item that names the instance
		specs []map[string]any // the specs of the items that name it
	}
	var classes []*catalog.Class
	byClass := map[string]map[string]*wanted{}
	for i, item := range items {
		cl, name, spec, err := decodeItem(snap, item)
		if err != nil {
			continue
		}
		names := byClass[cl.Name]
		if names == nil {
			names = map[string]*wanted{}
			byClass[cl.Name] = names
			classes = append(classes, cl)
		}
		w := names[name]
		if w == nil {
			w = &wanted{first: i}
			names[name] = w
		}
		w.specs = append(w.specs, spec)
	}
	type found struct {
		Overwrite
		first int
	}
	var out []found
	for _, cl := range classes {
		names := byClass[cl.Name]
		for cont := ""; ; {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(cl.GVK().GroupVersion().WithKind(cl.InstanceAPI.Kind + "List"))
			if err := r.List(ctx, list, client.InNamespace(namespace), client.Limit(overwritesPage), client.Continue(cont)); err != nil {
				return nil, fmt.Errorf("listing the %s instances in namespace %q: %w", cl.Ident(), namespace, err)
			}
			for i := range list.Items {
				u := &list.Items[i]
				w := names[u.GetName()]
				if w == nil {
					continue
				}
				if slices.ContainsFunc(w.specs, func(spec map[string]any) bool { return !sameSpec(u, spec) }) {
					out = append(out, found{Overwrite{Class: cl.Ident(), Name: u.GetName()}, w.first})
				}
			}
			if cont = list.GetContinue(); cont == "" {
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b found) int { return a.first - b.first })
	overwrites := make([]Overwrite, len(out))
	for i, f := range out {
		overwrites[i] = f.Overwrite
	}
	return overwrites, nil
}
