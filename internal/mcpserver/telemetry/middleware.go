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

package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/sdkgap/transport"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// Attribute keys: the MCP semantic conventions', then Sandbar's own.
const (
	keyMethod          = "mcp.method.name"
	keySession         = "mcp.session.id"
	keyProtocol        = "mcp.protocol.version"
	keyResource        = "mcp.resource.uri"
	keyRequestID       = "jsonrpc.request.id"
	keyToolName        = "gen_ai.tool.name"
	keyPromptName      = "gen_ai.prompt.name"
	keyOperation       = "gen_ai.operation.name"
	keyErrorType       = "error.type"
	keyStatusCode      = "rpc.response.status_code"
	keyTransport       = "network.transport"
	keyNetworkProtocol = "network.protocol.name"
	keyClientAddress   = "client.address"

	// KeyAccount is the account, namespace/name; KeyUser the Kubernetes user it acts
	// as; KeyClass the class of the instance; KeyInstance the instance and KeyProcess
	// the WorkflowProcess, namespace/name; KeyOutcome the audit outcome.
	KeyAccount  = "sandbar.account"
	KeyUser     = "sandbar.kubernetes.user"
	KeyClass    = "sandbar.class"
	KeyInstance = "sandbar.instance"
	KeyProcess  = "sandbar.process"
	KeyOutcome  = "sandbar.outcome"
	// KeyPolicies are the call policies' decisions on a call, each naming the
	// policy, the rule and the action.
	KeyPolicies = "sandbar.policy.decisions"
	// KeyRequestID is the server's id of the request: the one in the request log,
	// the audit event and the tool result's _meta.
	KeyRequestID = "sandbar.request.id"
)

// toolError is error.type of a tools/call result with isError.
const toolError = "tool_error"

// methods are the values of mcp.method.name on metrics; any other is _OTHER, so a
// client cannot add time series by sending made-up methods.
var methods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true, "resources/subscribe": true,
	"resources/unsubscribe": true, "completion/complete": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/roots/list_changed": true,
	"tasks/get": true, "tasks/result": true, "tasks/list": true, "tasks/cancel": true,
	"server/discover": true, "subscriptions/listen": true, "tasks/update": true,
}

// Middleware is the receiving middleware that traces, measures, audits and logs
// every request, under an id of the server's own, which a tools/call result carries
// in its _meta. Install it outermost, so that it sees the answer the client gets,
// from whichever middleware made it. served tells the tools that change nothing.
func (t *Telemetry) Middleware(served *tool.Table) mcp.Middleware {
	sessions := &sessionClock{open: map[*mcp.ServerSession]bool{}}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if !t.on() {
			return next
		}
		// What the middleware does before and after runs in frames of their own:
		// what stays on the stack while next serves the request is this small one.
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			c := t.begin(ctx, method, req, served, sessions)
			res, err := serve(next, &c, method, req)
			t.finish(&c, method, req, res, err)
			return res, err
		}
	}
}

// call is what the middleware keeps of a request while it is served.
type call struct {
	ctx     context.Context
	start   time.Time
	r       *request
	subject *tool.Subject
	span    trace.Span
	// panicked is true when serving the request panicked: its answer is -32603,
	// and it is audited whatever the method.
	panicked bool
}

// serve runs next, and turns its panic into the internal error the client gets,
// which names the request as the log line of the panic does: the span ends, the
// request is logged and audited as any other, and the process goes on.
func serve(next mcp.MethodHandler, c *call, method string, req mcp.Request) (res mcp.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			contain.Record("mcp", v, "method", method, "tool", c.r.tool, "account", c.r.account(), KeyRequestID, c.r.id)
			res, err, c.panicked = nil, contain.InternalError(c.r.id), true
		}
	}()
	return next(c.ctx, method, req)
}

