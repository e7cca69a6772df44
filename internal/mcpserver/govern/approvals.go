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

package govern

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/process"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/redact"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/policy"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=approvals,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=meta.sandbar.dev,resources=approvals/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch

// Executor runs a tool call as an account, as the server serves the tool now: the
// call an Approval held, once approved. The context says which call was approved
// (Approved), so that the policy that held it lets it through, and no other.
type Executor func(ctx context.Context, acct *catalog.Account, tool string, args json.RawMessage) (*mcp.CallToolResult, error)

// Approvals holds calls for people's approval and runs them once approved: the
// Approval objects (made with the manager's rights, in the namespace of the
// caller's tasks), the tasks that wait (approval processes, started as the caller),
// and the runner that follows the people's decisions.
type Approvals struct {
	// client writes with the manager's rights; reader reads past the cache.
	client    client.Client
	reader    client.Reader
	processes *process.Service
	store     *catalog.Store
	run       Executor
	now       func() time.Time

	mu sync.Mutex
	// bound is when the admission policy of approvals was last seen bound, and
	// checked when it was last looked for.
	bound, checked time.Time
	// running are the approvals this replica runs now.
	running map[string]bool
}

// NewApprovals makes the approvals of a server.
func NewApprovals(c client.Client, reader client.Reader, processes *process.Service, store *catalog.Store, run Executor) *Approvals {
	return &Approvals{client: c, reader: reader, processes: processes, store: store, run: run, now: time.Now, running: map[string]bool{}}
}

// Approvals makes the gate hold the calls a RequireApproval rule matches (without,
// it refuses them, saying approvals are not served).
func (g *Gate) Approvals(a *Approvals) { g.approvals = a }

type approvedKey struct{}

// Approved marks a call as the one an Approval approved (its digest): the rule that
// held it lets it run.
func Approved(ctx context.Context, digest string) context.Context {
	return context.WithValue(ctx, approvedKey{}, digest)
}

func approvedDigest(ctx context.Context) string {
	d, _ := ctx.Value(approvedKey{}).(string)
	return d
}

