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

package contain

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestAnInformerHandlerThatPanicsCostsItsEventOnly(t *testing.T) {
	before := testutil.ToFloat64(Panics.WithLabelValues("test-informer"))
	var seen atomic.Int32
	h := Handler("test-informer", toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if obj == nil {
				panic("a bad event")
			}
			seen.Add(1)
		},
		UpdateFunc: func(any, any) { panic("always") },
		DeleteFunc: func(any) { panic("always") },
	})
	h.OnAdd(nil, false)
	h.OnAdd("good", false)
	h.OnUpdate(1, 2)
	h.OnDelete(1)
	if seen.Load() != 1 {
		t.Errorf("the good event after a bad one was handled %d times", seen.Load())
	}
	if got := testutil.ToFloat64(Panics.WithLabelValues("test-informer")) - before; got != 3 {
		t.Errorf("%v panics counted, not 3", got)
	}
}

func TestALoopThatPanicsStartsAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan int, 3)
	var n atomic.Int32
	Loop(ctx, "test-loop", func(ctx context.Context) {
		i := int(n.Add(1))
		runs <- i
		if i < 3 {
			panic("again")
		}
		<-ctx.Done()
	})
	for want := 1; want <= 3; want++ {
		select {
		case got := <-runs:
			if got != want {
				t.Fatalf("run %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the loop did not start run %d again", want)
		}
	}
}

func TestAnHTTPHandlerThatPanicsAnswers500(t *testing.T) {
	h := HTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("a bug") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"code":-32603`) {
		t.Errorf("HTTP %d %s", rec.Code, rec.Body)
	}
	defer func() {
		if v := recover(); v != http.ErrAbortHandler { //nolint:errorlint // as net/http compares it
			t.Errorf("http.ErrAbortHandler did not go on: %v", v)
		}
	}()
	HTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
}

func TestAMethodThatPanicsAnswersAnInternalError(t *testing.T) {
	h := Middleware(func(context.Context, string, mcp.Request) (mcp.Result, error) { panic("a bug") })
	_, err := h(context.Background(), "tools/call", nil)
	rpc, ok := err.(*jsonrpc.Error)
	if !ok || rpc.Code != jsonrpc.CodeInternalError {
		t.Errorf("%v", err)
	}
}