// begin reads a request, and starts its span when tracing.
func (t *Telemetry) begin(ctx context.Context, method string, req mcp.Request, served *tool.Table, sessions *sessionClock) call {
	c := call{start: time.Now(), r: t.describe(method, req, served)}
	ctx, c.subject = tool.WithSubject(ctx)
	if t.tracing {
		ctx = t.propagator.Extract(ctx, c.r.carrier)
		ctx, c.span = t.tracer.Start(ctx, c.r.spanName(), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithTimestamp(c.start), trace.WithAttributes(c.r.attrs...))
		// A request of the stateless revision is a session of its own, not one.
		if ss := c.r.session; ss != nil && !transport.StatelessSession(ss) {
			sessions.follow(ss, t, c.r.protocol)
		}
	}
	c.ctx = ctx
	return c
}

// finish ends the span, and writes the audit event and the request log's line.
func (t *Telemetry) finish(c *call, method string, req mcp.Request, res mcp.Result, err error) {
	r := c.r
	o := classify(method, res, err)
	obj := c.subject.Object()
	if t.tracing {
		t.end(c.ctx, c.span, r, o, obj, c.start)
	}
	if c.panicked {
		o.message = "panic"
	}
	if t.audit != nil && (o.denied || r.mutating || obj.Started || c.panicked) {
		t.record(c.span, r, o, obj, req)
	}
	var proc processRef
	if obj.ProcessName != "" {
		proc = processRef(obj.ProcessNamespace + "/" + obj.ProcessName)
	}
	t.requests.line(r, o, proc, time.Since(c.start))
	if err == nil {
		stampResult(method, res, r.id)
	}
}

// request is what the middleware reads of a request before it is served.
type request struct {
	// id is the server's id of the request.
	id                             string
	method, tool, prompt, resource string
	// extra holds the authenticated account (caller.Of); its name and
	// Kubernetes user are made when a span, a log line or an audit event needs them.
	extra               *mcp.RequestExtra
	client, requestID   string
	sessionID, protocol string
	session             *mcp.ServerSession
	// served is true when the tool is one the server serves (its name may be a label).
	served   bool
	mutating bool
	carrier  propagation.TextMapCarrier
	attrs    []attribute.KeyValue
}

// account is the request's account, namespace/name ("" without one).
func (r *request) account() string {
	if acct := caller.Of(r.extra); acct != nil {
		return acct.Namespace + "/" + acct.Name
	}
	return ""
}

// user is the Kubernetes user the request's account acts as.
func (r *request) user() string { return identity.User(caller.Of(r.extra)) }

func (r *request) spanName() string {
	switch {
	case r.tool != "" && r.served:
		return r.method + " " + r.tool
	case r.prompt != "":
		return r.method + " " + r.prompt
	}
	return r.method
}

