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
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

func TestCompileRefusesBrokenPoliciesWhole(t *testing.T) {
	good := metav1alpha1.CallRule{Name: "ok", Expression: "call.verb == 'delete'", Action: metav1alpha1.ActionDeny}
	for _, tc := range []struct {
		name   string
		rules  []metav1alpha1.CallRule
		sel    *metav1.LabelSelector
		reason string
		says   string
	}{
		{name: "syntax", rules: []metav1alpha1.CallRule{good, {Name: "bad", Expression: "call.verb ==", Action: metav1alpha1.ActionDeny}},
			reason: metav1alpha1.ReasonCompileError, says: "rules[1] (bad)"},
		{name: "not a bool", rules: []metav1alpha1.CallRule{{Name: "str", Expression: "'yes'", Action: metav1alpha1.ActionDeny}},
			reason: metav1alpha1.ReasonCompileError, says: "not a bool"},
		{name: "unknown variable", rules: []metav1alpha1.CallRule{{Name: "obj", Expression: "object.spec.total > 1", Action: metav1alpha1.ActionDeny}},
			reason: metav1alpha1.ReasonCompileError, says: "undeclared reference"},
		{name: "too costly", rules: []metav1alpha1.CallRule{{Name: "nested", Action: metav1alpha1.ActionDeny,
			Expression: "call.arguments.items.all(a, call.arguments.items.all(b, a != b))"}},
			reason: metav1alpha1.ReasonTooCostly, says: "worst-case cost"},
		{name: "unknown action", rules: []metav1alpha1.CallRule{{Name: "x", Action: "Allow"}},
			reason: metav1alpha1.ReasonCompileError, says: "unknown action"},
		{name: "no rules", reason: metav1alpha1.ReasonCompileError, says: "no rules"},
		{name: "an approval nobody gives", rules: []metav1alpha1.CallRule{{Name: "held", Action: metav1alpha1.ActionRequireApproval}},
			reason: metav1alpha1.ReasonCompileError, says: "needs approval"},
		{name: "an approval of no one", rules: []metav1alpha1.CallRule{{Name: "held", Action: metav1alpha1.ActionRequireApproval,
			Approval: &metav1alpha1.ApprovalRequirement{}}}, reason: metav1alpha1.ReasonCompileError, says: "nobody could approve"},
		{name: "a wait too long", rules: []metav1alpha1.CallRule{{Name: "held", Action: metav1alpha1.ActionRequireApproval,
			Approval: &metav1alpha1.ApprovalRequirement{ApproverSet: metav1alpha1.ApproverSet{Groups: []string{"approvers"}},
				ExpiresAfter: &metav1.Duration{Duration: MaxApprovalWait + 1}}}}, reason: metav1alpha1.ReasonCompileError, says: "expiresAfter"},
		{name: "an approval on a Deny", rules: []metav1alpha1.CallRule{{Name: "deny", Action: metav1alpha1.ActionDeny,
			Approval: &metav1alpha1.ApprovalRequirement{ApproverSet: metav1alpha1.ApproverSet{Groups: []string{"approvers"}}}}},
			reason: metav1alpha1.ReasonCompileError, says: "is for a RequireApproval rule"},
		{name: "bad selector", rules: []metav1alpha1.CallRule{good},
			sel:    &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}},
			reason: metav1alpha1.ReasonCompileError, says: "namespaceSelector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compile("", "p", 1, metav1alpha1.CallPolicySpec{Rules: tc.rules, Match: metav1alpha1.CallMatch{NamespaceSelector: tc.sel}})
			if p.Err == nil || p.Reason != tc.reason || !strings.Contains(p.Err.Error(), tc.says) {
				t.Fatalf("Err %v, reason %q: want %s saying %q", p.Err, p.Reason, tc.reason, tc.says)
			}
			if len(p.rules) != 0 {
				t.Fatalf("%d rules compiled: a broken policy applies none", len(p.rules))
			}
		})
	}
	if p := Compile("", "p", 1, metav1alpha1.CallPolicySpec{Rules: []metav1alpha1.CallRule{good,
		{Name: "bounded", Action: metav1alpha1.ActionAudit, Expression: "size(call.arguments.items) < 100 && call.arguments.items.exists(i, i.class == 'order/Order')"}}}); p.Err != nil {
		t.Fatalf("a policy within the limits: %v", p.Err)
	}
}

