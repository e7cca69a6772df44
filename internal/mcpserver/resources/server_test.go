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

package resources_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

var boots atomic.Int64

// boot stores a SpaceBoot in the fake cluster, as kubectl would, and answers its
// name.
func boot(t *testing.T, s *mcptest.Server, namespace string, attributes map[string]any) string {
	t.Helper()
	name := fmt.Sprintf("res-boot-%d", boots.Add(1))
	u := &unstructured.Unstructured{Object: map[string]any{"spec": attributes}}
	u.SetAPIVersion("zorp.sandbar.dev/v1")
	u.SetKind("SpaceBoot")
	u.SetNamespace(namespace)
	u.SetName(name)
	if err := s.Cluster.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return name
}

// listed are every page of resources/list, by URI.
func listed(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Resource {
	t.Helper()
	out := map[string]*mcp.Resource{}
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[r.URI] = r
	}
	return out
}

// rpcError is err's JSON-RPC error, or fails the test.
func rpcError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("not a JSON-RPC error: %v", err)
	}
	return rpc
}

// Instances and metamodel objects are resources: listed in the account's namespace
// only, read as JSON or Markdown, and a bad URI says what a good one looks like; at
// both revisions, through a go-sdk client, over the fake cluster.
func TestInstancesAndTheMetamodelAreResources(t *testing.T) {
	s := mcptest.Shared(t)
	for _, revision := range []string{mcptest.SessionRevision, mcptest.StatelessRevision} {
		t.Run(revision, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			cs := s.Client(t, revision)
			name := boot(t, s, mcptest.Home, map[string]any{"name": "Res"})
			mine := resources.InstanceURI("zorp", "SpaceBoot", mcptest.Home, name)
			hidden := resources.InstanceURI("zorp", "SpaceBoot", mcptest.Elsewhere, "untouchable")

			all := listed(t, cs)
			g.Expect(all).To(HaveKey(mine))
			g.Expect(all).NotTo(HaveKey(hidden), "another namespace's instances are not listed")
			g.Expect(all).To(HaveKey(resources.MetaURI(resources.MetaClass, "zorp.spaceboot")))
			g.Expect(all).To(HaveKey(resources.MetaURI(resources.MetaProperty, "footwear.name")))
			g.Expect(all).To(HaveKey(resources.MetaURI(resources.MetaWorkflow, "order.fulfillment")))
			g.Expect(all[mine].MIMEType).To(Equal("application/json"))

			var templates []string
			for tmpl, err := range cs.ResourceTemplates(ctx, nil) {
				g.Expect(err).NotTo(HaveOccurred())
				templates = append(templates, tmpl.URITemplate)
			}
			g.Expect(templates).To(ContainElement("mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}{?format}"))
			g.Expect(templates).NotTo(ContainElement("mcp://sandbar/zorp/Footwear/{namespace}/{name}{?format}"), "an abstract class has no instances")

			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mine})
			g.Expect(err).NotTo(HaveOccurred())
			var v map[string]any
			g.Expect(json.Unmarshal([]byte(res.Contents[0].Text), &v)).To(Succeed())
			g.Expect(v["attributes"]).To(Equal(map[string]any{"name": "Res"}))
			res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mine + "?format=markdown"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Contents[0].MIMEType).To(Equal("text/markdown"))
			g.Expect(res.Contents[0].Text).To(Equal("---\nmetadata:\n  name: " + name + "\nname: Res\n---\n"))
			res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resources.MetaURI(resources.MetaClass, "zorp.spaceboot")})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Contents[0].Text).To(ContainSubstring(`"required": [`))

			_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: hidden})
			g.Expect(rpcError(t, err).Message).To(Equal("Resource not found"), "another namespace reads as not found")
			_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resources.InstanceURI("zorp", "SpaceBoot", mcptest.Home, "missing-boot")})
			g.Expect(rpcError(t, err).Message).To(Equal("Resource not found"))
			_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcp://sandbar/zorp/SpaceBoot/default"})
			rpc := rpcError(t, err)
			g.Expect(rpc.Code).To(Equal(int64(jsonrpc.CodeInvalidParams)))
			g.Expect(rpc.Message).To(ContainSubstring("want mcp://sandbar/<prefix>/<Kind>/<namespace>/<name>"))
			g.Expect(string(rpc.Data)).To(MatchJSON(`{"uri":"mcp://sandbar/zorp/SpaceBoot/default"}`))
		})
	}
	s.CheckHome(t)
}

// Completion offers the instance names and namespaces the account may read, and
// class names for a prompt's class argument.
func TestCompletion(t *testing.T) {
	g := NewWithT(t)
	s := mcptest.Shared(t)
	cs := s.Client(t, mcptest.SessionRevision)
	ctx := context.Background()
	name := boot(t, s, mcptest.Home, map[string]any{"name": "Comp"})
	complete := func(ref *mcp.CompleteReference, arg, value string) []string {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
		g.Expect(err).NotTo(HaveOccurred())
		return res.Completion.Values
	}
	instances := &mcp.CompleteReference{Type: "ref/resource", URI: "mcp://sandbar/zorp/SpaceBoot/{namespace}/{name}"}
	g.Expect(complete(instances, "name", name)).To(Equal([]string{name}))
	g.Expect(complete(instances, "namespace", "")).To(Equal([]string{mcptest.Home}), "only the account's namespace")
	g.Expect(complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "sandbar_workflow_validation_resource"}, "class", "zorp/S")).
		To(Equal([]string{"zorp/SpaceBoot"}))
}
