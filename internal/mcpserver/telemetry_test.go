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

package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/telemetry"
)

// span is a span as an OTLP collector received it.
type span struct {
	Name, TraceID, ParentSpanID string
	Kind                        tracepb.Span_SpanKind
	Error                       bool
	Attrs                       map[string]string
}

// collector is an OTLP/HTTP receiver on loopback: it decodes what the exporters send
// (protobuf) and keeps the spans and the names and attributes of the metric points.
type collector struct {
	URL string

	mu      sync.Mutex
	spans   []span
	metrics map[string][]map[string]string
	posts   int
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts++
	var reply proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, span{Name: s.Name, Kind: s.Kind, TraceID: hex.EncodeToString(s.TraceId),
						ParentSpanID: hex.EncodeToString(s.ParentSpanId), Error: s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR,
						Attrs: attrs(s.Attributes)})
				}
			}
		}
		reply = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, p := range m.GetHistogram().GetDataPoints() {
						c.metrics[m.Name] = append(c.metrics[m.Name], attrs(p.Attributes))
					}
				}
			}
		}
		reply = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	b, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func newCollector(t *testing.T) *collector {
	c := &collector{metrics: map[string][]map[string]string{}}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *collector) span(name string) (span, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.spans {
		if s.Name == name {
			return s, true
		}
	}
	return span{}, false
}

// readAudit reads the audit events of a sink file, and its text.
func readAudit(t *testing.T, path string) ([]telemetry.Event, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var events []telemetry.Event
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var e telemetry.Event
		NewWithT(t).Expect(json.Unmarshal(sc.Bytes(), &e)).To(Succeed(), "every line is one JSON event: %s", sc.Text())
		events = append(events, e)
	}
	return events, string(b)
}

func findEvent(events []telemetry.Event, keep func(e telemetry.Event) bool) *telemetry.Event {
	for i := range events {
		if keep(events[i]) {
			return &events[i]
		}
	}
	return nil
}

