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

package tool

import (
	"bytes"
	"strings"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DomainError is a failure the caller can fix; it becomes a result with isError, so
// that the model reads it and corrects its call.
type DomainError struct{ Message string }

func (e *DomainError) Error() string { return e.Message }

// Fail is a domain error.
func Fail(format string, args ...any) error {
	return &DomainError{Message: fmt.Sprintf(format, args...)}
}

// BadArgs is arguments that do not fit a tool's input schema. Since protocol revision
// 2025-11-25 (SEP-1303) these are tool results with isError too, so the model sees
// them; -32602 stays for unknown tools and for arguments that are not an object.
func BadArgs(format string, args ...any) error {
	return &DomainError{Message: "invalid arguments: " + fmt.Sprintf(format, args...)}
}

// IsDomain reports whether err is a domain error.
func IsDomain(err error) bool {
	var de *DomainError
	return errors.As(err, &de)
}

var (
	calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbar_mcp_tool_calls_total",
		Help: "Tool calls by tool and outcome (ok, error, forbidden, input_required, unavailable, cancelled, protocol_error, internal_error).",
	}, []string{"tool", "outcome"})
	duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbar_mcp_tool_call_duration_seconds",
		Help:    "Latency of tool calls by tool.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, []string{"tool"})
)

func init() { metrics.Registry.MustRegister(calls, duration) }

// Count records the outcome of a call that ended before any handler ran.
func Count(tool, outcome string) { calls.WithLabelValues(tool, outcome).Inc() }

// Handler is the MCP handler of a definition. It is the one place that maps what a
// tool returns to the protocol: a value becomes a JSON result, a domain error a
// result with isError, a JSON-RPC error itself, and anything else -32603 with the
// details only in the server's log.
func Handler(d *Def, name string, call func(*mcp.CallToolRequest) (*Call, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		defer func() { duration.WithLabelValues(name).Observe(time.Since(start).Seconds()) }()
		return handle(ctx, d, name, call, req)
	}
}

// handle runs a call. What maps its outcome to the protocol runs in a frame of its
// own, apart from the tool's: the handler goroutine's stack, which the tool's work
// deepens, grows (and is copied) only as far as it must.
func handle(ctx context.Context, d *Def, name string, call func(*mcp.CallToolRequest) (*Call, error), req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := call(req)
	if err == nil && c.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadlineOf(d, c))
		defer cancel()
	}
	var out any
	var w *window
	args := req.Params.Arguments
	if err == nil && d.ReadOnly {
		w, args, err = readContinue(c, args)
	}
	if err == nil && d.Confirms {
		c.Asking.Confirmed, args, err = readConfirm(args)
	}
	if err == nil && c.Gate != nil {
		err = c.Gate(ctx, d, c, args)
	}
	if err == nil {
		out, err = d.Run(ctx, c, args)
	}
	return answer(ctx, d, name, c, args, w, out, err)
}

// answer is the protocol's answer to a call that returned out or err.
func answer(ctx context.Context, d *Def, name string, c *Call, args json.RawMessage, w *window, out any, err error) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	if err == nil {
		made, clean := jsonResult(out, c.Bounds.Scrub)
		if res, err = bound(made, d, c, args, w); err == nil && clean && res == made && c.Bounds.Vouch != nil {
			c.Bounds.Vouch(ctx, res)
		}
	}
	var de *DomainError
	var rpc *jsonrpc.Error
	denied, forbidden := Denied(err)
	if ask, ok := needsInput(err); ok {
		Count(name, "input_required")
		return ask, nil
	}
	switch {
	case errors.As(err, &de):
		Count(name, "error")
		return ErrorResult(de.Message), nil
	case forbidden:
		Count(name, "forbidden")
		return ErrorResult(denied), nil
	case errors.As(err, &rpc):
		Count(name, "protocol_error")
		return nil, rpc
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		// The client cancelled the call (notifications/cancelled) or went away:
		// its API work stopped with ctx, and nobody reads the answer.
		Count(name, "cancelled")
		return ErrorResult("the call was cancelled"), nil
	case err != nil:
		if msg, ok := Unavailable(ctx, err, d, c); ok {
			Count(name, "unavailable")
			ctrl.LoggerFrom(ctx).WithName("mcp").Info("tool call met a Kubernetes API fault", "tool", name, "error", err.Error())
			return ErrorResult(msg), nil
		}
		Count(name, "internal_error")
		ctrl.LoggerFrom(ctx).WithName("mcp").Error(err, "tool call failed", "tool", name)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error; the server log has the details"}
	}
	Count(name, "ok")
	return res, nil
}

