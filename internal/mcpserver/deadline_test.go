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

package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

// Every request has a deadline, not only tool calls: while the API server does not
// answer, listing instances as resources, reading one and completing a name each
// answer (an error that says what happened) within the call timeout and 2 s, in a
// session and in the stateless revision. Before, they waited as long as the
// connection to the API server did.
func TestResourceRequestsAnswerWithinTheCallTimeoutDuringAnOutage(t *testing.T) {
	url := serve(t, mcpserver.Options{CallTimeout: outageCallTimeout})
	sessions := map[string]*mcp.ClientSession{}
	for _, revision := range outageRevisions {
		cs, refused, err := dial(t, url, token, revision)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%v", refused)
		listTools(t, cs)
		sessions[revision] = cs
	}
	holdAPIServer(t)
	for _, revision := range outageRevisions {
		cs := sessions[revision]
		for name, request := range map[string]func(ctx context.Context) error{
			"resources/list": func(ctx context.Context) error {
				_, err := cs.ListResources(ctx, &mcp.ListResourcesParams{})
				return err
			},
			"resources/read": func(ctx context.Context) error {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resources.InstanceURI("zorp", "SpaceBoot", "default", unique("held"))})
				return err
			},
			"completion/complete": func(ctx context.Context) error {
				_, err := cs.Complete(ctx, &mcp.CompleteParams{
					Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}"},
					Argument: mcp.CompleteParamsArgument{Name: "name", Value: "m"}})
				return err
			},
		} {
			t.Run(revision+"/"+name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 4*outageBound)
				defer cancel()
				start := time.Now()
				_ = request(ctx) // an answer, an error or an empty one: what counts is when
				NewWithT(t).Expect(time.Since(start)).To(BeNumerically("<", outageBound), "%s answered after %s", name, time.Since(start))
			})
		}
	}
}
