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

package identity

import (
	"context"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

var (
	agent  = &catalog.Account{Namespace: "team", Name: "agent", KubeServiceAccount: "robot"}
	person = &catalog.Account{Namespace: "team", Name: "oauth-ada", User: "oidc:ada", Groups: []string{"oidc:dev"}}
	nobody = &catalog.Account{Namespace: "team", Name: "ghost"}
)

// Each account's client impersonates its Kubernetes identity: a ServiceAccount's
// user (the API server adds its groups), an OAuth person's user with their token's
// groups; one client per identity, made without asking the API server.
func TestClientActsAsTheAccountsKubernetesIdentity(t *testing.T) {
	var made []rest.ImpersonationConfig
	manager := fake.NewClientBuilder().Build()
	ids := New(Connection{
		Config:  &rest.Config{Host: "https://cluster.invalid"},
		Manager: manager,
		NewClient: func(cfg *rest.Config, _ client.Options) (client.Client, error) {
			made = append(made, cfg.Impersonate)
			if cfg.Timeout == 0 {
				t.Errorf("a client without a timeout")
			}
			return fake.NewClientBuilder().Build(), nil
		},
	}, person)

	if _, err := ids.Client(agent); err != nil {
		t.Fatal(err)
	}
	if _, err := ids.Client(agent); err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 || made[0].UserName != "system:serviceaccount:team:robot" || len(made[0].Groups) != 0 {
		t.Fatalf("the ServiceAccount account's clients impersonate %+v, want one as system:serviceaccount:team:robot", made)
	}

	oauth := &catalog.Account{Namespace: "team", Name: "oauth-bo", User: "oidc:bo", Groups: []string{"oidc:ops", "oidc:dev"}}
	if _, err := ids.Client(oauth); err != nil {
		t.Fatal(err)
	}
	if got := made[len(made)-1]; got.UserName != "oidc:bo" || !slices.Equal(got.Groups, oauth.Groups) {
		t.Errorf("the OAuth account's client impersonates %+v", got)
	}

	// The trusted account (no-auth mode) acts with the manager's own client.
	if c, err := ids.Client(person); err != nil || c == nil || len(made) != 2 {
		t.Errorf("the trusted account got a client of its own (%d made): %v", len(made), err)
	}

	_, err := ids.Client(nobody)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "team/ghost has no Kubernetes identity") ||
		!strings.Contains(err.Error(), "--default-service-account") {
		t.Errorf("an account without an identity: %v", err)
	}
}

// Can asks a SubjectAccessReview as the account's user and groups, and refuses in the
// API server's words.
func TestCanAsksAsTheAccountAndRefusesInTheAPIServersWords(t *testing.T) {
	var asked []authorizationv1.SubjectAccessReviewSpec
	manager := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			sar := obj.(*authorizationv1.SubjectAccessReview)
			asked = append(asked, sar.Spec)
			sar.Status.Allowed = sar.Spec.ResourceAttributes.Verb == "get"
			return nil
		},
	}).Build()
	ids := New(Connection{Manager: manager}, nil)
	get := Access{Verb: "get", Group: "zorp.sandbar.dev", Resource: "spaceboots", Namespace: "default", Name: "b1"}
	if err := ids.Can(context.Background(), agent, get); err != nil {
		t.Fatalf("an allowed get: %v", err)
	}
	want := []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}
	if spec := asked[0]; spec.User != "system:serviceaccount:team:robot" || !slices.Equal(spec.Groups, want) ||
		*spec.ResourceAttributes != (authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get",
			Group: "zorp.sandbar.dev", Resource: "spaceboots", Name: "b1"}) {
		t.Errorf("the review asked %+v %+v", spec, spec.ResourceAttributes)
	}

	if err := ids.Can(context.Background(), person, get); err != nil {
		t.Fatal(err)
	}
	if spec := asked[1]; spec.User != "oidc:ada" || !slices.Equal(spec.Groups, []string{"oidc:dev", "system:authenticated"}) {
		t.Errorf("the OAuth person's review asked as %s %v", spec.User, spec.Groups)
	}

	watch := Access{Verb: "watch", Group: "zorp.sandbar.dev", Resource: "spaceboots", Subresource: "status"}
	err := ids.Can(context.Background(), agent, watch)
	if !apierrors.IsForbidden(err) || err.Error() != `spaceboots.zorp.sandbar.dev is forbidden: `+
		`User "system:serviceaccount:team:robot" cannot watch resource "spaceboots/status" in API group "zorp.sandbar.dev" at the cluster scope` {
		t.Errorf("a denied watch: %v", err)
	}
	if err := ids.Can(context.Background(), nobody, get); !apierrors.IsForbidden(err) || len(asked) != 3 {
		t.Errorf("an account without an identity was asked for (%d reviews): %v", len(asked), err)
	}
}
