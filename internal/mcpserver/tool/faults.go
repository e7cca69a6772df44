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
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// DefaultDeadline bounds a tool call unless the server is told otherwise.
const DefaultDeadline = 10 * time.Second

// retryAfter is how long a caller is asked to wait before it tries again, when the
// API server does not say.
const retryAfter = 5

// Unavailable is what to tell a caller when the Kubernetes API server did not
// answer within the call's deadline, or refused for a reason of its own (overload,
// a restart, an unreachable etcd): what happened, whether the call may have changed
// something, and what to do next. ok is false for any other error.
func Unavailable(ctx context.Context, err error, d *Def, c *Call) (msg string, ok bool) {
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
		msg = "the Kubernetes API server did not answer within " + deadlineOf(d, c).String()
	case apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err):
		msg = "the Kubernetes API server could not serve the request (" + statusMessage(err) + ")"
	case utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err):
		msg = "the Kubernetes API server cannot be reached"
	default:
		return "", false
	}
	wait := retryAfter
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		wait = s
	}
	style := NameStyle("")
	if c != nil {
		style = c.Style
	}
	switch {
	case d.LongRunning:
		// An export changes no instance, but it starts a task.
		msg += fmt.Sprintf(". The task may or may not have been started: look with %s before you call %s again (after %d s).",
			Encode(style, "sandbar.tasks.list"), callName(c), wait)
	case d.ReadOnly:
		msg += fmt.Sprintf(". Nothing was changed; call %s again after %d s.", callName(c), wait)
	default:
		msg += fmt.Sprintf(". The change may or may not have been made: look with %s (or read the instance's resource) "+
			"before you call %s again (after %d s).", Encode(style, "sandbar.entity.find"), callName(c), wait)
	}
	return msg, true
}

// deadlineOf is the deadline of a call of d.
func deadlineOf(d *Def, c *Call) time.Duration {
	if c == nil || c.Deadline <= 0 {
		return 0
	}
	return c.Deadline + d.Waits
}

func callName(c *Call) string {
	if c == nil {
		return "the tool"
	}
	return c.Tool
}

// statusMessage is the API server's own word on err.
func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
