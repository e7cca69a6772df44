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
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver"
	"github.com/sandbar-dev/sandbar/internal/policy"
)

// tenPolicies match every call of the suite's account on zorp/SpaceBoot, each with
// rules over its arguments and identity that do not apply: what a call costs when
// every policy must be evaluated to let it through.
func tenPolicies() *policy.Store {
	var ps []*policy.Policy
	for i := range 10 {
		ps = append(ps, policy.Compile("", fmt.Sprintf("bench-%d", i), 1, metav1alpha1.CallPolicySpec{
			Match: metav1alpha1.CallMatch{Classes: []string{"zorp/Footwear"}, Accounts: []string{"default/*"}},
			Rules: []metav1alpha1.CallRule{
				{Name: "price", Action: metav1alpha1.ActionDeny, Expression: "has(call.attributes.price) && call.attributes.price > 1000000"},
				{Name: "who", Action: metav1alpha1.ActionDeny, Expression: "identity.user == 'nobody' || 'blocked' in identity.groups"},
			}}))
	}
	s := &policy.Store{}
	s.Publish(policy.NewSet(ps))
	return s
}

// BenchmarkCallThroughTenPoliciesInTurns is a read of a class (sandbar_class_describe,
// answered from the catalog: the cheapest call, so the policies' share is the
// largest) through ten matching policies against the same call through none, in
// turns which goes first; ratio is the first's mean over the second's.
func BenchmarkCallThroughTenPoliciesInTurns(b *testing.B) {
	callsInTurns(b, "sandbar_class_describe", map[string]any{"class": "zorp/SpaceBoot"})
}

// BenchmarkValidateThroughTenPoliciesInTurns is the same for a call that writes
// nothing but asks the API server (sandbar_entity_validate: a create in dry run).
func BenchmarkValidateThroughTenPoliciesInTurns(b *testing.B) {
	callsInTurns(b, "sandbar_entity_validate", map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": "b", "price": 12}})
}

func callsInTurns(b *testing.B, name string, args map[string]any) {
	sessions := [2]*mcp.ClientSession{
		loadClients(b, serve(b, mcpserver.Options{Policies: tenPolicies()}), token, 1)[0],
		loadClients(b, serve(b, mcpserver.Options{Policies: &policy.Store{}}), token, 1)[0],
	}
	var lat [2][]time.Duration
	call := func(k int) {
		start := time.Now()
		res, err := sessions[k].CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
		lat[k] = append(lat[k], time.Since(start))
	}
	for range 20 {
		call(0)
		call(1)
	}
	lat = [2][]time.Duration{}
	i := 0
	for b.Loop() {
		call(i % 2)
		call(1 - i%2)
		i++
	}
	reportInTurns(b, lat)
}