// A create and a refused call each arrive at an OTLP collector as a span named after
// the tool, with the account, the class and the instance, and each is an audit
// event with who, what, which object and the outcome; no argument value and no
// token is in the audit stream.
func TestCreateAndRefusalAreTracedAndAudited(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	otlp := newCollector(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := telemetry.OpenSink(auditPath)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sink.Close() })
	tel, err := telemetry.New(ctx, telemetry.Config{OTLPEndpoint: otlp.URL, Version: "test", Audit: sink})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	g.Expect(tel.Exporting()).To(BeTrue())
	url := serve(t, mcpserver.Options{Telemetry: tel})

	// A create, inside a trace the client started.
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	name := unique("traced")
	secretValue := unique("value-only-the-arguments-hold")
	cs := connect(t, url, token, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbar_class_zorp_SpaceBoot",
		Meta:      mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"},
		Arguments: map[string]any{"name": secretValue, "metadata": map[string]any{"name": name}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.IsError).To(BeFalse(), text(res))

	// A refusal: Kubernetes RBAC does not let a tenant create in another namespace.
	tn := newTenant(t, metav1alpha1.Permissions{Namespaces: []string{"*"}})
	// The token is <namespace>/<service>:<key>; the tenant's service is its account's name.
	tnName, _, _ := strings.Cut(tn.token, ":")
	if _, service, ok := strings.Cut(tnName, "/"); ok {
		tnName = service
	}
	planted := unique("planted")
	other := connect(t, url, tn.token, nil)
	res = callTool(t, other, "sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot",
		"attributes": map[string]any{"name": secretValue}, "metadata": map[string]any{"namespace": "default", "name": planted}})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(text(res)).To(HavePrefix("forbidden: "))
	var boot unstructured.Unstructured
	boot.SetAPIVersion("zorp.sandbar.dev/v1")
	boot.SetKind("SpaceBoot")
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: planted}, &boot)).NotTo(Succeed(), "nothing was created")

	// A refusal at the edge: a wrong key.
	service, key, _ := strings.Cut(token, ":")
	wrongKey := key[:len(key)-4] + "zzzz"
	r, _ := post(t, url, map[string]string{"Authorization": "Bearer " + service + ":" + wrongKey})
	g.Expect(r.StatusCode).To(Equal(http.StatusUnauthorized))

	// The spans and the duration histograms reach the collector (a session's once it ends).
	sessionID := cs.ID()
	g.Expect(cs.Close()).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tel.Flush(ctx)).To(Succeed())
		created, ok := otlp.span("tools/call sandbar_class_zorp_SpaceBoot")
		g.Expect(ok).To(BeTrue(), "the create's span")
		g.Expect(created.Kind).To(Equal(tracepb.Span_SPAN_KIND_SERVER))
		g.Expect(created.TraceID).To(Equal(traceID), "the trace context of params._meta")
		g.Expect(created.ParentSpanID).To(Equal(parentID))
		g.Expect(created.Error).To(BeFalse())
		g.Expect(created.Attrs).To(And(
			HaveKeyWithValue("mcp.method.name", "tools/call"),
			HaveKeyWithValue("gen_ai.tool.name", "sandbar_class_zorp_SpaceBoot"),
			HaveKeyWithValue("gen_ai.operation.name", "execute_tool"),
			HaveKeyWithValue("mcp.session.id", sessionID),
			HaveKey("jsonrpc.request.id"),
			HaveKey("mcp.protocol.version"),
			HaveKeyWithValue("sandbar.account", "default/claude"),
			HaveKeyWithValue("sandbar.class", "zorp.spaceboot"),
			HaveKeyWithValue("sandbar.instance", "default/"+name)))
		g.Expect(created.Attrs).NotTo(HaveKey("error.type"))

		denied, ok := otlp.span("tools/call sandbar_entity_create")
		g.Expect(ok).To(BeTrue(), "the refused call's span")
		g.Expect(denied.Error).To(BeTrue())
		g.Expect(denied.Attrs).To(And(
			HaveKeyWithValue("mcp.method.name", "tools/call"),
			HaveKeyWithValue("gen_ai.tool.name", "sandbar_entity_create"),
			HaveKeyWithValue("error.type", "tool_error"),
			HaveKeyWithValue("sandbar.outcome", "denied"),
			HaveKeyWithValue("sandbar.class", "zorp.spaceboot"),
			HaveKeyWithValue("sandbar.instance", "default/"+planted),
			HaveKeyWithValue("sandbar.account", tn.namespace+"/"+tnName)))

		otlp.mu.Lock()
		defer otlp.mu.Unlock()
		g.Expect(otlp.metrics["mcp.server.operation.duration"]).To(ContainElement(And(
			HaveKeyWithValue("mcp.method.name", "tools/call"),
			HaveKeyWithValue("gen_ai.tool.name", "sandbar_entity_create"),
			HaveKeyWithValue("error.type", "tool_error"))))
		g.Expect(otlp.metrics["mcp.server.session.duration"]).To(ContainElement(HaveKey("mcp.protocol.version")))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// The audit events.
	events, raw := readAudit(t, auditPath)
	created := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_class_zorp_SpaceBoot" })
	g.Expect(created).NotTo(BeNil(), raw)
	g.Expect(created.Outcome).To(Equal(telemetry.Allowed))
	g.Expect(created.Method).To(Equal("tools/call"))
	g.Expect(created.Account).To(Equal(&telemetry.Ref{Namespace: "default", Name: "claude"}))
	g.Expect(created.User).To(Equal("system:serviceaccount:default:claude"))
	g.Expect(created.Client).To(HavePrefix("127.0.0.1:"))
	g.Expect(created.Object).To(Equal(&telemetry.Object{Class: "zorp.spaceboot", Namespace: "default", Name: name}))
	g.Expect(created.SessionID).To(Equal(sessionID))
	g.Expect(created.RequestID).NotTo(BeEmpty())
	g.Expect(created.TraceID).To(Equal(traceID))
	g.Expect(created.ID).NotTo(BeEmpty())
	g.Expect(created.Time.IsZero()).To(BeFalse())

	refused := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_entity_create" })
	g.Expect(refused).NotTo(BeNil(), raw)
	g.Expect(refused.Outcome).To(Equal(telemetry.Denied))
	g.Expect(refused.Reason).To(ContainSubstring(`cannot create resource "spaceboots"`))
	g.Expect(refused.Account).To(Equal(&telemetry.Ref{Namespace: tn.namespace, Name: tnName}))
	g.Expect(refused.User).To(Equal("system:serviceaccount:" + tn.namespace + ":agent"))
	g.Expect(refused.Object).To(Equal(&telemetry.Object{Class: "zorp.spaceboot", Namespace: "default", Name: planted}))

	edge := findEvent(events, func(e telemetry.Event) bool { return e.Method == "http POST" })
	g.Expect(edge).NotTo(BeNil(), raw)
	g.Expect(edge.Outcome).To(Equal(telemetry.Denied))
	g.Expect(edge.Reason).To(Equal("invalid bearer token"))
	g.Expect(edge.Client).To(HavePrefix("127.0.0.1:"))

	g.Expect(raw).NotTo(ContainSubstring(secretValue), "no argument value")
	g.Expect(raw).NotTo(ContainSubstring(key), "no token")
	g.Expect(raw).NotTo(ContainSubstring(wrongKey), "no presented key")
	g.Expect(raw).NotTo(ContainSubstring(`"arguments"`))
	// Read-only calls are not audited.
	g.Expect(findEvent(events, func(e telemetry.Event) bool { return e.Method == "tools/list" || e.Method == "initialize" })).To(BeNil())
}

