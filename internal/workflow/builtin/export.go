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
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/codec"
)

// Export writes the instances of a class (or of all classes) as a bundle.
const Export = "sandbar.export"

// ExportInput is the input of Export.
type ExportInput struct {
	// Class is the class to export with its subclasses, as prefix/Kind; all classes
	// when empty.
	Class string `json:"class,omitempty" jsonschema:"The class whose instances (and its subclasses') to export; all classes without it."`
	// Format is json (attributes) or markdown (documents); json when empty.
	Format string `json:"format,omitempty" jsonschema:"json (attributes) or markdown (documents); default json."`
}

// exportPage is how many instances one step of an export reads and stores.
const exportPage = 500

var exportJob = newJob(Export, "sandbar.project.export",
	"Exports the instances of a class, or of all classes, as a bundle in json or markdown.",
	export,
	func(r Result) string {
		return fmt.Sprintf("exported %d instances", r.count("count"))
	})

// export stores each page of instances as chunks (see ResultStore) before its
// cursor moves on; the result keeps the format, the count and the chunks' summary.
func export(ctx context.Context, env Env, in ExportInput, run *Run) (bool, error) {
	if env.Results == nil {
		return false, failf("this manager has no store for export results")
	}
	classes, err := classesOf(env.Snapshot, in.Class, true)
	if err != nil {
		return false, err
	}
	r := run.Result
	r["format"] = string(metav1alpha1.CodecJSON)
	if in.Format != "" {
		r["format"] = in.Format
	}
	stored := storedIn(r)
	if cur := &run.Cursor; cur.Continue == "" && cur.Class < len(classes) {
		if cur.Mark != nil && cur.Mark.Class == cur.Class {
			stored.truncate(cur.Mark.Chunks) // the class is scanned again from its start
		} else {
			cur.Mark = &Mark{Class: cur.Class, Chunks: len(stored.Chunks)}
		}
	}
	var items []any
	done, err := scanPages(ctx, env, run, classes, exportPage, func(cl *catalog.Class, u *unstructured.Unstructured, spec map[string]any) error {
		item := map[string]any{"class": cl.Ident(), "name": u.GetName()}
		if in.Format == string(metav1alpha1.CodecMarkdown) {
			md, err := codec.EncodeMarkdown(cl, u.GetName(), spec)
			if err != nil {
				return err
			}
			item["source"] = md
		} else {
			item["attributes"] = spec
		}
		items = append(items, item)
		return nil
	})
	if err != nil {
		return false, err
	}
	if len(items) > 0 {
		chunks, err := env.Results.write(ctx, env.processRef(), stored, items, func(next *Stored) error {
			return withinBudget(env.Budget, r, next)
		})
		if err != nil {
			return false, err
		}
		stored.add(chunks...)
	}
	r["count"] = stored.Count()
	r["stored"] = stored
	if done {
		run.Cursor.Mark = nil
	}
	return done, nil
}

// withinBudget fails an export whose result, with next as the summary of its stored
// items, would hold more than budget (none when 0): the result's JSON and its chunks
// as stored, as its account's byte limit counts them.
func withinBudget(budget int64, r Result, next *Stored) error {
	if budget <= 0 {
		return nil
	}
	after := maps.Clone(r)
	after["count"], after["stored"] = next.Count(), next
	b, err := json.Marshal(after)
	if err != nil {
		return err
	}
	if held := int64(len(b)) + next.StoredBytes; held > budget {
		return failf("the export would hold more than the %s its account had room for when it started (--max-process-bytes-per-account): "+
			"%s so far; nothing more was stored: delete finished processes the account no longer needs (or wait for running "+
			"ones to end) and export again, export one class at a time, or ask an admin to raise the limit", sizeOf(budget), sizeOf(held))
	}
	return nil
}
