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

package policy

import (
	"fmt"
	"testing"
	"time"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// BenchmarkDecideTenPolicies matches a read against ten policies of two rules each
// (over its arguments and identity, none of which applies: every rule runs) and
// decides it, as the gate does for a call within the estimate's sizes.
func BenchmarkDecideTenPolicies(b *testing.B) { decideTen(b, false) }

// BenchmarkDecideTenPoliciesBaseline is the same with every rule's cost counted as
// it runs, as the API server's environment evaluates (and as a call bigger than
// the estimate's sizes is decided).
func BenchmarkDecideTenPoliciesBaseline(b *testing.B) { decideTen(b, true) }

func decideTen(b *testing.B, counted bool) {
	var ps []*Policy
	for i := range 10 {
		ps = append(ps, Compile("", fmt.Sprintf("bench-%d", i), 1, metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Classes: []string{"zorp/Footwear"}, Accounts: []string{"default/*"}},
			Rules: []metav1alpha1.CallRule{
				{Name: "price", Action: metav1alpha1.ActionDeny, Expression: "has(call.attributes.price) && call.attributes.price > 1000000"},
				{Name: "who", Action: metav1alpha1.ActionDeny, Expression: "identity.user == 'nobody' || 'blocked' in identity.groups"},
			}}))
	}
	set := NewSet(ps)
	c := &Call{Tool: "sandbar_class_describe", Canonical: "sandbar.class.describe", Verb: VerbRead, Class: "zorp/SpaceBoot",
		Classes: []string{"zorp/SpaceBoot", "zorp/Footwear"}, Namespace: "default",
		Arguments: map[string]any{"class": "zorp/SpaceBoot"}, Attributes: map[string]any{"price": 12.0}}
	id := &Identity{Account: "default/suite", User: "system:serviceaccount:default:suite", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	req := Request{Revision: "2025-11-25", Time: time.Now()}
	forceCounted = counted
	defer func() { forceCounted = false }()
	b.ReportAllocs()
	for b.Loop() {
		if d := Decide(set.Matching(c, id), c, id, req); len(d.Matched) != 10 || len(d.Outcomes) != 0 {
			b.Fatalf("matched %d, outcomes %+v", len(d.Matched), d.Outcomes)
		}
	}
}
