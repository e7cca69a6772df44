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

package edge

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are served on the manager's metrics endpoint.
var (
	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbar_mcp_http_requests_total",
		Help: "HTTP requests to the MCP endpoint, by method and status code.",
	}, []string{"method", "code"})
	httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbar_mcp_http_request_duration_seconds",
		Help:    "Latency of HTTP requests to the MCP endpoint (streams count until they close).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, []string{"method"})
)

func init() {
	metrics.Registry.MustRegister(httpRequests, httpDuration)
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush keeps server-sent event streams working through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		method := methodLabel(r.Method)
		httpRequests.WithLabelValues(method, strconv.Itoa(rec.code)).Inc()
		httpDuration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	})
}

// methodLabel keeps the method label to a fixed set: any client may send any
// method, and every label value is a time series kept forever.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodHead, http.MethodPut, http.MethodPatch:
		return m
	}
	return "OTHER"
}
