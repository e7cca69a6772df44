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

package sdkgap

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const aheadPath = "internal/mcpserver/sdkgap/ahead"

// countedSchema is an input schema that counts how often it is encoded.
type countedSchema struct{ n atomic.Int64 }

func (s *countedSchema) MarshalJSON() ([]byte, error) {
	s.n.Add(1)
	return []byte(`{"type":"object"}`), nil
}

// tools/list rendered once: the SDK encodes every tool of a list anew for each
// tools/list, the same tools for the same client.
func TestCanarySDKEncodesEveryToolsListAnew(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "canary", Version: "0"}, nil)
	schema := &countedSchema{}
	s.AddTool(&mcp.Tool{Name: "counted", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	r := connect(t, s)
	if _, rpcErr := r.call("tools/list", `{}`); rpcErr != nil {
		t.Fatalf("tools/list: %v", rpcErr)
	}
	first := schema.n.Load()
	if _, rpcErr := r.call("tools/list", `{}`); rpcErr != nil {
		t.Fatalf("tools/list: %v", rpcErr)
	}
	if schema.n.Load() == first {
		caughtUp(t, "keeps a tools/list answer rendered (the second list encoded no schema)", "ahead.ListCache", aheadPath+"/cache.go")
	}
}

// Answers ahead of the SDK's transport: each time the SDK decodes a message it
// allocates a 32 KiB buffer (segmentio/encoding's decoder), several times a request,
// so that a ping costs a session of the Streamable HTTP handler a hundred kilobytes
// and more. ahead.Direct answers a live session's kept tools/list, ping and
// tasks/get without it. The bounds are far below what the SDK allocates now and
// far above what a decoder that does not allocate a buffer would.
func TestCanarySDKsDecoderAllocatesABufferPerMessage(t *testing.T) {
	ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`)
	const runs = 200
	perDecode := allocated(runs, func() {
		if _, err := jsonrpc.DecodeMessage(ping); err != nil {
			t.Fatal(err)
		}
	})
	if perDecode < 16<<10 {
		caughtUp(t, fmt.Sprintf("decodes a ping in %d bytes", perDecode), "ahead.Direct", aheadPath+"/direct.go")
	}

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(nil) }, nil)
	rec := post(h, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+sessionRevision+`","capabilities":{},"clientInfo":{"name":"canary","version":"0"}}}`, nil)
	id := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", rec.Code, id)
	}
	header := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": sessionRevision}
	post(h, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, header)
	perPing := allocated(50, func() {
		if rec := post(h, string(ping), header); rec.Code != http.StatusOK {
			t.Fatalf("ping: %d %s", rec.Code, rec.Body)
		}
	})
	if perPing < 64<<10 {
		caughtUp(t, fmt.Sprintf("serves a session's ping in %d bytes", perPing), "ahead.Direct", aheadPath+"/direct.go")
	}
}

// allocated is the heap bytes f allocates a run, on average over runs (what other
// goroutines allocate meanwhile counts too: it can only raise the figure).
func allocated(runs int, f func()) uint64 {
	f() // what the first run sets up once
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}
