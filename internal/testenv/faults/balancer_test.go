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

package faults_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandbar-dev/sandbar/internal/testenv/faults"
)

// The balancer and the pool leave a request's body to the replica while its answer
// goes back: a replica that begins its answer before it has read the whole request
// gets the rest, and its answer reaches the client whole. An HTTP/1 server that
// writes an answer drains and closes the request's body unless its handler says it
// reads both at once; a reverse proxy still sending that body to the replica then
// loses it, and cuts its connection to the replica in the middle of the answer
// (golang/go#40747). Here, without it, the answer does not even begin: the proxy's
// server waits to drain a body that the proxy is still reading.
func TestAReplicaAnswersWhileItReadsTheRequest(t *testing.T) {
	// The replica says it is there, then reads the request and echoes it.
	replica := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "reading\n")
		_ = http.NewResponseController(w).Flush()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			_, _ = io.WriteString(w, "read: "+err.Error())
			return
		}
		_, _ = w.Write(body)
	}))
	defer replica.Close()

	lb, stop, err := faults.Balance(replica.URL+"/mcp", replica.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pool, err := faults.NewPool(replica.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	probed, tick := time.After(10*time.Second), time.NewTicker(10*time.Millisecond)
	defer tick.Stop()
	for !pool.Ready(0) {
		select {
		case <-probed:
			t.Fatal("the pool did not find the replica ready")
		case <-tick.C:
		}
	}

	for _, tc := range []struct{ name, url string }{{"balancer", lb}, {"pool", pool.URL}} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 3 { // on one connection the client keeps alive
				request := strings.Repeat("{}", 1000)
				body, send := io.Pipe()
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				context.AfterFunc(ctx, func() { _ = send.CloseWithError(ctx.Err()) }) // the client stops sending
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, tc.url, body)
				if err != nil {
					t.Fatal(err)
				}
				req.ContentLength = int64(len(request))
				resp, err := http.DefaultClient.Do(req) // the answer begins before the request is sent
				if err != nil {
					t.Fatalf("request %d: the answer did not begin: %v", i, err)
				}
				answer := bufio.NewReader(resp.Body)
				if line, err := answer.ReadString('\n'); line != "reading\n" {
					t.Fatalf("request %d: the answer begins with %q (%v)", i, line, err)
				}
				go func() {
					_, _ = io.WriteString(send, request)
					_ = send.Close()
				}()
				rest, err := io.ReadAll(answer)
				resp.Body.Close()
				if err != nil || string(rest) != request {
					t.Fatalf("request %d: the replica read %d of %d bytes of the request (%v)", i, len(rest), len(request), err)
				}
			}
		})
	}
}