// Digest is the digest of a call: who made it, the tool, and its arguments in a
// canonical form (keys sorted, numbers and strings as Go spells them).
func Digest(acct *catalog.Account, canonical string, args json.RawMessage) string {
	var v any
	if len(args) > 0 {
		_ = json.Unmarshal(args, &v)
	}
	b, _ := json.Marshal(struct {
		V         int      `json:"v"`
		Namespace string   `json:"namespace"`
		Account   string   `json:"account"`
		User      string   `json:"user"`
		Groups    []string `json:"groups"`
		Tool      string   `json:"tool"`
		Arguments any      `json:"arguments"`
	}{1, acct.Namespace, acct.Name, acct.User, acct.Groups, canonical, v})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// admissionWindow is how long a check of the admission policy of approvals is
// trusted.
const admissionWindow = 10 * time.Second

// inForce says whether the admission policy that binds a decision to the person
// who makes it is installed and bound: a ValidatingAdmissionPolicy labelled
// meta.sandbar.dev/guards=approvals, and a binding of it that denies. Without it,
// anyone who may patch an Approval could write a decision in another's name, so no
// call is held and no decision is read. It is asked of the API server now when
// fresh (before an approved call runs: an unbinding within the window would
// otherwise go unseen).
func (a *Approvals) inForce(ctx context.Context, fresh bool) (bool, error) {
	a.mu.Lock()
	if !fresh && a.now().Sub(a.checked) < admissionWindow {
		ok := a.bound.Equal(a.checked)
		a.mu.Unlock()
		return ok, nil
	}
	a.mu.Unlock()
	var policies admissionv1.ValidatingAdmissionPolicyList
	if err := a.reader.List(ctx, &policies, client.MatchingLabels{metav1alpha1.LabelGuards: "approvals"}); err != nil {
		return false, fmt.Errorf("reading the admission policy of approvals: %w", err)
	}
	var names []string
	for _, p := range policies.Items {
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy == admissionv1.Fail {
			names = append(names, p.Name)
		}
	}
	ok := false
	if len(names) > 0 {
		var bindings admissionv1.ValidatingAdmissionPolicyBindingList
		if err := a.reader.List(ctx, &bindings); err != nil {
			return false, fmt.Errorf("reading the bindings of the admission policy of approvals: %w", err)
		}
		for _, b := range bindings.Items {
			if slices.Contains(names, b.Spec.PolicyName) && slices.Contains(b.Spec.ValidationActions, admissionv1.Deny) &&
				b.Spec.MatchResources == nil && b.Spec.ParamRef == nil {
				ok = true
			}
		}
	}
	now := a.now()
	a.mu.Lock()
	a.checked = now
	if ok {
		a.bound = now
	}
	a.mu.Unlock()
	return ok, nil
}

// notInForce is what a caller, and an Approval, are told while the admission policy
// of approvals is missing.
const notInForce = "approvals are off: the admission policy that binds a decision to the person who makes it " +
	"(sandbar-approvals: config/admission, the chart's admissionPolicies) is not installed, so no decision could be trusted"

// hold holds a call for approval: its task (an approval process, started as the
// caller), and its Approval. The same call made again while it waits is answered
// with the same task. The answer is a domain error that says what waits and how to
// follow it; a task-augmented call is answered with the task.
func (a *Approvals) hold(ctx context.Context, d *tool.Def, c *tool.Call, raw json.RawMessage, args map[string]any, o policy.Outcome) error {
	if ok, err := a.inForce(ctx, false); err != nil {
		return err
	} else if !ok {
		return tool.Fail("forbidden: %s holds this call for a person's approval, but %s", where(o), notInForce)
	}
	digest := Digest(c.Account, d.Canonical(), raw)
	home := c.Account.Home()
	if ap, p, err := a.waiting(ctx, home, digest); err != nil {
		return err
	} else if ap != nil {
		process.Adopt(ctx, p)
		return tool.Fail("%s", heldText(ap, p, c))
	}
	in := builtin.HeldInput{Tool: c.Tool, Arguments: args, Digest: digest, Account: builtin.HeldAccount{
		Namespace: c.Account.Namespace, Name: c.Account.Name, User: c.Account.User, Groups: c.Account.Groups,
		Tools: c.Account.Permissions.Tools, Clients: c.Account.Clients, TasksNamespace: c.Account.TasksNamespace}}
	p, err := a.processes.Start(ctx, c.Account, builtin.Approval, in, nil)
	if err != nil {
		return err
	}
	id := identityOf(c.Account, c.Client)
	shown, _ := json.Marshal(redact.Value(args))
	req := o.Approval
	ap := &metav1alpha1.Approval{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name,
			Labels: map[string]string{metav1alpha1.LabelCallDigest: digest[:63]},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: metav1alpha1.GroupVersion.String(), Kind: "WorkflowProcess",
				Name: p.Name, UID: p.UID}}},
		Spec: metav1alpha1.ApprovalSpec{
			Call: metav1alpha1.HeldCall{Tool: c.Tool, Canonical: d.Canonical(), Arguments: cut(string(shown), 65536), Digest: digest,
				Account: id.Account, User: id.User, Groups: id.Groups, TaskID: p.Name},
			Policy: metav1alpha1.HoldingPolicy{Kind: o.Policy.Kind(), Namespace: o.Policy.Namespace, Name: o.Policy.Name, Rule: o.Rule,
				Message: cut(o.Message, 1024)},
			Approvers: metav1alpha1.ApproverSet{Users: req.Users, Groups: req.Groups, Count: max(req.Count, 1)},
			ExpiresAt: metav1.NewTime(a.now().Add(policy.Wait(req)).UTC().Truncate(time.Second)),
		},
	}
	if err := a.client.Create(ctx, ap); err != nil {
		_ = a.client.Delete(context.WithoutCancel(ctx), p) // the task would wait for nothing
		return fmt.Errorf("making the Approval of a held call: %w", err)
	}
	// The runner writes the same on the Approval's first event, if this does not take.
	_ = a.setStatus(ctx, ap, metav1alpha1.ApprovalPending, waitingFor(ap, nil), nil, "")
	tool.NoteProcess(ctx, p.Namespace, p.Name)
	return tool.Fail("%s", heldText(ap, p, c))
}