func TestMatchAndDecide(t *testing.T) {
	order := &Call{Tool: "sandbar_class_order_Order", Canonical: "sandbar.class.order.Order", Verb: VerbCreate,
		Class: "order/Order", Classes: []string{"order/Order", "order/Document"}, Namespace: "shop",
		NamespaceLabels: map[string]string{"env": "prod"},
		Attributes:      map[string]any{"total": 12000.0, "status": "new"}}
	small := *order
	small.Attributes = map[string]any{"total": 10.0}
	del := &Call{Tool: "sandbar_entity_delete", Canonical: "sandbar.entity.delete", Verb: VerbDelete, Class: "order/Order",
		Classes: []string{"order/Order"}, Namespace: "shop", NamespaceLabels: map[string]string{"env": "prod"}, Name: "o1",
		Object: map[string]any{"spec": map[string]any{"total": 5}}}
	agent := &Identity{Account: "shop/agent", User: "system:serviceaccount:shop:agent", Groups: []string{"system:serviceaccounts"}, Client: "claude-code"}
	person := &Identity{Account: "default/oauth_x", User: "oidc:alice", Groups: []string{"oidc:approvers"}}
	req := Request{Revision: "2025-11-25", Time: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}

	limit := metav1alpha1.CallPolicySpec{Match: metav1alpha1.CallMatch{Classes: []string{"order/Document"}, Verbs: []string{"create", "update"}},
		Rules: []metav1alpha1.CallRule{{Name: "over-limit", Expression: "has(call.attributes.total) && call.attributes.total > 10000",
			Action: metav1alpha1.ActionDeny, Message: "orders over 10,000 need a person"}}}
	prod := metav1alpha1.CallPolicySpec{Match: metav1alpha1.CallMatch{Verbs: []string{"delete"},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		Rules: []metav1alpha1.CallRule{{Name: "no-prod-delete", Action: metav1alpha1.ActionDeny, Message: "no delete in prod"}}}
	// costly's worst case is within the limit of one expression over the sizes the
	// estimate assumes; a prefix of 100,000 bytes takes it far over.
	costly := metav1alpha1.CallPolicySpec{Rules: []metav1alpha1.CallRule{{Name: "prefix", Action: metav1alpha1.ActionAudit,
		Expression: "call.arguments.items.all(a, !string(a).startsWith(call.arguments.prefix))"}}}
	withPrefix := func(c *Call, n int) *Call {
		items := make([]any, estimateSize)
		for i := range items {
			items[i] = "y"
		}
		big := *c
		big.Arguments = map[string]any{"items": items, "prefix": strings.Repeat("x", n)}
		return &big
	}
	for _, tc := range []struct {
		name    string
		policy  *Policy
		call    *Call
		id      *Identity
		matches bool
		denies  string // the rule, "" for none
		actions []string
	}{
		{"a big order is denied, on its superclass's policy", Compile("", "limit", 1, limit), order, agent, true, "over-limit", []string{"Deny"}},
		{"a small one passes", Compile("", "limit", 1, limit), &small, agent, true, "", nil},
		{"a delete does not match a create policy", Compile("", "limit", 1, limit), del, agent, false, "", nil},
		{"nor may a read", Compile("", "limit", 1, limit), &Call{Tool: "sandbar_class_describe", Canonical: "sandbar.class.describe", Verb: VerbRead}, agent, false, "", nil},
		{"no delete in prod", Compile("", "prod", 1, prod), del, agent, true, "no-prod-delete", []string{"Deny"}},
		{"a create in prod passes the delete policy", Compile("", "prod", 1, prod), order, agent, false, "", nil},
		{"audit enforcement records and lets it run", Compile("", "limit", 1, func() metav1alpha1.CallPolicySpec {
			s := limit
			s.Enforcement = metav1alpha1.EnforcementAudit
			return s
		}()), order, agent, true, "", []string{"Deny"}},
		{"a CallPolicy governs its own namespace only", Compile("other", "limit", 1, limit), order, agent, false, "", nil},
		{"a CallPolicy in the call's namespace", Compile("shop", "limit", 1, limit), order, agent, true, "over-limit", []string{"Deny"}},
		{"match by group", Compile("", "g", 1, metav1alpha1.CallPolicySpec{Match: metav1alpha1.CallMatch{Groups: []string{"oidc:approvers"}},
			Rules: []metav1alpha1.CallRule{{Name: "audit-all", Action: metav1alpha1.ActionAudit}}}), order, person, true, "", []string{"Audit"}},
		{"an account glob that does not match", Compile("", "a", 1, metav1alpha1.CallPolicySpec{Match: metav1alpha1.CallMatch{Accounts: []string{"team-*/*"}},
			Rules: []metav1alpha1.CallRule{{Name: "all", Action: metav1alpha1.ActionDeny}}}), order, agent, false, "", nil},
		{"a tool glob over the dotted name", Compile("", "t", 1, metav1alpha1.CallPolicySpec{Match: metav1alpha1.CallMatch{Tools: []string{"sandbar.class.order.*"}},
			Rules: []metav1alpha1.CallRule{{Name: "all", Action: metav1alpha1.ActionDeny}}}), order, agent, true, "all", []string{"Deny"}},
		{"identity, request and the stored object", Compile("", "i", 1, metav1alpha1.CallPolicySpec{
			Rules: []metav1alpha1.CallRule{{Name: "who", Action: metav1alpha1.ActionDeny,
				Expression: "identity.client == 'claude-code' && request.time.getHours() == 12 && call.object.spec.total == 5 && 'system:serviceaccounts' in identity.groups"}}}),
			del, agent, true, "who", []string{"Deny"}},
		{"a rule that fails at run time fails closed", Compile("", "f", 1, metav1alpha1.CallPolicySpec{
			Rules: []metav1alpha1.CallRule{{Name: "missing", Action: metav1alpha1.ActionAudit, Expression: "call.attributes.nothing > 1"}}}),
			order, agent, true, "", []string{"Deny"}},
		{"or open, with failurePolicy Ignore", Compile("", "f", 1, metav1alpha1.CallPolicySpec{FailurePolicy: metav1alpha1.FailurePolicyIgnore,
			Rules: []metav1alpha1.CallRule{{Name: "missing", Action: metav1alpha1.ActionDeny, Expression: "call.attributes.nothing > 1"}}}),
			order, agent, true, "", []string{"Audit"}},
		{"a held call, and a deny after it still denies", Compile("", "h", 1, metav1alpha1.CallPolicySpec{
			Rules: []metav1alpha1.CallRule{
				{Name: "held", Action: metav1alpha1.ActionRequireApproval, Approval: &metav1alpha1.ApprovalRequirement{ApproverSet: metav1alpha1.ApproverSet{Groups: []string{"approvers"}}}},
				{Name: "never", Action: metav1alpha1.ActionDeny, Expression: "call.attributes.total > 100000"}}}),
			order, agent, true, "", []string{"RequireApproval"}},
		{"a call within the estimate's sizes, evaluated uncounted", Compile("", "c", 1, costly), withPrefix(order, 1000), agent, true, "", []string{"Audit"}},
		{"a bigger one is counted, and stopped at the API server's limit", Compile("", "c", 1, costly), withPrefix(order, 100_000), agent, true, "", []string{"Deny"}},
		{"a broken policy denies what it matches", Compile("", "b", 1, metav1alpha1.CallPolicySpec{
			Rules: []metav1alpha1.CallRule{{Name: "x", Action: metav1alpha1.ActionAudit, Expression: "call.("}}}),
			order, agent, true, "", []string{"Deny"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := NewSet([]*Policy{tc.policy})
			m := set.Matching(tc.call, tc.id)
			if (len(m) == 1) != tc.matches {
				t.Fatalf("matched %d policies, want match %v", len(m), tc.matches)
			}
			// The gate reads no further a call that MayMatch rules out.
			if may := set.MayMatch(tc.call.Tool, tc.call.Canonical, tc.call.Verb); tc.matches && !may {
				t.Fatalf("MayMatch rules out a call the policy matches")
			} else if !set.MayMatch(tc.call.Tool, tc.call.Canonical, "") && len(tc.policy.Spec.Match.Tools) == 0 {
				t.Fatalf("MayMatch rules out a call of any verb, which no tools match narrows")
			}
			d := Decide(m, tc.call, tc.id, req)
			var actions []string
			for _, o := range d.Outcomes {
				actions = append(actions, o.Action)
			}
			if strings.Join(actions, ",") != strings.Join(tc.actions, ",") {
				t.Fatalf("actions %v, want %v (%+v)", actions, tc.actions, d.Outcomes)
			}
			if h, held := d.Hold(); held != strings.Contains(strings.Join(actions, ","), "RequireApproval") || (held && h.Rule != "held") {
				t.Fatalf("Hold = %v %+v", held, h)
			}
			o, denied := d.Denial()
			switch {
			case tc.denies == "" && denied && tc.policy.Err == nil && o.Err == nil:
				t.Fatalf("denied by %s: %s", o.Rule, o.Text())
			case tc.denies != "" && (!denied || o.Rule != tc.denies):
				t.Fatalf("not denied by %s (%+v)", tc.denies, d.Outcomes)
			case denied && !strings.Contains(o.Text(), tc.policy.Key()):
				t.Fatalf("the denial does not name the policy: %s", o.Text())
			}
		})
	}
}

// The uncounted programs are planned in an environment of the API server's
// functions without its program options: every library the API server's base
// has must give them the same answer as the counted ones.
func TestUncountedProgramsAgreeWithCountedOnes(t *testing.T) {
	vars := map[string]any{
		"call": map[string]any{"attributes": map[string]any{"cpu": "500m", "addr": "10.0.0.7", "url": "https://example.com/a?b=c",
			"tags": []any{"b", "a", "b"}, "name": "Order-7", "version": "1.2.3", "n": 7.0}},
		"identity": map[string]any{"groups": []any{"ops", "dev"}},
		"request":  map[string]any{"time": time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)},
	}
	for _, expr := range []string{
		"quantity(call.attributes.cpu).isLessThan(quantity('1'))",
		"ip(call.attributes.addr).family() == 4 && cidr('10.0.0.0/8').containsIP(call.attributes.addr)",
		"url(call.attributes.url).getHost() == 'example.com' && url(call.attributes.url).getQuery()['b'] == ['c']",
		"call.attributes.name.find('[0-9]+') == '7' && call.attributes.name.findAll('[A-Z]') == ['O']",
		"call.attributes.name.matches('^Order-[0-9]+$') && call.attributes.name.lowerAscii().startsWith('order')",
		"sets.contains(identity.groups, ['ops']) && !sets.intersects(identity.groups, ['admin'])",
		"call.attributes.tags.distinct() == ['b', 'a'] && call.attributes.tags.sortBy(x, x)[0] == 'a' && !call.attributes.tags.isSorted()",
		"call.attributes.tags.all(i, v, i < 3 && v != 'z') && call.attributes.tags.transformList(i, v, v + 'x')[0] == 'bx'",
		"isSemver(call.attributes.version) && semver(call.attributes.version).isGreaterThan(semver('1.0.0'))",
		"format.dns1123Label().validate(call.attributes.name).hasValue() && call.attributes.name.split('-').size() == 2",
		"'%s is %d'.format([call.attributes.name, int(call.attributes.n)]) == 'Order-7 is 7' && request.time.getHours() == 12",
		"[1, 2, 3].indexOf(2) == 1 && [3, 1].min() == 1 && call.attributes.tags.lastIndexOf('b') == 2",
	} {
		t.Run(expr, func(t *testing.T) {
			ast, iss := env.Compile(expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			counted, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			fast, err := fastEnv.Program(ast, fastOptions...)
			if err != nil {
				t.Fatal(err)
			}
			want, _, werr := counted.Eval(vars)
			got, _, gerr := fast.Eval(vars)
			if werr != nil || want != types.True {
				t.Fatalf("counted: %v %v: the expression is meant to hold", want, werr)
			}
			if gerr != nil || got != want {
				t.Fatalf("uncounted: %v %v, counted: %v", got, gerr, want)
			}
		})
	}
}
