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

// Package telemetry reports what the MCP server does, in two streams. Traces and
// metrics follow the OpenTelemetry semantic conventions for MCP (a SERVER span per
// request named "{mcp.method.name} {target}", the histogram
// mcp.server.operation.duration) and are exported over OTLP/HTTP only when an
// endpoint is configured. Audit events are JSON lines, one per call that changes
// something and one per refusal, for a SIEM; they never hold argument values unless
// asked to, and never a token.
package telemetry

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Config configures telemetry. The zero value exports nothing and writes no audit
// events.
type Config struct {
	// OTLPEndpoint is the base URL of an OTLP/HTTP collector, as
	// "http://otel-collector.observability:4318"; traces go to /v1/traces and metrics
	// to /v1/metrics under it. Empty: the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and _METRICS_ENDPOINT) when set, else no export.
	OTLPEndpoint string
	// Version is the build's version (service.version).
	Version string
	// Audit receives the audit events as JSON lines (nil: none). AuditArguments adds
	// each call's arguments to its event, redacted.
	Audit          io.Writer
	AuditArguments bool
}

// Telemetry is the tracer, the meters and the audit stream of one server.
type Telemetry struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	operation  metric.Float64Histogram
	session    metric.Float64Histogram
	// tracing is true when spans and metrics are exported.
	tracing bool
	audit   *auditor
	// requests is the request log (nil: none).
	requests *RequestLog

	shutdown []func(context.Context) error
	flush    []func(context.Context) error
}

// Buckets of the duration histograms, as the MCP conventions advise.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// New sets telemetry up. Without an endpoint (in cfg or the environment) the tracer
// and meters are no-ops and no exporter exists; OTEL_SDK_DISABLED=true turns export
// off whatever the endpoint. Other OTEL_* variables (headers, timeouts, sampler,
// resource attributes, service name) are read by the SDK as usual.
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	t := &Telemetry{
		tracer:     tracenoop.NewTracerProvider().Tracer(scope),
		propagator: propagation.TraceContext{},
	}
	if cfg.Audit != nil {
		t.audit = &auditor{out: cfg.Audit, arguments: cfg.AuditArguments}
	}
	meter := metricnoop.NewMeterProvider().Meter(scope)
	if exporting(cfg.OTLPEndpoint) {
		res, err := resource.New(ctx,
			resource.WithAttributes(attribute.String("service.name", "sandbar"), attribute.String("service.version", cfg.Version)),
			resource.WithFromEnv())
		if err != nil {
			return nil, err
		}
		var traceOpts []otlptracehttp.Option
		var metricOpts []otlpmetrichttp.Option
		if base := strings.TrimRight(cfg.OTLPEndpoint, "/"); base != "" {
			traceOpts = append(traceOpts, otlptracehttp.WithEndpointURL(base+"/v1/traces"))
			metricOpts = append(metricOpts, otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"))
		}
		spans, err := otlptracehttp.New(ctx, traceOpts...)
		if err != nil {
			return nil, err
		}
		metrics, err := otlpmetrichttp.New(ctx, metricOpts...)
		if err != nil {
			return nil, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
		t.tracer, meter, t.tracing = tp.Tracer(scope), mp.Meter(scope), true
		t.flush = append(t.flush, tp.ForceFlush, mp.ForceFlush)
		t.shutdown = append(t.shutdown, tp.Shutdown, mp.Shutdown)
	}
	var err error
	if t.operation, err = meter.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if t.session, err = meter.Float64Histogram("mcp.server.session.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP session as observed on the MCP server."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	return t, nil
}

const scope = "github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"

// exporting says whether spans and metrics go anywhere.
func exporting(endpoint string) bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if endpoint != "" {
		return true
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Exporting reports whether spans and metrics are exported.
func (t *Telemetry) Exporting() bool { return t != nil && t.tracing }

// on reports whether anything is recorded at all.
func (t *Telemetry) on() bool { return t != nil && (t.tracing || t.audit != nil || t.requests.on()) }

// Flush exports the spans and metrics recorded so far.
func (t *Telemetry) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, f := range t.flush {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// Shutdown flushes and stops the exporters; run it when the manager stops.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}
