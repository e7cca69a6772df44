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

package controllers

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint asks the API server who a client is and whether it may get
// /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// MetricsServer configures the manager's metrics endpoint at addr ("0": none).
// Secure, it serves HTTPS (with the certificate in certDir, or a self-signed one
// when certDir is empty) and answers only clients whose bearer token the API server
// authenticates (a TokenReview) and authorizes to get the non-resource URL /metrics
// (a SubjectAccessReview): bind the ClusterRole sandbar-metrics-reader to
// Prometheus's ServiceAccount. Not secure, it serves plain HTTP to anyone, for local
// development. HTTP/2 is off, as in the kubebuilder scaffold, against its stream
// reset and rapid reset attacks.
func MetricsServer(addr string, secure bool, certDir string) metricsserver.Options {
	opts := metricsserver.Options{
		BindAddress:   addr,
		SecureServing: secure,
		TLSOpts:       []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
	if secure {
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.CertDir = certDir
	}
	return opts
}
