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

package govern

import (
	"slices"
	"testing"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// Which decisions on an Approval count: those of the people its rule names, each
// once, never the caller's; a denial by one of them ends it.
func TestTheDecisionsThatCount(t *testing.T) {
	const caller = "system:serviceaccount:shop:agent"
	approve := func(user string, groups ...string) metav1alpha1.ApprovalDecision {
		return metav1alpha1.ApprovalDecision{Decision: metav1alpha1.DecisionApprove, User: user, Groups: groups, Reason: "ok"}
	}
	deny := func(user string, groups ...string) metav1alpha1.ApprovalDecision {
		return metav1alpha1.ApprovalDecision{Decision: metav1alpha1.DecisionDeny, User: user, Groups: groups, Reason: "no"}
	}
	for _, tc := range []struct {
		name      string
		approvers metav1alpha1.ApproverSet
		decisions []metav1alpha1.ApprovalDecision
		approved  []string
		denied    string
	}{
		{"a member of the group", metav1alpha1.ApproverSet{Groups: []string{"approvers"}}, []metav1alpha1.ApprovalDecision{approve("alice", "approvers")}, []string{"alice"}, ""},
		{"a user named", metav1alpha1.ApproverSet{Users: []string{"alice"}}, []metav1alpha1.ApprovalDecision{approve("alice")}, []string{"alice"}, ""},
		{"the caller, even in the group", metav1alpha1.ApproverSet{Groups: []string{"system:serviceaccounts"}},
			[]metav1alpha1.ApprovalDecision{approve(caller, "system:serviceaccounts")}, nil, ""},
		{"someone the rule does not name", metav1alpha1.ApproverSet{Groups: []string{"approvers"}}, []metav1alpha1.ApprovalDecision{approve("erin", "shoppers")}, nil, ""},
		{"the same person twice counts once", metav1alpha1.ApproverSet{Groups: []string{"approvers"}, Count: 2},
			[]metav1alpha1.ApprovalDecision{approve("alice", "approvers"), approve("alice", "approvers")}, []string{"alice"}, ""},
		{"two people", metav1alpha1.ApproverSet{Groups: []string{"approvers"}, Count: 2},
			[]metav1alpha1.ApprovalDecision{approve("alice", "approvers"), approve("bob", "approvers")}, []string{"alice", "bob"}, ""},
		{"a named person's denial ends it", metav1alpha1.ApproverSet{Groups: []string{"approvers"}},
			[]metav1alpha1.ApprovalDecision{approve("alice", "approvers"), deny("bob", "approvers")}, nil, "bob"},
		{"a denial by someone not named is nothing", metav1alpha1.ApproverSet{Groups: []string{"approvers"}},
			[]metav1alpha1.ApprovalDecision{deny("erin"), approve("alice", "approvers")}, []string{"alice"}, ""},
		{"the caller's denial is nothing", metav1alpha1.ApproverSet{Users: []string{caller, "alice"}},
			[]metav1alpha1.ApprovalDecision{deny(caller), approve("alice")}, []string{"alice"}, ""},
		{"a decision that names no one", metav1alpha1.ApproverSet{Groups: []string{"approvers"}}, []metav1alpha1.ApprovalDecision{approve("", "approvers")}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ap := &metav1alpha1.Approval{Spec: metav1alpha1.ApprovalSpec{Call: metav1alpha1.HeldCall{User: caller}, Approvers: tc.approvers, Decisions: tc.decisions}}
			approved, denied, _ := tally(ap)
			if !slices.Equal(approved, tc.approved) || denied != tc.denied {
				t.Fatalf("approved by %v, denied by %q; want %v, %q", approved, denied, tc.approved, tc.denied)
			}
		})
	}
}
