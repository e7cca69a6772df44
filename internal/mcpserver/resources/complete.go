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

package resources

import (
	"context"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/authorize"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
)

// Complete offers values for the arguments of resource templates (namespace, name)
// and prompts (class, the subject instance, namespace), limited to what the caller may use:
// instance names only to an account that may read them as resources/list lists them
// (its tool permissions allow entity.find, the namespace is one of its own, and its
// Kubernetes identity may list the class there).
func (s *Service) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	acct := caller.Of(req.GetExtra())
	p := req.Params
	snap := s.store.Load()
	var values []string
	nsOf := func() string {
		if p.Context != nil && p.Context.Arguments["namespace"] != "" {
			return p.Context.Arguments["namespace"]
		}
		if acct != nil {
			return acct.Namespace
		}
		return ""
	}
	instancesOf := func(ident string) []string {
		cl := snap.FindClass(ident)
		if cl == nil || cl.InstanceAPI == nil || !s.guard.May(acct, authorize.InstancesVerb) || !authorize.NamespaceAllowed(acct, nsOf()) ||
			(s.Reads != nil && s.Reads(ctx, req, "completion/complete", snap, cl, nsOf(), "") != nil) ||
			s.may(ctx, acct, "list", cl, nsOf(), "") != nil {
			return nil
		}
		return s.names(ctx, cl, nsOf(), p.Argument.Value)
	}
	switch {
	case p.Argument.Name == "namespace":
		values = authorize.Namespaces(acct)
	case p.Argument.Name == "class":
		values = classIdents(snap)
	case p.Ref != nil && p.Ref.Type == "ref/resource" && p.Argument.Name == "name":
		if rest, ok := strings.CutPrefix(p.Ref.URI, uriBase); ok {
			parts := strings.Split(rest, "/")
			if len(parts) >= 2 {
				values = instancesOf(parts[0] + "/" + parts[1])
			}
		}
	case p.Ref != nil && p.Ref.Type == "ref/prompt":
		workflow := s.promptWorkflow(p.Ref.Name)
		if w, ok := snap.Workflows[workflow]; ok && w.Spec.SubjectClass != "" {
			if cl, ok := snap.Classes[w.Spec.SubjectClass]; ok {
				values = instancesOf(cl.Ident())
			}
		}
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, p.Argument.Value) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	total := len(out)
	if len(out) > 100 {
		out = out[:100]
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: append([]string{}, out...), Total: total, HasMore: total > len(out)}}, nil
}

func classIdents(snap *catalog.Snapshot) []string {
	var out []string
	for _, name := range snap.ClassNames() {
		out = append(out, snap.Classes[name].Ident())
	}
	return out
}

// completionScan bounds how many instances a completion looks through.
const completionScan = 10000

// names are the names of a class's instances in a namespace that start with prefix,
// listed from the API server (metadata only, a page at a time).
func (s *Service) names(ctx context.Context, cl *catalog.Class, ns, prefix string) []string {
	var out []string
	token := ""
	for scanned := 0; scanned < completionScan; {
		page := &metav1.PartialObjectMetadataList{}
		page.SetGroupVersionKind(cl.GVK().GroupVersion().WithKind(cl.GVK().Kind + "List"))
		if err := s.reader.List(ctx, page, client.InNamespace(ns), client.Limit(instancePage), client.Continue(token)); err != nil {
			return out
		}
		for _, m := range page.Items {
			if strings.HasPrefix(m.Name, prefix) {
				out = append(out, m.Name)
			}
		}
		scanned += len(page.Items)
		if token = page.Continue; token == "" {
			break
		}
	}
	return out
}
