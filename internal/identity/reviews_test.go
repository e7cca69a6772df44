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
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// reviewer is an API server that answers SubjectAccessReviews: allowed in the
// namespaces of allow, and counts them.
type reviewer struct {
	allow map[string]bool
	asked int
}

func (r *reviewer) identities() *Identities {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			sar := obj.(*authorizationv1.SubjectAccessReview)
			r.asked++
			sar.Status.Allowed = r.allow[sar.Spec.ResourceAttributes.Namespace]
			return nil
		},
	}).Build()
	return New(Connection{Manager: c}, nil)
}

func listIn(ns string) Access {
	return Access{Verb: "list", Group: "zorp.sandbar.dev", Resource: "wearers", Namespace: ns}
}

// A request asks at most the reviews its count allows; past them Can refuses
// without asking, in words that say what to do; answers kept from before cost
// nothing, and a count inside another stops at the tighter of the two.
func TestCanAsksNoMoreReviewsThanTheRequestMay(t *testing.T) {
	api := &reviewer{allow: map[string]bool{"ns-0": true, "ns-1": true, "ns-2": true}}
	ids := api.identities()
	acct := &catalog.Account{Namespace: "team", Name: "agent", KubeServiceAccount: "agent"}
	asked := testutil.ToFloat64(reviewsAsked.WithLabelValues("allowed")) + testutil.ToFloat64(reviewsAsked.WithLabelValues("denied"))

	ctx, reviews := WithReviews(context.Background(), 3)
	for i := range 3 {
		if err := ids.Can(ctx, acct, listIn(fmt.Sprintf("ns-%d", i))); err != nil {
			t.Fatalf("ns-%d: %v", i, err)
		}
	}
	err := ids.Can(ctx, acct, listIn("ns-3"))
	if !TooManyReviews(err) || apierrors.IsForbidden(err) {
		t.Fatalf("the fourth review of a request allowed three: %v", err)
	}
	if !strings.Contains(err.Error(), "fewer classes and namespaces") {
		t.Errorf("the refusal does not say what to do: %v", err)
	}
	if api.asked != 3 || reviews.Asked() != 3 {
		t.Errorf("asked %d reviews (the count says %d), not 3", api.asked, reviews.Asked())
	}
	if err := ids.Can(ctx, acct, listIn("ns-1")); err != nil {
		t.Errorf("a kept answer: %v", err)
	}
	if api.asked != 3 {
		t.Errorf("a kept answer was asked again")
	}
	now := testutil.ToFloat64(reviewsAsked.WithLabelValues("allowed")) + testutil.ToFloat64(reviewsAsked.WithLabelValues("denied"))
	if now-asked != 3 {
		t.Errorf("%s counted %v reviews, not 3", ReviewsMetric, now-asked)
	}

	// A count inside another: the outer one's limit holds for both.
	outer, o := WithReviews(context.Background(), 2)
	inner, in := WithReviews(outer, 10)
	for i := range 2 {
		if err := ids.Can(inner, acct, listIn(fmt.Sprintf("other-%d", i))); !apierrors.IsForbidden(err) {
			t.Fatalf("other-%d: %v", i, err)
		}
	}
	if err := ids.Can(inner, acct, listIn("other-2")); !TooManyReviews(err) {
		t.Fatalf("past the outer count's limit: %v", err)
	}
	if o.Asked() != 2 || in.Asked() != 2 {
		t.Errorf("the counts say %d and %d, not 2 and 2", o.Asked(), in.Asked())
	}

	// Without a count, nothing is bounded.
	for i := range 40 {
		_ = ids.Can(context.Background(), acct, listIn(fmt.Sprintf("free-%d", i)))
	}
	if api.asked != 3+2+40 {
		t.Errorf("asked %d reviews in all, not 45", api.asked)
	}
}
