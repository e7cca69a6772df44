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

package mcpserver_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// A platform team applies call policies as it applies anything else, and sees
// what they do with kubectl: a policy that compiles is Ready and governs the calls
// it matches (a ClusterCallPolicy over a class, a CallPolicy over the namespaces
// its selector names), one under Audit enforcement counts what it would refuse and
// refuses nothing, and a broken one is Ready=False with the CEL error and refuses
// what it matches (failurePolicy Fail). The counts and the last decision reach
// each policy's status.
func TestCallPoliciesFromTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := unique("governed")
	_, tok := newAccount(t, name, metav1alpha1.Permissions{Tools: []string{"*", "sandbar_entity_delete"}})
	who := []string{"default/" + name} // only this test's account: the suite's others run beside it

	limit := &metav1alpha1.ClusterCallPolicy{ObjectMeta: metav1.ObjectMeta{Name: unique("price-limit")},
		Spec: metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Accounts: who, Classes: []string{"zorp/Footwear"}},
			Rules: []metav1alpha1.CallRule{{Name: "over-limit", Action: metav1alpha1.ActionDeny, Message: "footwear over 1000 needs a person",
				Expression: "has(call.attributes.price) && call.attributes.price > 1000"}}}}
	prod := &metav1alpha1.CallPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: unique("no-delete")},
		Spec: metav1alpha1.CallPolicySpec{Enforcement: metav1alpha1.EnforcementAudit,
			Match: metav1alpha1.CallMatch{Accounts: who, Verbs: []string{"delete"},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "default"}}},
			Rules: []metav1alpha1.CallRule{{Name: "no-delete", Action: metav1alpha1.ActionDeny, Message: "no delete here"}}}}
	broken := &metav1alpha1.ClusterCallPolicy{ObjectMeta: metav1.ObjectMeta{Name: unique("broken")},
		Spec: metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Accounts: who, Tools: []string{"sandbar_entity_validate"}},
			Rules: []metav1alpha1.CallRule{{Name: "typo", Action: metav1alpha1.ActionAudit, Expression: "call.attributes.price >"}}}}
	for _, o := range []client.Object{limit, prod, broken} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	ready := func(o client.Object, conds *[]metav1.Condition) func(Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			c := meta.FindStatusCondition(*conds, metav1alpha1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			return c
		}
	}
	g.Eventually(ready(limit, &limit.Status.Conditions)).WithTimeout(timeout).WithPolling(poll).Should(HaveField("Status", metav1.ConditionTrue))
	g.Eventually(ready(prod, &prod.Status.Conditions)).WithTimeout(timeout).WithPolling(poll).Should(HaveField("Status", metav1.ConditionTrue))
	g.Eventually(ready(broken, &broken.Status.Conditions)).WithTimeout(timeout).WithPolling(poll).Should(HaveField("Status", metav1.ConditionFalse))
	c := ready(broken, &broken.Status.Conditions)(g)
	g.Expect(c.Reason).To(Equal(metav1alpha1.ReasonCompileError))
	g.Expect(c.Message).To(And(ContainSubstring("rules[0] (typo)"), ContainSubstring("Syntax error"), ContainSubstring("refused (failurePolicy Fail)")))

	cs := connect(t, mcpURL, tok, nil)
	boot := unique("boot")
	// The compiled set reaches the server with the informer's event; the call is
	// tried until it does, as a client would retry after applying a policy.
	var refusal string
	g.Eventually(func() string {
		res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Big", "price": 5000, "metadata": map[string]any{"name": boot}})
		refusal = text(res)
		return refusal
	}).WithTimeout(timeout).WithPolling(poll).Should(HavePrefix("forbidden: denied by ClusterCallPolicy " + limit.Name + ", rule over-limit: footwear over 1000 needs a person"))
	res := callTool(t, cs, "sandbar_class_zorp_SpaceBoot", map[string]any{"name": "Small", "price": 5, "metadata": map[string]any{"name": boot}})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	res = callTool(t, cs, "sandbar_entity_validate", map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "x"}})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(And(ContainSubstring("ClusterCallPolicy "+broken.Name), ContainSubstring("cannot be applied (failurePolicy Fail)")))
	// Under Audit, the delete runs, and the policy counts what it would have done.
	res = callTool(t, cs, "sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": boot, "confirm": true})
	g.Expect(res.IsError).To(BeFalse(), text(res))

	g.Eventually(func(g Gomega) metav1alpha1.CallPolicyStatus {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(limit), limit)).To(Succeed())
		return limit.Status
	}).WithTimeout(timeout).WithPolling(poll).Should(And(HaveField("Matched", BeNumerically(">=", 2)), HaveField("Denied", BeNumerically(">=", 1)),
		HaveField("LastDecision.Rule", "over-limit"), HaveField("LastDecision.Identity", "default/"+name)))
	g.Eventually(func(g Gomega) metav1alpha1.CallPolicyStatus {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
		return prod.Status
	}).WithTimeout(timeout).WithPolling(poll).Should(And(HaveField("Matched", int64(1)), HaveField("Denied", int64(1)), HaveField("Audited", int64(1))))
}
