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

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Validate checks every instance of a class (subclasses included) against the
// class's current slots.
const Validate = "sandbar.validate-instances"

// ValidateInput is the input of Validate.
type ValidateInput struct {
	// Class is the class to check, as prefix/Kind (zorp/SpaceBoot).
	Class string `json:"class,omitempty"`
}

var validateJob = newJob(Validate, "sandbar.validation.start",
	"Validates every instance of a class and its subclasses against the class's current slots, and checks that every reference names an existing instance, recording each failure.",
	validate,
	func(r Result) string {
		s := fmt.Sprintf("checked %d instances, %d invalid", r.count("checked"), r.count("invalid"))
		if n := r.count("danglingRefs"); n > 0 {
			s += fmt.Sprintf(" (%d references to missing instances)", n)
		}
		return s
	})

func validate(ctx context.Context, env Env, in ValidateInput, run *Run) (bool, error) {
	classes, err := classesOf(env.Snapshot, in.Class, false)
	if err != nil {
		return false, err
	}
	r := run.Result
	r["checked"], r["invalid"] = r.num("checked"), r.num("invalid")
	return scan(ctx, env, run, classes, func(cl *catalog.Class, u *unstructured.Unstructured, spec map[string]any) error {
		r["checked"] = r.num("checked") + 1
		_, problems := catalog.Coerce(cl, spec)
		missing, err := MissingRefs(ctx, env.Client, env.Snapshot, env.Namespace, cl, spec)
		switch {
		case apierrors.IsForbidden(err):
			problems = append(problems, "its references could not be checked: "+err.Error())
		case err != nil:
			return err
		}
		for _, m := range missing {
			problems = append(problems, m.Problem())
		}
		if len(missing) > 0 {
			r["danglingRefs"] = r.num("danglingRefs") + float64(len(missing))
		}
		if len(problems) > 0 {
			r["invalid"] = r.num("invalid") + 1
			r.appendCapped("failures", map[string]any{"class": cl.Ident(), "name": u.GetName(), "problems": problems})
		}
		return nil
	})
}