// Denied is what to tell a caller whom Kubernetes (or the account's own
// permissions) refused: which verb on which resource in which namespace, and what
// to do about it. ok is false for any other error.
func Denied(err error) (msg string, ok bool) {
	if err == nil || !apierrors.IsForbidden(err) {
		return "", false
	}
	msg = err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		msg = status.Status().Message
	}
	if strings.Contains(msg, "User \"system:serviceaccount:") {
		msg += ". This account acts in Kubernetes as that ServiceAccount, which lacks the permission; " +
			"a cluster admin can grant it with a RoleBinding (for instances, to the ClusterRole sandbar-instance-viewer or sandbar-instance-editor)"
	}
	return "forbidden: " + msg, true
}

// ErrorResult is a result with isError and a message.
func ErrorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// JSONResult is a result whose text is v as indented JSON, and v as structured content.
func JSONResult(v any) *mcp.CallToolResult {
	res, _ := jsonResult(v, nil)
	return res
}

// jsonResult is JSONResult, which encodes v once (a Rendered value, or a Kept
// answer's, is not encoded again): see Render. clean: scrub left its text and
// its structured content as they were.
func jsonResult(v any, scrub func(string) string) (res *mcp.CallToolResult, clean bool) {
	r, ok := v.(*Rendered)
	if k, kept := v.(interface{ rendered() *Rendered }); kept {
		r, ok = k.rendered(), true
	}
	if !ok {
		r = Render(v, scrub)
	}
	return r.Result(), r.clean
}

// Rendered is a tool's answer encoded as its result, ready to be answered many
// times: a verb whose answer depends only on the catalog snapshot and its
// arguments may keep one and return it, and the result is made of it without
// encoding anything again. Nothing in it is modified after Render.
type Rendered struct {
	value any
	text  string
	// raw, when set, is the structured content as JSON (see Render).
	raw json.RawMessage
	// failed: v was not JSON.
	failed bool
	// clean: the scrub Render was given left raw and text as they were.
	clean bool
}

// Render encodes v once: the result's text is that JSON indented. When scrub finds
// nothing in the JSON and it holds no escape but \" and \\ (see plainEscapes), the
// structured content is that JSON itself: the SDK sends those bytes rather than
// encoding v a second time, and redaction scans one text rather than walking every
// string of v. The bytes sent are the same either way. When scrub leaves the
// indented text as it is too, the result is clean: nothing in it is redacted, and
// it need not be scanned again each time it is sent (Bounds.Vouch). A verb that keeps what
// Render made must render with the scrub of the calls it answers (Call.Bounds.Scrub).
func Render(v any, scrub func(string) string) *Rendered {
	compact, err := marshal(v)
	if err != nil {
		return &Rendered{failed: true}
	}
	var text bytes.Buffer
	text.Grow(len(compact) + len(compact)/2)
	if err := json.Indent(&text, compact, "", "  "); err != nil {
		return &Rendered{failed: true}
	}
	r := &Rendered{value: v, text: text.String()}
	if scrub != nil && plainEscapes(compact) {
		if s := string(compact); scrub(s) == s {
			r.raw = json.RawMessage(compact)
			r.clean = scrub(r.text) == r.text
		}
	}
	return r
}

// marshal is v as compact JSON, with <, > and & as written: a model reads
// "<taskId>" where json.Marshal would give "\u003ctaskId\u003e".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// plainEscapes reports whether the only escapes in JSON are \" and \\: then a scan
// of the JSON sees what a scan of each of its strings would. Any other escape could
// hide a credential from it: \u0041KIA is AKIA once decoded, and in \nAKIA... the n
// is a letter where the decoded string has a line break before the key.
func plainEscapes(compact []byte) bool {
	for i := 0; ; i += 2 {
		j := bytes.IndexByte(compact[i:], '\\')
		if j < 0 {
			return true
		}
		i += j
		if i+1 >= len(compact) || (compact[i+1] != '"' && compact[i+1] != '\\') {
			return false
		}
	}
}

// Size is about how many bytes r keeps.
func (r *Rendered) Size() int { return len(r.text) + len(r.raw) }

// Result is a new result of what r holds.
func (r *Rendered) Result() *mcp.CallToolResult {
	if r.failed {
		return ErrorResult("internal error: result is not JSON")
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.text}}, StructuredContent: r.value}
	if r.raw != nil {
		res.StructuredContent = r.raw
	}
	return res
}

// Text is the text of a result's content.
func Text(res *mcp.CallToolResult) string {
	out := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out += t.Text
		}
	}
	return out
}
