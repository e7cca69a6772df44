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

// Package govern applies the call policies to tool calls: the gate every
// tools/call passes before its tool runs (tool.Gate), which sees the call as the
// policies do (package policy), takes their decision, notes it for the audit event
// and the span, and counts it in the policies' status.
package govern

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/identity"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/caller"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/policy"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Gate applies the call policies of a store.
type Gate struct {
	policies *policy.Store
	// namespaces reads the labels of the namespace a call acts in, for policies
	// with a namespaceSelector.
	namespaces client.Reader
	tally      *Tally
	now        func() time.Time
	// approvals hold the calls a RequireApproval rule matches.
	approvals *Approvals
}

// New is the gate of the policies in store; namespaces reads Namespaces (from the
// manager's cache).
func New(store *policy.Store, namespaces client.Reader) *Gate {
	return &Gate{policies: store, namespaces: namespaces, tally: newTally(), now: time.Now}
}

// Tally is what the gate counted, to be written into the policies' status.
func (g *Gate) Tally() *Tally { return g.tally }

// Check is the tool.Gate: nil lets the call run.
func (g *Gate) Check(ctx context.Context, d *tool.Def, c *tool.Call, raw json.RawMessage) error {
	if g == nil || g.policies == nil {
		return nil
	}
	set := g.policies.Load()
	if set.Len() == 0 || c.Account == nil {
		return nil
	}
	// A tool whose verb is its own (it declares no acts) and that no policy's tools
	// or verbs name is not read further: most reads.
	if !d.DeclaresActs() && !set.MayMatch(c.Tool, d.Canonical(), VerbOf(d)) {
		return nil
	}
	var args map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &args) != nil {
		return nil // not an object: the tool refuses it before it does anything
	}
	acts, declared, err := d.ActsOf(c, args)
	if err != nil {
		// Refused, not let through: a part of a call the policies cannot read (an
		// item of an import whose document does not parse) might still be acted on.
		return tool.Fail("the call policies cannot read this call, so it is refused: %v", err)
	}
	if !declared {
		acts = []tool.Act{genericAct(args)}
	}
	id := identityOf(c.Account, c.Client)
	// The call an Approval approved passes the rule that held it (and is not
	// counted as held again); every other rule decides as on any call.
	approved := approvedDigest(ctx) != "" && approvedDigest(ctx) == Digest(c.Account, d.Canonical(), raw)
	var held *policy.Outcome
	seen := &lookups{argumentsFit: policy.Fits(args)}
	for _, a := range acts {
		pc, err := g.callOf(ctx, set, seen, d, c, args, a)
		if err != nil {
			return err
		}
		decision, err := g.decide(ctx, set, pc, id, c.Revision, c.Tool, a.Object, approved)
		if err != nil {
			return err
		}
		if o, denied := decision.Denial(); denied {
			return tool.Fail("forbidden: %s", o.Text())
		}
		if o, ok := decision.Hold(); ok && held == nil {
			held = &o
		}
	}
	if held == nil || approved {
		return nil // nothing holds it, or this is the call its Approval approved
	}
	if g.approvals == nil {
		return tool.Fail("forbidden: %s holds this call for a person's approval, and this server takes no approvals", where(*held))
	}
	return g.approvals.hold(ctx, d, c, raw, args, *held)
}

// decide takes the decision of the policies on one call.
func (g *Gate) decide(ctx context.Context, set *policy.Set, pc *policy.Call, id *policy.Identity, revision, what string,
	object func(context.Context) (map[string]any, error), approved bool) (*policy.Decision, error) {
	matched := set.Matching(pc, id)
	if len(matched) == 0 {
		return &policy.Decision{}, nil
	}
	if object != nil && slices.ContainsFunc(matched, func(p *policy.Policy) bool { return p.UsesObject }) {
		obj, err := object(ctx)
		if err != nil {
			return nil, err // the tool would meet the same: not found, forbidden
		}
		pc.Object = obj
	}
	decision := policy.Decide(matched, pc, id, policy.Request{Revision: revision, Time: g.now()})
	g.record(ctx, what, id, decision, approved)
	return decision, nil
}