func (t *Telemetry) describe(method string, req mcp.Request, served *tool.Table) *request {
	r := &request{id: newID(), method: method}
	switch p := req.(type) {
	case *mcp.CallToolRequest:
		if p.Params != nil {
			r.tool = p.Params.Name
			info, ok := served.Lookup(r.tool)
			r.served, r.mutating = ok, ok && !info.ReadOnly
		}
	case *mcp.GetPromptRequest:
		if p.Params != nil {
			r.prompt = p.Params.Name
		}
	case *mcp.ReadResourceRequest:
		if p.Params != nil {
			r.resource = p.Params.URI
		}
	case *mcp.SubscribeRequest:
		if p.Params != nil {
			r.resource = p.Params.URI
		}
	}
	if method == "tasks/cancel" || method == "tasks/update" {
		r.mutating = true // it may end or move a process
	}
	extra := req.GetExtra()
	var header http.Header
	if extra != nil {
		header = extra.Header
	}
	r.extra = extra
	if header != nil {
		r.client, r.requestID = header.Get(clientHeader), header.Get(requestHeader)
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		r.session, r.sessionID = ss, ss.ID()
		if ip := ss.InitializeParams(); ip != nil {
			r.protocol = ip.ProtocolVersion
		}
	}
	if ip, ok := req.(*mcp.InitializeRequest); ok && ip.Params != nil && r.protocol == "" {
		r.protocol = ip.Params.ProtocolVersion
	}
	if v, ok := req.(interface{ ProtocolVersion() string }); ok && r.protocol == "" {
		// A request of the stateless revision answered without a session of its own.
		r.protocol = v.ProtocolVersion()
	}
	// The trace context: params._meta (the MCP conventions), else the HTTP headers.
	r.carrier = propagation.HeaderCarrier(header)
	if meta := metaOf(req); meta != nil {
		if tp, _ := meta["traceparent"].(string); tp != "" {
			c := propagation.MapCarrier{"traceparent": tp}
			if ts, _ := meta["tracestate"].(string); ts != "" {
				c["tracestate"] = ts
			}
			r.carrier = c
		}
	}
	if !t.tracing {
		return r
	}
	r.attrs = append(r.attrs, attribute.String(keyMethod, method), attribute.String(keyTransport, "tcp"),
		attribute.String(keyNetworkProtocol, "http"))
	if r.tool != "" {
		r.attrs = append(r.attrs, attribute.String(keyToolName, r.tool), attribute.String(keyOperation, "execute_tool"))
	}
	if r.prompt != "" {
		r.attrs = append(r.attrs, attribute.String(keyPromptName, r.prompt))
	}
	if r.resource != "" {
		r.attrs = append(r.attrs, attribute.String(keyResource, r.resource))
	}
	for _, kv := range [][2]string{{KeyRequestID, r.id}, {keySession, r.sessionID}, {keyProtocol, r.protocol}, {keyRequestID, r.requestID},
		{keyClientAddress, r.client}, {KeyAccount, r.account()}, {KeyUser, r.user()}} {
		if kv[1] != "" {
			r.attrs = append(r.attrs, attribute.String(kv[0], kv[1]))
		}
	}
	return r
}

// metaOf is a request's params._meta.
func metaOf(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}

// outcome is how a request ended.
type outcome struct {
	// errorType is error.type ("" on success): a JSON-RPC code, tool_error or _OTHER.
	errorType string
	// code is the JSON-RPC error code, if any.
	code string
	// message is the JSON-RPC error's message, or the refusal of a result with
	// isError; never the text of another tool error (it may quote arguments).
	message string
	// denied is true for a refusal: the account may not do this.
	denied bool
}

// refusal reports whether an answer refuses the caller: every refusal of the server
// (its own permissions, the namespaces an account may use, Kubernetes RBAC, a
// read-only account) says so first.
func refusal(msg string) bool { return strings.HasPrefix(msg, "forbidden") }

func classify(method string, res mcp.Result, err error) outcome {
	if err != nil {
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			code := strconv.FormatInt(rpc.Code, 10)
			return outcome{errorType: code, code: code, message: redact.String(rpc.Message),
				denied: refusal(rpc.Message) || (method == "tools/call" && rpc.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpc.Message, "unknown tool"))}
		}
		return outcome{errorType: "_OTHER", message: redact.String(err.Error())}
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
		o := outcome{errorType: toolError}
		if msg := tool.Text(r); refusal(msg) {
			o.message, o.denied = redact.String(msg), true
		}
		return o
	}
	return outcome{}
}

