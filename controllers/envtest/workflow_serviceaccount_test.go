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

package envtest_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

func workflow(name string, states []metav1alpha1.WorkflowState, transitions ...metav1alpha1.WorkflowTransition) *metav1alpha1.WorkflowDefinition {
	return &metav1alpha1.WorkflowDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       metav1alpha1.WorkflowDefinitionSpec{Initial: states[0].Name, States: states, Transitions: transitions},
	}
}

func waitReady[T client.Object](t *testing.T, obj T, conds func(T) []metav1.Condition, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var ready metav1.Condition
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		ready = condition(conds(obj), metav1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(status), "%s: %s", ready.Reason, ready.Message)
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return ready
}

func wdConds(w *metav1alpha1.WorkflowDefinition) []metav1.Condition { return w.Status.Conditions }
func saConds(s *metav1alpha1.ServiceAccount) []metav1.Condition     { return s.Status.Conditions }

func TestWorkflowDefinitionValidation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	states := func(names ...string) []metav1alpha1.WorkflowState {
		var out []metav1alpha1.WorkflowState
		for _, n := range names {
			out = append(out, metav1alpha1.WorkflowState{Name: n})
		}
		out[len(out)-1].Terminal = metav1alpha1.TerminalSuccess
		return out
	}

	// Rules on the object itself are enforced by the API server.
	dup := workflow(uniq("wf"), states("open", "open", "done"))
	g.Expect(k8s.Create(ctx, dup)).To(MatchError(ContainSubstring("spec.states[1]: Duplicate value")))
	noTerminal := workflow(uniq("wf"), states("open", "done"))
	noTerminal.Spec.States[1].Terminal = ""
	g.Expect(k8s.Create(ctx, noTerminal)).To(MatchError(ContainSubstring("at least one state must be terminal")))
	badInitial := workflow(uniq("wf"), states("open", "done"))
	badInitial.Spec.Initial = "closed"
	g.Expect(k8s.Create(ctx, badInitial)).To(MatchError(ContainSubstring("initial must name one of the states")))
	badTo := workflow(uniq("wf"), states("open", "done"), metav1alpha1.WorkflowTransition{Name: "go", From: []string{"open"}, To: "nowhere"})
	g.Expect(k8s.Create(ctx, badTo)).To(MatchError(ContainSubstring("every transition's to must name one of the states")))

	// What the rules do not cover, the reconciler reports.
	outOfTerminal := workflow(uniq("wf"), states("open", "done"),
		metav1alpha1.WorkflowTransition{Name: "reopen", From: []string{"done"}, To: "open"})
	create(t, outOfTerminal)
	ready := waitReady(t, outOfTerminal, wdConds, metav1.ConditionFalse, metav1alpha1.ReasonInvalid)
	g.Expect(ready.Message).To(ContainSubstring(`transition "reopen" starts from the terminal state "done"`))
	waitEvent(t, "", outOfTerminal.Name, metav1alpha1.ReasonInvalid)

	// A subject Class that appears later resolves the definition.
	subject := uniq("subj")
	withSubject := workflow(uniq("wf"), states("open", "done"),
		metav1alpha1.WorkflowTransition{Name: "finish", From: []string{"open"}, To: "done"})
	withSubject.Spec.SubjectClass = subject + ".thing"
	create(t, withSubject)
	waitReady(t, withSubject, wdConds, metav1.ConditionFalse, metav1alpha1.ReasonUnknownClass)
	create(t, abstract(class(subject+".thing", subject, "Thing", nil)))
	waitReady(t, withSubject, wdConds, metav1.ConditionTrue, metav1alpha1.ReasonReady)
}

func TestServiceAccountSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := uniq("agent")
	sa := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{
			ServiceName:     name,
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: name + "-key"},
		},
	}
	create(t, sa)
	ready := waitReady(t, sa, saConds, metav1.ConditionFalse, metav1alpha1.ReasonSecretNotFound)
	g.Expect(ready.Message).To(ContainSubstring(name + "-key"))
	waitEvent(t, "default", name, metav1alpha1.ReasonSecretNotFound)

	// A Secret without the label is invisible to the operator, by design.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-key"},
		Data: map[string][]byte{"api-key-hash": []byte("plain-text-key")}}
	create(t, secret)
	waitReady(t, sa, saConds, metav1.ConditionFalse, metav1alpha1.ReasonSecretNotFound)

	// Labelled, but holding a key rather than a hash: refused, without echoing it.
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return err
		}
		secret.Labels = map[string]string{metav1alpha1.LabelAPIKey: "true"}
		return k8s.Update(ctx, secret)
	}).WithTimeout(timeout).Should(Succeed())
	ready = waitReady(t, sa, saConds, metav1.ConditionFalse, metav1alpha1.ReasonInvalidHash)
	g.Expect(ready.Message).NotTo(ContainSubstring("plain-text-key"))

	hash, err := bcrypt.GenerateFromPassword([]byte("a-key"), bcrypt.MinCost)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return err
		}
		secret.Data = map[string][]byte{"api-key-hash": hash}
		return k8s.Update(ctx, secret)
	}).WithTimeout(timeout).Should(Succeed())
	waitReady(t, sa, saConds, metav1.ConditionTrue, metav1alpha1.ReasonReady)

	// Deactivation shows at once.
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sa), sa); err != nil {
			return err
		}
		inactive := false
		sa.Spec.Active = &inactive
		return k8s.Update(ctx, sa)
	}).WithTimeout(timeout).Should(Succeed())
	waitReady(t, sa, saConds, metav1.ConditionFalse, metav1alpha1.ReasonInactive)

	// A second account cannot take the service name.
	twin := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: name},
		Spec:       metav1alpha1.ServiceAccountSpec{ServiceName: name, APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: "x"}},
	}
	create(t, twin)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(twin), twin)).To(Succeed())
		c := condition(twin.Status.Conditions, metav1alpha1.ConditionNameConflict)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(ContainSubstring("default/" + name))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}
