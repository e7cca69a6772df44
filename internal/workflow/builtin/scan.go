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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// MaxResultBytes bounds the result a built-in process keeps in its status (objects
// in etcd stay small): a job whose result would grow past it fails, keeping none.
const MaxResultBytes = 512 << 10

// classesOf is a class and its concrete subclasses, or every concrete class when
// name is empty and all is allowed.
func classesOf(snap *catalog.Snapshot, name string, all bool) ([]*catalog.Class, error) {
	var names []string
	switch {
	case name == "" && all:
		names = snap.ClassNames()
	case name == "":
		return nil, failf("the input needs a class")
	default:
		cl := snap.FindClass(name)
		if cl == nil {
			return nil, failf("unknown class %q", name)
		}
		names = append([]string{cl.Name}, snap.Subclasses(cl.Name)...)
	}
	var out []*catalog.Class
	for _, n := range names {
		if c := snap.Classes[n]; c != nil && c.Servable() {
			out = append(out, c)
		}
	}
	return out, nil
}

// scan visits one page of the instances of classes, from the run's cursor, and
// reports whether every class has been visited.
func scan(ctx context.Context, env Env, run *Run, classes []*catalog.Class,
	visit func(cl *catalog.Class, u *unstructured.Unstructured, spec map[string]any) error) (bool, error) {
	return scanPages(ctx, env, run, classes, chunk, visit)
}

// scanPages is scan with pages of up to size instances.
func scanPages(ctx context.Context, env Env, run *Run, classes []*catalog.Class, size int64,
	visit func(cl *catalog.Class, u *unstructured.Unstructured, spec map[string]any) error) (bool, error) {
	cur := &run.Cursor
	if cur.Class >= len(classes) {
		return true, nil
	}
	cl := classes[cur.Class]
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(cl.GVK().GroupVersion().WithKind(cl.InstanceAPI.Kind + "List"))
	if err := env.Client.List(ctx, list, client.InNamespace(env.Namespace), client.Limit(size), client.Continue(cur.Continue)); err != nil {
		if !apierrors.IsResourceExpired(err) {
			return false, err
		}
		cur.Continue = "" // the page expired; rescan this class from its start
		if run.Progress != nil {
			run.Progress.Message = "restarting " + cl.Ident()
		}
		return false, nil
	}
	done := int64(0)
	if run.Progress != nil {
		done = run.Progress.Done
	}
	for i := range list.Items {
		u := &list.Items[i]
		spec, _ := u.Object["spec"].(map[string]any)
		if err := visit(cl, u, spec); err != nil {
			return false, err
		}
		done++
	}
	if b, _ := json.Marshal(run.Result); len(b) > MaxResultBytes {
		return false, failf("the export is larger than %d KiB; export one class at a time", MaxResultBytes>>10)
	}
	cur.Continue = list.GetContinue()
	if cur.Continue == "" {
		cur.Class++
	}
	run.Progress = &metav1alpha1.Progress{Done: done, Message: fmt.Sprintf("%d instances so far, at %s", done, cl.Ident())}
	return false, nil
}
