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
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Request log modes (--mcp-request-log).
const (
	// LogFailures logs errors and refusals at Info, every other request at V(1).
	LogFailures = "failures"
	// LogAll logs every request at Info.
	LogAll = "all"
	// LogOff logs no request.
	LogOff = "off"
)

// MetaRequestID is the key, in a tools/call result's _meta, of the request's id:
// the id of its line in the manager's log and of its audit event.
const MetaRequestID = "dev.sandbar/requestId"

// Outcomes in the request log.
const (
	logOK        = "ok"
	logError     = "error"
	logToolError = toolError
	logDenied    = Denied
)

// RequestLog writes one line per MCP request to the manager's log: its id, the
// account, the method, the tool, how long it took and how it ended. It holds no
// argument value, no token and nothing of a result.
type RequestLog struct {
	mode   string
	logger atomic.Pointer[logr.Logger]
}

// NewRequestLog is a request log in a mode ("" is LogFailures). It writes nothing
// until SetLogger.
func NewRequestLog(mode string) (*RequestLog, error) {
	switch mode {
	case "":
		mode = LogFailures
	case LogFailures, LogAll, LogOff:
	default:
		return nil, fmt.Errorf("--mcp-request-log must be failures, all or off, not %q", mode)
	}
	return &RequestLog{mode: mode}, nil
}

// SetLogger sets the logger the lines go to.
func (l *RequestLog) SetLogger(logger logr.Logger) {
	if l != nil {
		l.logger.Store(&logger)
	}
}

func (l *RequestLog) on() bool { return l != nil && l.mode != LogOff }

// WithRequestLog is t (nil: nothing traced, measured or audited) with a request log.
func (t *Telemetry) WithRequestLog(l *RequestLog) *Telemetry {
	out := &Telemetry{}
	if t != nil {
		*out = *t // the fields are handles, shared with t
	}
	out.requests = l
	return out
}

// line writes the line of a request. Notifications are not requests: they get none.
func (l *RequestLog) line(r *request, o outcome, obj processRef, d time.Duration) {
	if !l.on() || r.notification() {
		return
	}
	logger := l.logger.Load()
	if logger == nil {
		return
	}
	// A tool error is the caller's own (an unknown instance, an invalid value):
	// routine for a model, so it goes with the successes, which are logged at V(1)
	// unless every request is: the line is made only when it is written.
	failed := o.denied || o.code != "" || (o.errorType != "" && o.errorType != toolError)
	if !failed && l.mode != LogAll && !logger.V(1).Enabled() {
		return
	}
	kv := []any{"requestId", r.id, "method", bounded(r.method)}
	if r.requestID != "" {
		kv = append(kv, "jsonrpcId", r.requestID)
	}
	if account := r.account(); account != "" {
		kv = append(kv, "account", account)
	}
	if r.tool != "" {
		kv = append(kv, "tool", bounded(r.tool))
	}
	if obj != "" {
		kv = append(kv, "process", string(obj))
	}
	kv = append(kv, "durationMs", float64(d.Microseconds())/1000)
	switch {
	case o.denied:
		kv = append(kv, "outcome", logDenied, "reason", firstLine(o.message))
	case o.code != "":
		kv = append(kv, "outcome", logError, "code", o.code)
	case o.errorType == toolError:
		kv = append(kv, "outcome", logToolError)
	case o.errorType != "":
		kv = append(kv, "outcome", logError)
	default:
		kv = append(kv, "outcome", logOK)
	}
	if failed || l.mode == LogAll {
		logger.Info("MCP request", kv...)
		return
	}
	logger.V(1).Info("MCP request", kv...)
}

// bounded is a name the client chose (a method, a tool it may not be served), cut
// to 128 bytes so that one request cannot write a long line.
func bounded(s string) string {
	if len(s) > 128 {
		return s[:128] + "…"
	}
	return s
}

// processRef is the process a request started, namespace/name, or "".
type processRef string

// notification reports whether a message is a notification, which has no answer.
func (r *request) notification() bool { return len(r.method) > 14 && r.method[:14] == "notifications/" }

// stampResult puts the request's id on a tools/call result's _meta.
func stampResult(method string, res mcp.Result, id string) {
	if method != "tools/call" || res == nil || id == "" {
		return
	}
	if v := reflect.ValueOf(res); v.Kind() == reflect.Pointer && v.IsNil() {
		return
	}
	meta := res.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	meta[MetaRequestID] = id
	res.SetMeta(meta)
}
