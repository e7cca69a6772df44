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
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/apikey"
)

// Prefix meta would generate instance APIs in meta.sandbar.dev, the metamodel's own
// group (a Class of kind ServiceAccount would claim serviceaccounts.meta.sandbar.dev).
// The API server refuses such a Class, and nothing is generated.
func TestPrefixMetaIsRefusedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, kind := range []string{"ServiceAccount", uniq("Widget")} {
		c := class(uniq("meta.")+"x", "meta", kind, nil)
		err := k8s.Create(ctx, c)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		// The API server quotes the value ("meta"); 1.30's quotes the rule's type
		// ("string").
		g.Expect(err).To(MatchError(MatchRegexp(
			`spec.prefix: Invalid value: "(meta|string)": prefix meta is reserved: it would name the API group meta.sandbar.dev`)))
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c), &metav1alpha1.Class{}))).To(BeTrue())
	}
	// The metamodel's own CRD is as the chart installed it.
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "serviceaccounts.meta.sandbar.dev"}, &crd)).To(Succeed())
	g.Expect(crd.Labels).NotTo(HaveKey(metav1alpha1.LabelClass))
	// A prefix that merely starts with meta is a prefix like any other.
	create(t, class(uniq("metal.")+"x", uniq("metal"), "Ingot", nil))
}

// create-key (apikey.Issue) is pointed, through a ServiceAccount's apiKeySecretRef, at
// a Secret that is not an API key Secret: a TLS certificate. It refuses, naming the
// Secret and the label, and the Secret is unchanged.
func TestCreateKeyRefusesToOverwriteAForeignSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := uniq("cert")
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": []byte("certificate"), "tls.key": []byte("private key")},
	}
	sa := &metav1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: metav1alpha1.ServiceAccountSpec{ServiceName: name,
			APIKeySecretRef: metav1alpha1.SecretKeyRef{Name: foreign.Name, Key: "tls.key"}},
	}
	create(t, foreign, sa)
	var before corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), &before)).To(Succeed())

	token, err := apikey.Issue(ctx, k8s, "default", name)
	g.Expect(err).To(MatchError(And(
		ContainSubstring("refused to write the key hash into Secret default/"+foreign.Name),
		ContainSubstring("not labelled meta.sandbar.dev/api-key=true"))))
	g.Expect(token).To(BeEmpty())

	var after corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), &after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the Secret was written")
	g.Expect(after.Data).To(Equal(before.Data))
	g.Expect(after.Labels).To(Equal(before.Labels))

	// A labelled Secret, and one that does not exist yet, take a key.
	labelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-key",
		Labels: map[string]string{metav1alpha1.LabelAPIKey: "true"}}}
	create(t, labelled)
	for _, secret := range []string{labelled.Name, name + "-new"} {
		g.Eventually(func() error { // the ServiceAccount reconciler writes its status meanwhile
			var live metav1alpha1.ServiceAccount
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(sa), &live); err != nil {
				return err
			}
			live.Spec.APIKeySecretRef = metav1alpha1.SecretKeyRef{Name: secret}
			return k8s.Update(ctx, &live)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		token, err := apikey.Issue(ctx, k8s, "default", name)
		g.Expect(err).NotTo(HaveOccurred(), secret)
		g.Expect(token).To(HavePrefix("default/"+name+":"), secret)
		var got corev1.Secret
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: secret}, &got)).To(Succeed())
		g.Expect(got.Data).To(And(HaveKey(apikey.DefaultKey), HaveKey(apikey.DefaultIDKey)), secret)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), &got) })
	}
}
