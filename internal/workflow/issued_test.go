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

package workflow

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

func TestOnlyTheProcessAManagerIssuedAsItWasIsIssued(t *testing.T) {
	key := []byte("a key every replica shares, 32 bytes or more")
	issued := func() *metav1alpha1.WorkflowProcess {
		p := &metav1alpha1.WorkflowProcess{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "task-abc", UID: "u1", Generation: 1},
			Spec: metav1alpha1.WorkflowProcessSpec{Definition: "sandbar.export", Owner: "agent",
				Input: &apiextensionsv1.JSON{Raw: []byte(`{"class": "zorp/SpaceBoot", "note": "<b>"}`)}}}
		NewIssuer(key).Issue(p)
		return p
	}
	for _, tc := range []struct {
		name   string
		change func(p *metav1alpha1.WorkflowProcess)
		issuer *Issuer
		want   bool
	}{
		{"as issued", func(*metav1alpha1.WorkflowProcess) {}, NewIssuer(key), true},
		{"its input as the API server spells it", func(p *metav1alpha1.WorkflowProcess) {
			p.Spec.Input.Raw = []byte(`{"note":"\u003cb\u003e","class":"zorp/SpaceBoot"}`)
		}, NewIssuer(key), true},
		{"without the seal", func(p *metav1alpha1.WorkflowProcess) { delete(p.Annotations, metav1alpha1.AnnotationIssued) }, NewIssuer(key), false},
		{"another owner", func(p *metav1alpha1.WorkflowProcess) { p.Spec.Owner = "oauth_alice" }, NewIssuer(key), false},
		{"another input", func(p *metav1alpha1.WorkflowProcess) { p.Spec.Input.Raw = []byte(`{"class":"zorp/Wearer"}`) }, NewIssuer(key), false},
		{"another definition", func(p *metav1alpha1.WorkflowProcess) { p.Spec.Definition = "sandbar.import" }, NewIssuer(key), false},
		{"the seal copied to another name", func(p *metav1alpha1.WorkflowProcess) { p.Name = "task-xyz" }, NewIssuer(key), false},
		{"another namespace", func(p *metav1alpha1.WorkflowProcess) { p.Namespace = "team-b" }, NewIssuer(key), false},
		{"a subject added", func(p *metav1alpha1.WorkflowProcess) {
			p.Spec.Subject = &metav1alpha1.SubjectRef{Class: "zorp/SpaceBoot", Name: "b"}
		}, NewIssuer(key), false},
		{"another key", func(*metav1alpha1.WorkflowProcess) {}, NewIssuer([]byte("another key of 32 bytes or more, not shared")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := issued()
			tc.change(p)
			p.Generation++ // a change of spec is another generation
			if got := tc.issuer.Issued(p); got != tc.want {
				t.Fatalf("Issued = %v, want %v", got, tc.want)
			}
		})
	}
}
