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

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/workflow"
)

const (
	// chunk is how many instances one reconcile handles; the cursor in status says
	// where the next one resumes, across restarts.
	chunk = 100
	// maxRecorded bounds the failures and errors a result lists.
	maxRecorded = 200
	// maxExportBytes bounds an export kept in status (objects in etcd stay small).
	maxExportBytes = 512 << 10
)

// builtinInput is the input of the built-in workflows.
type builtinInput struct {
	Class  string        `json:"class,omitempty"`
	Format string        `json:"format,omitempty"`
	Bundle *exportBundle `json:"bundle,omitempty"`
}

type exportBundle struct {
	Format string       `json:"format,omitempty"`
	Items  []bundleItem `json:"items"`
}

type bundleItem struct {
	Class      string         `json:"class"`
	Name       string         `json:"name,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Source     string         `json:"source,omitempty"`
}

// cursor is where a built-in workflow resumes: which class of its list, which API
// page, or which bundle item.
type cursor struct {
	Class    int    `json:"c,omitempty"`
	Continue string `json:"k,omitempty"`
	Item     int    `json:"i,omitempty"`
}

// runBuiltin does one chunk of a built-in workflow and reports whether more remains.
func (r *WorkflowProcessReconciler) runBuiltin(ctx context.Context, p *metav1alpha1.WorkflowProcess, w *catalog.Workflow, now metav1.Time) (bool, error) {
	var in builtinInput
	if p.Spec.Input != nil {
		if err := json.Unmarshal(p.Spec.Input.Raw, &in); err != nil {
			return false, r.finish(p, w, workflow.Fail, "the input is not valid: "+err.Error(), nil, now)
		}
	}
	var cur cursor
	if p.Status.Cursor != "" {
		_ = json.Unmarshal([]byte(p.Status.Cursor), &cur)
	}
	snap := r.Store.Load()
	switch p.Spec.Definition {
	case workflow.Import:
		return r.importChunk(ctx, p, w, snap, in, cur, now)
	default:
		classes, err := classesOf(snap, in.Class, p.Spec.Definition == workflow.Export)
		if err != nil {
			return false, r.finish(p, w, workflow.Fail, err.Error(), nil, now)
		}
		return r.scanChunk(ctx, p, w, classes, in, cur, now)
	}
}

// classesOf is a class and its concrete subclasses, or every concrete class when
// name is empty and all is allowed.
func classesOf(snap *catalog.Snapshot, name string, all bool) ([]*catalog.Class, error) {
	var names []string
	switch {
	case name == "" && all:
		names = snap.ClassNames()
	case name == "":
		return nil, fmt.Errorf("the input needs a class")
	default:
		cl := snap.FindClass(name)
		if cl == nil {
			return nil, fmt.Errorf("unknown class %q", name)
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

// scanChunk validates or exports one page of instances.
func (r *WorkflowProcessReconciler) scanChunk(ctx context.Context, p *metav1alpha1.WorkflowProcess, w *catalog.Workflow,
	classes []*catalog.Class, in builtinInput, cur cursor, now metav1.Time) (bool, error) {
	result := map[string]any{}
	if p.Status.Result != nil {
		_ = json.Unmarshal(p.Status.Result.Raw, &result)
	}
	switch p.Spec.Definition {
	case workflow.Validate:
		result["checked"], result["invalid"] = num(result["checked"]), num(result["invalid"])
	case workflow.Export:
		result["format"] = orJSON(in.Format)
		if _, ok := result["items"]; !ok {
			result["items"] = []any{}
		}
	}
	if cur.Class >= len(classes) {
		return false, r.finish(p, w, workflow.Succeed, summary(p.Spec.Definition, result), result, now)
	}
	cl := classes[cur.Class]
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(cl.GVK().GroupVersion().WithKind(cl.InstanceAPI.Kind + "List"))
	if err := r.List(ctx, list, client.InNamespace(p.Namespace), client.Limit(chunk), client.Continue(cur.Continue)); err != nil {
		if apierrors.IsResourceExpired(err) {
			cur.Continue = "" // the page expired; rescan this class from its start
			return true, r.saveProgress(p, cur, result, "restarting "+cl.Ident())
		}
		return false, err
	}
	done := int64(0)
	if p.Status.Progress != nil {
		done = p.Status.Progress.Done
	}
	for i := range list.Items {
		u := &list.Items[i]
		spec, _ := u.Object["spec"].(map[string]any)
		switch p.Spec.Definition {
		case workflow.Validate:
			result["checked"] = num(result["checked"]) + 1
			if _, problems := catalog.Coerce(cl, spec); len(problems) > 0 {
				result["invalid"] = num(result["invalid"]) + 1
				appendCapped(result, "failures", map[string]any{"class": cl.Ident(), "name": u.GetName(), "problems": problems})
			}
		case workflow.Export:
			item := map[string]any{"class": cl.Ident(), "name": u.GetName()}
			if in.Format == string(metav1alpha1.CodecMarkdown) {
				md, err := codec.EncodeMarkdown(cl, u.GetName(), spec)
				if err != nil {
					return false, err
				}
				item["source"] = md
			} else {
				item["attributes"] = spec
			}
			items, _ := result["items"].([]any)
			result["items"] = append(items, item)
		}
		done++
	}
	if b, _ := json.Marshal(result); len(b) > maxExportBytes {
		return false, r.finish(p, w, workflow.Fail, fmt.Sprintf(
			"the export is larger than %d KiB; export one class at a time", maxExportBytes>>10), nil, now)
	}
	cur.Continue = list.GetContinue()
	if cur.Continue == "" {
		cur.Class++
	}
	p.Status.Progress = &metav1alpha1.Progress{Done: done, Message: fmt.Sprintf("%d instances so far, at %s", done, cl.Ident())}
	return true, r.saveProgress(p, cur, result, "")
}

// importChunk creates or updates one chunk of a bundle's items.
func (r *WorkflowProcessReconciler) importChunk(ctx context.Context, p *metav1alpha1.WorkflowProcess, w *catalog.Workflow,
	snap *catalog.Snapshot, in builtinInput, cur cursor, now metav1.Time) (bool, error) {
	if in.Bundle == nil {
		return false, r.finish(p, w, workflow.Fail, "the input needs a bundle with items", nil, now)
	}
	result := map[string]any{}
	if p.Status.Result != nil {
		_ = json.Unmarshal(p.Status.Result.Raw, &result)
	}
	items := in.Bundle.Items
	end := min(cur.Item+chunk, len(items))
	for i := cur.Item; i < end; i++ {
		outcome, err := r.importItem(ctx, p, snap, items[i])
		if err != nil {
			result["failed"] = num(result["failed"]) + 1
			appendCapped(result, "errors", map[string]any{"index": i, "name": items[i].Name, "error": err.Error()})
			continue
		}
		result[outcome] = num(result[outcome]) + 1
	}
	cur.Item = end
	p.Status.Progress = &metav1alpha1.Progress{Done: int64(end), Total: int64(len(items)), Message: fmt.Sprintf("%d of %d items", end, len(items))}
	if end >= len(items) {
		for _, k := range []string{"created", "updated", "unchanged", "failed"} {
			result[k] = num(result[k])
		}
		return false, r.finish(p, w, workflow.Succeed, summary(workflow.Import, result), result, now)
	}
	return true, r.saveProgress(p, cur, result, "")
}

// importItem creates or updates one item. An instance it writes carries the process
// and what it did in an annotation, so that a chunk done again (its status write
// lost to a conflict) counts the item as it did the first time, not as unchanged.
func (r *WorkflowProcessReconciler) importItem(ctx context.Context, p *metav1alpha1.WorkflowProcess, snap *catalog.Snapshot, item bundleItem) (string, error) {
	ns, by := p.Namespace, p.Namespace+"/"+p.Name
	cl := snap.FindClass(item.Class)
	if cl == nil || !cl.Servable() {
		return "", fmt.Errorf("class %q cannot take instances", item.Class)
	}
	attrs, name := item.Attributes, item.Name
	if item.Source != "" {
		doc, err := codec.DecodeMarkdown(cl, item.Source)
		if err != nil {
			return "", err
		}
		attrs = doc.Attributes
		if n, ok := doc.Metadata["name"].(string); ok && name == "" {
			name = n
		}
	}
	if name == "" {
		return "", fmt.Errorf("an item needs a name")
	}
	spec, problems := catalog.Coerce(cl, attrs)
	if len(problems) > 0 {
		return "", fmt.Errorf("%v", problems)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cl.GVK())
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	switch {
	case apierrors.IsNotFound(err):
		u = &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(cl.GVK())
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetAnnotations(map[string]string{metav1alpha1.AnnotationImportedBy: by + " created"})
		return "created", r.Create(ctx, u)
	case err != nil:
		return "", err
	}
	current, _ := u.Object["spec"].(map[string]any)
	if normalized(current) == normalized(spec) {
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
	return "updated", r.Update(ctx, u)
}

func normalized(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (r *WorkflowProcessReconciler) saveProgress(p *metav1alpha1.WorkflowProcess, cur cursor, result map[string]any, msg string) error {
	b, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	p.Status.Cursor = string(b)
	if result != nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return err
		}
		p.Status.Result = &apiextensionsv1.JSON{Raw: raw}
	}
	if msg != "" && p.Status.Progress != nil {
		p.Status.Progress.Message = msg
	}
	return nil
}

// finish ends a built-in workflow with its result.
func (r *WorkflowProcessReconciler) finish(p *metav1alpha1.WorkflowProcess, w *catalog.Workflow, transition, reason string, result map[string]any, now metav1.Time) error {
	if result != nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return err
		}
		p.Status.Result = &apiextensionsv1.JSON{Raw: raw}
	}
	p.Status.Cursor = ""
	return workflow.Transition(w, &p.Status, transition, "sandbar", reason, now)
}

func summary(definition string, result map[string]any) string {
	switch definition {
	case workflow.Validate:
		return fmt.Sprintf("checked %d instances, %d invalid", int(num(result["checked"])), int(num(result["invalid"])))
	case workflow.Export:
		items, _ := result["items"].([]any)
		return fmt.Sprintf("exported %d instances", len(items))
	default:
		return fmt.Sprintf("created %d, updated %d, unchanged %d, failed %d", int(num(result["created"])),
			int(num(result["updated"])), int(num(result["unchanged"])), int(num(result["failed"])))
	}
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func appendCapped(result map[string]any, key string, v any) {
	list, _ := result[key].([]any)
	if len(list) < maxRecorded {
		result[key] = append(list, v)
	}
}

func orJSON(f string) string {
	if f == "" {
		return string(metav1alpha1.CodecJSON)
	}
	return f
}