// Read is the decision on a read made by another method than a tool: an
// instance read as a resource, the instances listed as resources or offered as
// completions (method names it). It is a read of cl's instances in ns (name: one
// of them, "" for any), a class of snap; a denial is a JSON-RPC error that says why.
func (g *Gate) Read(ctx context.Context, req mcp.Request, method string, snap *catalog.Snapshot, cl *catalog.Class, ns, name string) error {
	if g == nil || g.policies == nil {
		return nil
	}
	set := g.policies.Load()
	acct := caller.Of(req.GetExtra())
	if set.Len() == 0 || acct == nil || cl == nil {
		return nil
	}
	pc := &policy.Call{Tool: method, Canonical: method, Verb: policy.VerbRead, Verbs: []string{policy.VerbRead}, Name: name,
		Namespace: cmp.Or(ns, acct.Namespace), Class: cl.Ident(), Classes: classesOf(cl, snap)}
	if err := g.namespaceLabels(ctx, set, &lookups{}, pc); err != nil {
		return err
	}
	var client, revision string
	if r, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok && r.ClientInfo() != nil {
		client = r.ClientInfo().Name
	}
	if r, ok := req.(interface{ ProtocolVersion() string }); ok {
		revision = r.ProtocolVersion()
	}
	decision, err := g.decide(ctx, set, pc, identityOf(acct, client), revision, method, nil, false)
	if err != nil {
		return err
	}
	if o, denied := decision.Denial(); denied {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "forbidden: " + o.Text()}
	}
	if o, held := decision.Hold(); held {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("forbidden: %s holds this read for a person's approval, "+
			"and only a tool call can wait for one: read it with a tool", where(o))}
	}
	return nil
}

// genericAct is what a tool that declares no acts does: its class, namespace and
// name arguments, if it has them.
func genericAct(args map[string]any) tool.Act {
	a := tool.Act{}
	a.Class, _ = args["class"].(string)
	a.Namespace, _ = args["namespace"].(string)
	a.Name, _ = args["name"].(string)
	if a.Name == "" {
		a.Name, _ = args["taskId"].(string)
	}
	return a
}