// Telemetry as the manager makes it by default (no --otlp-endpoint, no OTEL_*
// endpoint) exports nothing: no exporter dials the OTLP default, localhost:4318.
func TestTelemetryIsOffByDefault(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(v, "")
		g.Expect(os.Unsetenv(v)).To(Succeed())
	}
	otlp := &collector{metrics: map[string][]map[string]string{}}
	listening := 0
	var dials atomic.Int32
	for _, addr := range []string{"127.0.0.1:4318", "[::1]:4318"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		listening++
		srv := &http.Server{Handler: otlp, ReadHeaderTimeout: timeout, ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				dials.Add(1)
			}
		}}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	if listening == 0 {
		t.Skip("the default OTLP port 4318 is taken on loopback")
	}
	tel, err := telemetry.New(ctx, telemetry.Config{Version: "test"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tel.Exporting()).To(BeFalse())
	url := serve(t, mcpserver.Options{Telemetry: tel})
	cs := connect(t, url, token, nil)
	g.Expect(callTool(t, cs, "sandbar_schema_classes", nil).IsError).To(BeFalse())
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbar_no_such_tool"})
	g.Expect(err).To(HaveOccurred())
	g.Expect(tel.Flush(ctx)).To(Succeed())
	g.Expect(tel.Shutdown(ctx)).To(Succeed())
	g.Expect(dials.Load()).To(BeZero(), "no exporter dialled")
	otlp.mu.Lock()
	defer otlp.mu.Unlock()
	g.Expect(otlp.posts).To(BeZero(), "nothing was exported")
}

// auditedServer serves MCP with audit events (and no trace export) into a file, and
// returns the server's URL and the file.
func auditedServer(t *testing.T, arguments bool) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := telemetry.OpenSink(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = sink.Close() })
	tel, err := telemetry.New(context.Background(), telemetry.Config{Audit: sink, AuditArguments: arguments})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return serve(t, mcpserver.Options{Telemetry: tel}), path
}

