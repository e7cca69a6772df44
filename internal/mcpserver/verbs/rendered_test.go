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

package verbs

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// describeHandler is sandbar.class.describe as the server serves it, calling with
// the snapshot *snap holds at each call.
func describeHandler(t *testing.T, snap **catalog.Snapshot) mcp.ToolHandler {
	t.Helper()
	for _, d := range (&Env{}).All() {
		if d.Canonical() == "sandbar.class.describe" {
			return tool.Handler(d, "sandbar_class_describe", func(*mcp.CallToolRequest) (*tool.Call, error) {
				return &tool.Call{Tool: "sandbar_class_describe", Snap: *snap, Bounds: tool.Bounds{Scrub: redact.String}}, nil
			})
		}
	}
	t.Fatal("no sandbar.class.describe")
	return nil
}

func describeCall(t *testing.T, h mcp.ToolHandler) *mcp.CallToolResult {
	t.Helper()
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "sandbar_class_describe",
		Arguments: json.RawMessage(`{"class": "zorp/SpaceBoot"}`)}})
	if err != nil || res.IsError {
		t.Fatalf("sandbar_class_describe: %v %v", err, res)
	}
	return res
}

func snapshotOf(version uint64, description string) *catalog.Snapshot {
	cl := spaceBoot()
	cl.Description = description
	return &catalog.Snapshot{Version: version, Classes: map[string]*catalog.Class{cl.Name: cl}}
}

// A class's description depends on the catalog snapshot alone: every call on one
// snapshot answers the JSON rendered by the first (the same bytes, not encoded
// again); a newer snapshot's calls answer what it holds, and a call that still has
// an older snapshot answers that one's.
func TestAClassDescriptionIsRenderedOncePerSnapshot(t *testing.T) {
	snap := snapshotOf(1, "first")
	h := describeHandler(t, &snap)
	first := describeCall(t, h)
	raw, ok := first.StructuredContent.(json.RawMessage)
	if !ok || !strings.Contains(string(raw), `"description":"first"`) {
		t.Fatalf("structured content = %T %s, want the description as JSON", first.StructuredContent, raw)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res := describeCall(t, h)
			if again, _ := res.StructuredContent.(json.RawMessage); len(again) == 0 || &again[0] != &raw[0] {
				t.Error("a second call on the same snapshot encoded the description again")
			}
			if tool.Text(res) != tool.Text(first) {
				t.Errorf("text %q, want %q", tool.Text(res), tool.Text(first))
			}
		})
	}
	wg.Wait()

	old := snap
	snap = snapshotOf(2, "second")
	if got := tool.Text(describeCall(t, h)); !strings.Contains(got, `"description": "second"`) {
		t.Errorf("after a new snapshot: %s, want the new description", got)
	}
	snap = old
	if got := tool.Text(describeCall(t, h)); !strings.Contains(got, `"description": "first"`) {
		t.Errorf("a call on the older snapshot: %s, want its description", got)
	}
	snap = snapshotOf(3, "third")
	if got := tool.Text(describeCall(t, h)); !strings.Contains(got, `"description": "third"`) {
		t.Errorf("after a newer snapshot: %s, want its description", got)
	}
}