// callOf is a call as the policies see it.
func (g *Gate) callOf(ctx context.Context, set *policy.Set, seen *lookups, d *tool.Def, c *tool.Call, args map[string]any, a tool.Act) (*policy.Call, error) {
	pc := &policy.Call{Tool: c.Tool, Canonical: d.Canonical(), Verb: a.Verb, Name: a.Name, Arguments: args, ArgumentsFit: seen.argumentsFit,
		Attributes: a.Attributes, Confirmed: c.Asking.Confirmed, Namespace: cmp.Or(a.Namespace, c.Account.Namespace)}
	if pc.Verb == "" {
		pc.Verb = VerbOf(d)
	}
	pc.Verbs = append([]string{pc.Verb}, a.AlsoVerbs...)
	if a.Class != "" && c.Snap != nil {
		classes, ok := seen.classes[a.Class]
		if !ok {
			classes = classesOf(c.Snap.FindClass(a.Class), c.Snap)
			seen.classes = setKey(seen.classes, a.Class, classes)
		}
		if len(classes) > 0 {
			pc.Class, pc.Classes = classes[0], classes
		}
	}
	if err := g.namespaceLabels(ctx, set, seen, pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// lookups are what the acts of one call share: the classes an act's class names
// and the labels of a namespace (an import of thousands of items names a few
// classes, in one namespace).
type lookups struct {
	classes map[string][]string
	labels  map[string]map[string]string
	// argumentsFit: the call's arguments are within the sizes the policies' cost
	// estimates assume (measured once, not for each act).
	argumentsFit bool
}

func setKey[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// classesOf are a class's ident and those of every class it inherits from; none
// for no class.
func classesOf(cl *catalog.Class, snap *catalog.Snapshot) []string {
	if cl == nil {
		return nil
	}
	out := []string{cl.Ident()}
	for _, anc := range cl.Ancestors {
		if p := snap.Classes[anc]; p != nil {
			out = append(out, p.Ident())
		}
	}
	return out
}

// namespaceLabels reads the labels of the call's namespace, when a policy of the
// set selects namespaces by them.
func (g *Gate) namespaceLabels(ctx context.Context, set *policy.Set, seen *lookups, pc *policy.Call) error {
	if !set.SelectsNamespaces() {
		return nil
	}
	labels, ok := seen.labels[pc.Namespace]
	if !ok {
		var ns corev1.Namespace
		if err := g.namespaces.Get(ctx, client.ObjectKey{Name: pc.Namespace}, &ns); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("reading the labels of namespace %s for the call policies: %w", pc.Namespace, err)
		}
		labels = ns.Labels
		seen.labels = setKey(seen.labels, pc.Namespace, labels)
	}
	pc.NamespaceLabels = labels
	return nil
}

// VerbOf is the policy verb of a tool that declares no acts.
func VerbOf(d *tool.Def) string {
	switch d.Canonical() {
	case "sandbar.schema.define-class", "sandbar.schema.define-property", "sandbar.workflow.define":
		return policy.VerbDefine
	case "sandbar.workflow.start-process":
		return policy.VerbStart
	case "sandbar.workflow.transition":
		return policy.VerbTransition
	case "sandbar.tasks.cancel", "sandbar.validation.cancel":
		return policy.VerbCancel
	case "sandbar.project.export":
		return policy.VerbExport
	case "sandbar.project.import":
		return policy.VerbImport
	case "sandbar.validation.start", "sandbar.validation.run", "sandbar.validation.retry", "sandbar.class.validate-all-instances":
		return policy.VerbValidate
	case "sandbar.entity.create":
		return policy.VerbCreate
	case "sandbar.entity.update":
		return policy.VerbUpdate
	case "sandbar.entity.delete":
		return policy.VerbDelete
	}
	if strings.HasPrefix(d.Canonical(), "sandbar.class.") && !d.ReadOnly {
		return policy.VerbCreate // a class's own create tool
	}
	if d.ReadOnly {
		return policy.VerbRead
	}
	return d.Name
}

// identityOf is who calls, as the policies see it: the account, and the
// Kubernetes identity it acts as.
func identityOf(a *catalog.Account, client string) *policy.Identity {
	id := &policy.Identity{Account: a.Namespace + "/" + a.Name, Client: client, User: identity.User(a)}
	if id.User != "" {
		id.Groups = identity.Groups(a)
	}
	return id
}

// record notes a decision on a call of what (a tool, or a method) for the
// request's audit event and span, and counts it.
func (g *Gate) record(ctx context.Context, what string, id *policy.Identity, d *policy.Decision, approved bool) {
	who := id.Account
	if strings.HasPrefix(id.Account, "oauth_") || strings.Contains(id.Account, "/oauth_") {
		who = id.User // a person: their user names them, the account is the server's
	}
	for _, p := range d.Matched {
		g.tally.matched(p)
	}
	for _, o := range d.Outcomes {
		mode := ""
		switch {
		case !o.Enforced:
			mode = " (audit only)"
		case approved && o.Holds():
			tool.NotePolicy(ctx, where(o)+": approved")
			continue // counted when it held the call
		}
		tool.NotePolicy(ctx, where(o)+": "+o.Action+mode)
		g.tally.decided(o, metav1alpha1.PolicyDecision{Time: metav1.NewTime(g.now().UTC().Truncate(time.Second)), Tool: what, Identity: who, Rule: o.Rule, Action: o.Action})
	}
}