// A task-augmented call that starts a process (even of a read-only tool) is audited
// with its WorkflowProcess; a read-only account's tasks/cancel and its call of a tool
// that writes are refused and audited as denials, with the request's JSON-RPC id.
func TestTasksAndReadOnlyRefusalsAreAudited(t *testing.T) {
	g := NewWithT(t)
	url, path := auditedServer(t, false)
	looker := unique("looker")
	_, tok := newAccount(t, looker, metav1alpha1.Permissions{ReadOnly: true})
	s := newRawSession(t, url, tok)
	res := s.call("tools/call", map[string]any{"name": "sandbar_project_export",
		"arguments": map[string]any{"class": "zorp/SpaceBoot"}, "task": map[string]any{}})
	g.Expect(res.Error).To(BeNil())
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	g.Expect(json.Unmarshal(res.Result, &created)).To(Succeed())
	id := created.Task.TaskID
	g.Expect(id).To(HavePrefix("task-"))
	_, rpcErr := s.task("tasks/cancel", id)
	g.Expect(rpcErr).NotTo(BeNil())
	cancelID := strconv.FormatInt(s.id.Load(), 10)
	var p metav1alpha1.WorkflowProcess
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: id}, &p)).To(Succeed())
	g.Expect(p.Status.Cancellation).To(BeNil(), "nothing was cancelled")
	_, _ = s.task("tasks/get", id)
	res = s.call("tools/call", map[string]any{"name": "sandbar_entity_create",
		"arguments": map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "nope"}}})
	g.Expect(string(res.Result)).To(ContainSubstring(`"isError":true`))

	events, raw := readAudit(t, path)
	account := &telemetry.Ref{Namespace: "default", Name: looker}
	export := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_project_export" })
	g.Expect(export).NotTo(BeNil(), raw)
	g.Expect(export.Outcome).To(Equal(telemetry.Allowed))
	g.Expect(export.Account).To(Equal(account))
	g.Expect(export.Process).To(Equal(&telemetry.Ref{Namespace: "default", Name: id}))

	cancel := findEvent(events, func(e telemetry.Event) bool { return e.Method == "tasks/cancel" })
	g.Expect(cancel).NotTo(BeNil(), raw)
	g.Expect(cancel.Outcome).To(Equal(telemetry.Denied))
	g.Expect(cancel.Account).To(Equal(account))
	g.Expect(cancel.Reason).To(Equal("forbidden: this account is read-only: it cannot cancel processes"))
	g.Expect(cancel.Process).To(Equal(&telemetry.Ref{Namespace: "default", Name: id}))
	g.Expect(cancel.RequestID).To(Equal(cancelID))
	g.Expect(cancel.SessionID).To(Equal(s.sid))

	write := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_entity_create" })
	g.Expect(write).NotTo(BeNil(), raw)
	g.Expect(write.Outcome).To(Equal(telemetry.Denied))
	g.Expect(write.Reason).To(ContainSubstring(`this account's permissions do not allow the tool "sandbar_entity_create"`))
	g.Expect(write.Account).To(Equal(account))

	g.Expect(findEvent(events, func(e telemetry.Event) bool { return e.Method == "tasks/get" })).To(BeNil(), "reads are not audited")
	g.Expect(raw).NotTo(ContainSubstring("nope"), "no argument value")
}

// With --audit-include-arguments an event holds the call's arguments, and what looks
// like a credential in them is redacted as in every answer.
func TestAuditedArgumentsAreRedacted(t *testing.T) {
	g := NewWithT(t)
	url, path := auditedServer(t, true)
	leaked, key := leakedToken(t)
	name := unique("with-arguments")
	cs := connect(t, url, token, nil)
	res := callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot",
		"attributes": map[string]any{"name": "keep " + leaked}, "metadata": map[string]any{"name": name}})
	g.Expect(res.IsError).To(BeFalse(), text(res))

	events, raw := readAudit(t, path)
	e := findEvent(events, func(e telemetry.Event) bool { return e.Tool == "sandbar_entity_create" })
	g.Expect(e).NotTo(BeNil(), raw)
	g.Expect(e.Arguments).To(HaveKeyWithValue("metadata", map[string]any{"name": name}))
	g.Expect(e.Arguments).To(HaveKeyWithValue("class", "zorp/SpaceBoot"))
	noKey(g, key, e.Arguments, "the audited arguments")
	g.Expect(raw).NotTo(ContainSubstring(key))
	g.Expect(raw).NotTo(ContainSubstring(strings.Split(token, ":")[1]), "no token")
}
