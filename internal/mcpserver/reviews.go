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

package mcpserver

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sandbar-dev/sandbar/internal/identity"
)

// ReviewsPerRequestMetric is the name of the histogram of the SubjectAccessReviews
// each MCP request asked.
const ReviewsPerRequestMetric = "sandbar_mcp_subjectaccessreviews_per_request"

// reviewsPerRequest observes, by method, how many SubjectAccessReviews each MCP
// request asked of the API server (answers reused from the verdict cache are not
// asked); its last bucket is the bound, identity.MaxReviews. It is served on the
// manager's metrics endpoint.
var reviewsPerRequest = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    ReviewsPerRequestMetric,
	Help:    "SubjectAccessReviews asked of the API server per MCP request, by method.",
	Buckets: []float64{0, 1, 2, 4, 8, 16, identity.MaxReviews},
}, []string{"method"})

func init() { metrics.Registry.MustRegister(reviewsPerRequest) }

// reviewedMethods are the methods that ask reviews, the values of the method label;
// any other request is "other", so a client cannot add time series by sending
// made-up methods.
var reviewedMethods = map[string]bool{
	"resources/list": true, "resources/read": true, "resources/subscribe": true, "subscriptions/listen": true,
	"completion/complete": true, "tools/call": true, "prompts/get": true,
	"tasks/get": true, "tasks/result": true, "tasks/list": true, "tasks/cancel": true, "tasks/update": true,
}

// countReviews is the receiving middleware that bounds the SubjectAccessReviews of a
// request (identity.MaxReviews: past them, a check is refused without being asked)
// and observes how many it asked. Install it outside every middleware and handler
// that checks access.
func countReviews(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		ctx, reviews := identity.WithReviews(ctx, identity.MaxReviews)
		res, err := next(ctx, method, req)
		label := method
		if !reviewedMethods[method] {
			label = "other"
		}
		reviewsPerRequest.WithLabelValues(label).Observe(float64(reviews.Asked()))
		return res, err
	}
}
