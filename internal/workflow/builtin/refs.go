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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// MissingRef is a reference whose target instance does not exist.
type MissingRef struct {
	catalog.Ref
	// Class is the target class as prefix/Kind (or the Class's name if the
	// snapshot does not know it).
	Class     string
	Namespace string
}

// MissingRefs looks up, with c, the target of every reference in an instance's
// spec (an instance of the target class or of one of its subclasses, in namespace
// ns) and lists those that do not exist. Any other error of the API server (such as
// forbidden) is returned.
func MissingRefs(ctx context.Context, c client.Reader, snap *catalog.Snapshot, ns string, cl *catalog.Class, spec map[string]any) ([]MissingRef, error) {
	var out []MissingRef
	for _, r := range catalog.Refs(cl, spec) {
		found, err := refExists(ctx, c, snap, ns, r)
		if err != nil {
			return nil, err
		}
		if !found {
			m := MissingRef{Ref: r, Class: r.Target, Namespace: ns}
			if t := snap.Classes[r.Target]; t != nil {
				m.Class = t.Ident()
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// InstanceExists looks up, with c, an instance name of the Class named class or of
// one of its subclasses, in namespace ns, as MissingRefs looks up a reference's
// target. Any error of the API server but not found (such as forbidden) is returned.
func InstanceExists(ctx context.Context, c client.Reader, snap *catalog.Snapshot, ns, class, name string) (bool, error) {
	return refExists(ctx, c, snap, ns, catalog.Ref{Target: class, Name: name})
}

func refExists(ctx context.Context, c client.Reader, snap *catalog.Snapshot, ns string, r catalog.Ref) (bool, error) {
	for _, n := range append([]string{r.Target}, snap.Subclasses(r.Target)...) {
		k := snap.Classes[n]
		if k == nil || !k.Servable() {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k.GVK())
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.Name}, u)
		switch {
		case err == nil:
			return true, nil
		case !apierrors.IsNotFound(err):
			return false, err
		}
	}
	return false, nil
}

// Problem says what is missing, for a person or a model to act on.
func (m MissingRef) Problem() string {
	return fmt.Sprintf("slot %q refers to the %s %q in namespace %q, which does not exist", m.Field, m.Class, m.Name, m.Namespace)
}
