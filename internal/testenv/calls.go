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

package testenv

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
)

// Calls makes n tool calls from all sessions at once, each session calling again
// as soon as it has its answer, as the load benchmarks do, and gives the wall time
// over them and the latency of each. call gives each call's params (the SDK may
// change them: one each). An error result, or one check refuses, stops the calls
// and is the error.
func Calls(sessions []*mcp.ClientSession, n int, call func() *mcp.CallToolParams, check func(*mcp.CallToolResult) error) (time.Duration, []time.Duration, error) {
	var next atomic.Int64
	lat := make([][]time.Duration, len(sessions))
	errs := make(chan error, len(sessions))
	var wg sync.WaitGroup
	start := time.Now()
	for i, cs := range sessions {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				t := time.Now()
				params := call()
				res, err := cs.CallTool(context.Background(), params)
				if err == nil && res.IsError {
					err = fmt.Errorf("%s: %s", params.Name, tool.Text(res))
				}
				if err == nil && check != nil {
					err = check(res)
				}
				if err != nil {
					errs <- err
					return
				}
				lat[i] = append(lat[i], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return elapsed, all, <-errs
}