func (t *Telemetry) end(ctx context.Context, span trace.Span, r *request, o outcome, obj tool.Object, start time.Time) {
	var attrs []attribute.KeyValue
	if obj.Class != "" {
		attrs = append(attrs, attribute.String(KeyClass, obj.Class))
	}
	if obj.Name != "" {
		attrs = append(attrs, attribute.String(KeyInstance, obj.Namespace+"/"+obj.Name))
	}
	if obj.ProcessName != "" {
		attrs = append(attrs, attribute.String(KeyProcess, obj.ProcessNamespace+"/"+obj.ProcessName))
	}
	if len(obj.Policies) > 0 {
		attrs = append(attrs, attribute.StringSlice(KeyPolicies, obj.Policies))
	}
	if o.errorType != "" {
		attrs = append(attrs, attribute.String(keyErrorType, o.errorType))
		span.SetStatus(codes.Error, o.message)
	}
	if o.code != "" {
		attrs = append(attrs, attribute.String(keyStatusCode, o.code))
	}
	if o.denied {
		attrs = append(attrs, attribute.String(KeyOutcome, Denied))
	}
	span.SetAttributes(attrs...)
	span.End()

	// The metric takes the conventions' attributes, each of a bounded set.
	method := r.method
	if !methods[method] {
		method = "_OTHER"
	}
	m := []attribute.KeyValue{attribute.String(keyMethod, method), attribute.String(keyTransport, "tcp"),
		attribute.String(keyNetworkProtocol, "http")}
	if r.tool != "" {
		name := r.tool
		if !r.served {
			name = "_OTHER"
		}
		m = append(m, attribute.String(keyToolName, name), attribute.String(keyOperation, "execute_tool"))
	}
	if r.prompt != "" && o.errorType == "" {
		m = append(m, attribute.String(keyPromptName, r.prompt))
	}
	if r.protocol != "" {
		m = append(m, attribute.String(keyProtocol, r.protocol))
	}
	if o.errorType != "" {
		m = append(m, attribute.String(keyErrorType, o.errorType))
	}
	if o.code != "" {
		m = append(m, attribute.String(keyStatusCode, o.code))
	}
	t.operation.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(m...))
}

// record writes the audit event of a request.
func (t *Telemetry) record(span trace.Span, r *request, o outcome, obj tool.Object, req mcp.Request) {
	e := &Event{ID: r.id, Outcome: Allowed, Method: r.method, Tool: r.tool, User: r.user(), Client: r.client,
		RequestID: r.requestID, SessionID: r.sessionID}
	switch {
	case o.denied:
		e.Outcome, e.Reason = Denied, firstLine(o.message)
	case o.errorType != "":
		e.Outcome, e.Reason = Error, o.errorType
		if o.code != "" && o.message != "" {
			e.Reason = o.code + ": " + firstLine(o.message)
		}
	}
	if acct := caller.Of(r.extra); acct != nil {
		e.Account = &Ref{Namespace: acct.Namespace, Name: acct.Name}
	}
	if obj.Class != "" || obj.Name != "" {
		e.Object = &Object{Class: obj.Class, Namespace: obj.Namespace, Name: obj.Name}
	}
	if obj.ProcessName != "" {
		e.Process = &Ref{Namespace: obj.ProcessNamespace, Name: obj.ProcessName}
	}
	e.Policies = obj.Policies
	if span != nil && span.SpanContext().HasTraceID() {
		e.TraceID = span.SpanContext().TraceID().String()
	}
	if t.audit.arguments {
		if c, ok := req.(*mcp.CallToolRequest); ok && c.Params != nil && len(c.Params.Arguments) > 0 {
			var args any
			if json.Unmarshal(c.Params.Arguments, &args) == nil {
				e.Arguments = redact.Value(args)
			}
		}
	}
	t.audit.write(e)
}

// firstLine is the first line of a message, at most 512 bytes of it.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// sessionClock measures sessions: from the first request the server sees of one to
// its end.
type sessionClock struct {
	mu   sync.Mutex
	open map[*mcp.ServerSession]bool
}

func (c *sessionClock) follow(ss *mcp.ServerSession, t *Telemetry, protocol string) {
	c.mu.Lock()
	seen := c.open[ss]
	c.open[ss] = true
	c.mu.Unlock()
	if seen {
		return
	}
	start := time.Now()
	go func() {
		_ = ss.Wait()
		c.mu.Lock()
		delete(c.open, ss)
		c.mu.Unlock()
		attrs := []attribute.KeyValue{attribute.String(keyTransport, "tcp"), attribute.String(keyNetworkProtocol, "http")}
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
			protocol = ip.ProtocolVersion
		}
		if protocol != "" {
			attrs = append(attrs, attribute.String(keyProtocol, protocol))
		}
		t.session.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}()
}