// waiting is the Approval (and its task) that the same call waits for, if any.
func (a *Approvals) waiting(ctx context.Context, namespace, digest string) (*metav1alpha1.Approval, *metav1alpha1.WorkflowProcess, error) {
	var list metav1alpha1.ApprovalList
	if err := a.reader.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{metav1alpha1.LabelCallDigest: digest[:63]}); err != nil {
		return nil, nil, err
	}
	for i := range list.Items {
		ap := &list.Items[i]
		if ap.Spec.Call.Digest != digest || !slices.Contains([]string{"", metav1alpha1.ApprovalPending, metav1alpha1.ApprovalApproved}, ap.Status.Phase) ||
			!a.now().Before(ap.Spec.ExpiresAt.Time) {
			continue
		}
		var p metav1alpha1.WorkflowProcess
		if err := a.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ap.Spec.Call.TaskID}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, nil, err
		}
		return ap, &p, nil
	}
	return nil, nil, nil
}

// where names the policy and rule of an outcome; a policy that failed before any
// of its rules decided is named with its failure in the rule's place.
func where(o policy.Outcome) string {
	rule := o.Rule
	if rule == "" {
		rule = "(failed: " + o.Err.Error() + ")"
	}
	return fmt.Sprintf("%s %s, rule %s", o.Policy.Kind(), o.Policy.Key(), rule)
}

// heldText is what the caller of a held call is told: what holds it, who may
// decide, until when, and how to follow it.
func heldText(ap *metav1alpha1.Approval, p *metav1alpha1.WorkflowProcess, c *tool.Call) string {
	pol := ap.Spec.Policy
	why := fmt.Sprintf("%s %s, rule %s", pol.Kind, strings.TrimPrefix(pol.Namespace+"/"+pol.Name, "/"), pol.Rule)
	if pol.Message != "" {
		why += ": " + pol.Message
	}
	return fmt.Sprintf("held for approval, not run and not failed: %s. Approval %s in namespace %s waits for %s until %s "+
		"(kubectl get approval -n %s %s). Once approved it runs once, exactly as called, as task %s; follow it with %s "+
		"(or tasks/get), and read what it answered with %s. Calling again with the same arguments waits for the same approval; "+
		"nothing you send approves it.",
		why, ap.Name, ap.Namespace, approversText(ap.Spec.Approvers), ap.Spec.ExpiresAt.UTC().Format(time.RFC3339),
		ap.Namespace, ap.Name, p.Name, tool.Encode(c.Style, "sandbar.tasks.get"), tool.Encode(c.Style, "sandbar.tasks.result"))
}

// approversText says who may approve.
func approversText(s metav1alpha1.ApproverSet) string {
	var who []string
	if len(s.Users) > 0 {
		who = append(who, "users "+strings.Join(s.Users, ", "))
	}
	if len(s.Groups) > 0 {
		who = append(who, "members of "+strings.Join(s.Groups, ", "))
	}
	n := max(s.Count, 1)
	approvals := "1 approval"
	if n > 1 {
		approvals = fmt.Sprintf("%d approvals", n)
	}
	return approvals + " by " + strings.Join(who, " or ")
}

// waitingFor is an Approval's message while it waits.
func waitingFor(ap *metav1alpha1.Approval, approvedBy []string) string {
	msg := "waits for " + approversText(ap.Spec.Approvers) + " (not " + ap.Spec.Call.User + ", who called)"
	if len(approvedBy) > 0 {
		msg += "; approved so far by " + strings.Join(approvedBy, ", ")
	}
	return msg
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
