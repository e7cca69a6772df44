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
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MaxReviews is the most SubjectAccessReviews one request may ask (WithReviews). What
// a request costs the API server in authorization does not grow with the instances,
// URIs or namespaces it touches: a check is asked once per identity, verb, resource
// and namespace (its answer kept verdictTTL), and a request that would need more
// than this is cut short (a page of a list ends early) or refused.
const MaxReviews = 32

// ReviewsMetric is the name of the counter of the SubjectAccessReviews asked.
const ReviewsMetric = "sandbar_subjectaccessreviews_total"

// reviewsAsked counts the SubjectAccessReviews the manager asked the API server, by
// verdict (allowed, denied, or error when none came back); answers reused from the
// verdict cache are not counted. It is served on the manager's metrics endpoint.
var reviewsAsked = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: ReviewsMetric,
	Help: "SubjectAccessReviews asked of the API server for accounts, by verdict (allowed, denied, error).",
}, []string{"verdict"})

func init() { metrics.Registry.MustRegister(reviewsAsked) }

// ErrTooManyReviews is the error of Can when the request has asked all the reviews
// its context allows (WithReviews): the check was not asked.
var ErrTooManyReviews = errors.New("too many SubjectAccessReviews for one request")

// TooManyReviews says whether err is Can's refusal to ask past the request's limit.
func TooManyReviews(err error) bool { return errors.Is(err, ErrTooManyReviews) }

// Reviews counts the SubjectAccessReviews asked under a context, and refuses those
// past its limit (and past the limit of any count the context had already).
type Reviews struct {
	limit  int32
	asked  atomic.Int32
	parent *Reviews
}

type reviewsKey struct{}

// WithReviews is ctx with a count of the SubjectAccessReviews that Can asks under it,
// at most limit of them (0: no limit but those of the counts ctx has).
func WithReviews(ctx context.Context, limit int) (context.Context, *Reviews) {
	r := &Reviews{limit: int32(min(limit, 1<<30)), parent: reviewsOf(ctx)}
	return context.WithValue(ctx, reviewsKey{}, r), r
}

func reviewsOf(ctx context.Context) *Reviews {
	r, _ := ctx.Value(reviewsKey{}).(*Reviews)
	return r
}

// Asked is how many reviews were asked under the count.
func (r *Reviews) Asked() int {
	if r == nil {
		return 0
	}
	return int(r.asked.Load())
}

// take counts one more review in r and the counts around it, unless that would take
// one of them past its limit: then it counts none, and returns that count.
func (r *Reviews) take() *Reviews {
	for x := r; x != nil; x = x.parent {
		for {
			n := x.asked.Load()
			if x.limit > 0 && n >= x.limit {
				for y := r; y != x; y = y.parent {
					y.asked.Add(-1)
				}
				return x
			}
			if x.asked.CompareAndSwap(n, n+1) {
				break
			}
		}
	}
	return nil
}

// tooMany is the refusal of the review of a past a count's limit, which says what
// to do instead.
func tooMany(a Access, limit int32) error {
	return fmt.Errorf("%w: this request has asked the %d it may, and would need another to check whether it may %s %s; "+
		"ask for fewer classes and namespaces at a time", ErrTooManyReviews, limit, a.Verb, a.resource())
}
