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

package transport

import (
	"net/http"
	"strings"
)

// SDK gap (the register: internal/mcpserver/sdkgap/doc.go): the helpers of the
// workarounds beside it (json.go, ../ahead); it goes with the last of them.

// Accept is what an Accept header names of the media types a Streamable HTTP
// POST is answered in.
type Accept struct {
	// JSON: application/json. EventStream: text/event-stream. AnyText: text/*.
	JSON, EventStream, AnyText bool
}

// Stream is true when the client takes server-sent events.
func (a Accept) Stream() bool { return a.EventStream || a.AnyText }

// AcceptOf reads the Accept headers of a request.
func AcceptOf(h http.Header) Accept {
	var a Accept
	for _, v := range h.Values("Accept") {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				a.JSON = true
			case "text/event-stream":
				a.EventStream = true
			case "text/*":
				a.AnyText = true
			}
		}
	}
	return a
}

// Recorder notes the status of the answer written through it.
type Recorder struct {
	http.ResponseWriter
	// Code is the status written: 0 until a header, a body or a flush is.
	Code int
}

func (r *Recorder) WriteHeader(code int) {
	if r.Code == 0 {
		r.Code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *Recorder) Write(p []byte) (int, error) {
	if r.Code == 0 {
		r.Code = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// Flush keeps server-sent event streams working through the recorder.
func (r *Recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		if r.Code == 0 {
			r.Code = http.StatusOK
		}
		f.Flush()
	}
}

func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Status is the status the client got: 200 when nothing set another.
func (r *Recorder) Status() int {
	if r.Code == 0 {
		return http.StatusOK
	}
	return r.Code
}
