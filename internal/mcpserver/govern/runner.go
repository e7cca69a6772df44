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
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/contain"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// Outcome is what came of a held call, for the audit: run once approved (with
// the tool's answer), or ended without running.
type Outcome struct {
	Approval       client.ObjectKey
	Account, User  string
	Tool           string
	Phase, Message string
	// By are the people who decided it: who approved, or who denied.
	By []string
	// IsError: the call ran and failed.
	IsError bool
}

// staleRun is how long a call stays Running before the runner takes it that the
// replica running it stopped.
const staleRun = 10 * time.Minute

// Run follows the Approvals and their tasks until ctx ends: it reads the people's
// decisions, runs a call once approved (on the one replica that takes it), and
// ends the task of one denied, expired or withdrawn. Every replica runs it; each
// change names the version it read, so a change is made once.
func (a *Approvals) Run(ctx context.Context, informers cache.Informers, audit func(Outcome)) error {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[client.ObjectKey]())
	enqueue := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *metav1alpha1.Approval:
			q.Add(client.ObjectKeyFromObject(o))
		case *metav1alpha1.WorkflowProcess:
			if o.Spec.Definition == builtin.Approval {
				q.Add(client.ObjectKeyFromObject(o)) // the Approval has the task's name
			}
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
	for _, obj := range []client.Object{&metav1alpha1.Approval{}, &metav1alpha1.WorkflowProcess{}} {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("following %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	contain.Loop(ctx, "approvals", func(ctx context.Context) {
		for {
			key, stop := q.Get()
			if stop {
				return
			}
			func() {
				defer q.Done(key)
				after, err := a.reconcile(ctx, key, audit)
				switch {
				case err != nil:
					ctrl.LoggerFrom(ctx).WithName("approvals").Info("following an approval; trying again", "approval", key.String(), "error", err.Error())
					q.AddRateLimited(key)
				case after > 0:
					q.Forget(key)
					q.AddAfter(key, after)
				default:
					q.Forget(key)
				}
			}()
		}
	})
	return nil
}

// ended says whether an Approval's phase is final.
func ended(phase string) bool {
	return slices.Contains([]string{metav1alpha1.ApprovalDone, metav1alpha1.ApprovalDenied, metav1alpha1.ApprovalExpired,
		metav1alpha1.ApprovalWithdrawn, metav1alpha1.ApprovalFailed}, phase)
}

// reconcile takes an Approval as far as its decisions and its task let it go; it
// answers when to look again.
func (a *Approvals) reconcile(ctx context.Context, key client.ObjectKey, audit func(Outcome)) (time.Duration, error) {
	var ap metav1alpha1.Approval
	if err := a.reader.Get(ctx, key, &ap); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if ended(ap.Status.Phase) {
		return 0, nil
	}
	var p metav1alpha1.WorkflowProcess
	if err := a.reader.Get(ctx, client.ObjectKey{Namespace: ap.Namespace, Name: ap.Spec.Call.TaskID}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, a.finish(ctx, &ap, metav1alpha1.ApprovalFailed, "its task is gone: nothing ran", nil, audit)
		}
		return 0, err
	}
	switch {
	case p.Status.Phase == "":
		return time.Second, nil // the leader has not started the task yet
	case workflow.Terminal(&p.Status):
		if ap.Status.Phase == metav1alpha1.ApprovalRunning {
			if a.runsHere(key) {
				return 0, nil // this replica ends the Approval once the call has answered
			}
			// The replica that ran it stopped after it ended the task.
			phase := metav1alpha1.ApprovalDone
			if p.Status.Phase != metav1alpha1.PhaseSucceeded {
				phase = metav1alpha1.ApprovalFailed
			}
			return 0, a.finish(ctx, &ap, phase, p.Status.StatusMessage, ap.Status.ApprovedBy, audit)
		}
		return 0, a.finish(ctx, &ap, metav1alpha1.ApprovalWithdrawn, withdrawn(&p), nil, audit)
	case ap.Status.Phase == metav1alpha1.ApprovalRunning:
		c := meta.FindStatusCondition(ap.Status.Conditions, metav1alpha1.ConditionReady)
		if !a.runsHere(key) && c != nil && a.now().Sub(c.LastTransitionTime.Time) > staleRun {
			msg := "the replica that ran it stopped before it answered: it may or may not have run"
			if err := a.moveTask(ctx, &p, builtin.FailCall, "sandbar", msg, nil); err != nil {
				return 0, err
			}
			return 0, a.finish(ctx, &ap, metav1alpha1.ApprovalFailed, msg, nil, audit)
		}
		return time.Minute, nil
	}
	if ok, err := a.inForce(ctx, false); err != nil {
		return 0, err
	} else if !ok {
		return 30 * time.Second, a.setStatus(ctx, &ap, metav1alpha1.ApprovalPending, "no decision is read: "+notInForce, nil, "")
	}
	approvedBy, deniedBy, reason := tally(&ap)
	switch {
	case deniedBy != "":
		msg := "denied by " + deniedBy
		if reason != "" {
			msg += ": " + reason
		}
		if err := a.moveTask(ctx, &p, builtin.DenyCall, deniedBy, msg, nil); err != nil {
			return 0, err
		}
		return 0, a.finish(ctx, &ap, metav1alpha1.ApprovalDenied, msg+"; nothing ran", []string{deniedBy}, audit)
	case len(approvedBy) >= int(max(ap.Spec.Approvers.Count, 1)):
		return 0, a.runApproved(ctx, &ap, &p, approvedBy, reason, audit)
	case !a.now().Before(ap.Spec.ExpiresAt.Time):
		msg := "expired at " + ap.Spec.ExpiresAt.UTC().Format(time.RFC3339) + " without its approvals"
		if err := a.moveTask(ctx, &p, builtin.ExpireCall, "sandbar", msg, nil); err != nil {
			return 0, err
		}
		return 0, a.finish(ctx, &ap, metav1alpha1.ApprovalExpired, msg+"; nothing ran", nil, audit)
	}
	msg := waitingFor(&ap, approvedBy)
	if err := a.taskMessage(ctx, &p, "held for approval "+ap.Name+": "+msg); err != nil {
		return 0, err
	}
	return ap.Spec.ExpiresAt.Sub(a.now()) + time.Second, a.setStatus(ctx, &ap, metav1alpha1.ApprovalPending, msg, approvedBy, "")
}

// runsHere says whether this replica runs the Approval's call now.
func (a *Approvals) runsHere(key client.ObjectKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running[key.String()]
}

// tally reads the decisions that count: those of the people the Approval names
// (by user, or a group the API server knew them in when they decided), each person
// once, never the caller's. A denial by one of them ends it.
func tally(ap *metav1alpha1.Approval) (approvedBy []string, deniedBy, reason string) {
	var reasons []string
	for _, d := range ap.Spec.Decisions {
		if d.User == "" || d.User == ap.Spec.Call.User || slices.Contains(approvedBy, d.User) {
			continue
		}
		s := ap.Spec.Approvers
		if !slices.Contains(s.Users, d.User) && !slices.ContainsFunc(d.Groups, func(g string) bool { return slices.Contains(s.Groups, g) }) {
			continue
		}
		switch d.Decision {
		case metav1alpha1.DecisionDeny:
			return nil, d.User, d.Reason
		case metav1alpha1.DecisionApprove:
			approvedBy = append(approvedBy, d.User)
			if d.Reason != "" {
				reasons = append(reasons, d.User+": "+d.Reason)
			}
		}
	}
	return approvedBy, "", strings.Join(reasons, "; ")
}

// runApproved takes an approved call (on this replica only if its change of the
// Approval to Running is the one the API server takes) and runs it once, exactly as
// its task holds it, as its account.
func (a *Approvals) runApproved(ctx context.Context, ap *metav1alpha1.Approval, p *metav1alpha1.WorkflowProcess, by []string, reason string,
	audit func(Outcome)) error {
	ran := "approved by " + strings.Join(by, ", ")
	if reason != "" {
		ran += " (" + reason + ")"
	}
	// The decisions were read while the admission policy was last seen bound: that
	// it still is, the API server says now, before anything runs.
	if ok, err := a.inForce(ctx, true); err != nil || !ok {
		// Looked at again (the queue's back-off) until the policy is bound.
		return errors.Join(err, errors.New(notInForce), a.setStatus(ctx, ap, metav1alpha1.ApprovalPending, "no decision is read: "+notInForce, nil, ""))
	}
	if err := a.setStatus(ctx, ap, metav1alpha1.ApprovalRunning, ran+": running", by, ""); err != nil {
		if apierrors.IsConflict(err) {
			return nil // another replica took it, or a decision came in: the next event says
		}
		return err
	}
	key := client.ObjectKeyFromObject(ap).String()
	a.mu.Lock()
	a.running[key] = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.running, key)
		a.mu.Unlock()
	}()
	fail := func(msg string) error {
		if err := a.moveTask(ctx, p, builtin.FailCall, "sandbar", msg, nil); err != nil {
			return err
		}
		return a.finish(ctx, ap, metav1alpha1.ApprovalFailed, msg, by, audit)
	}
	var in builtin.HeldInput
	if p.Spec.Input == nil || json.Unmarshal(p.Spec.Input.Raw, &in) != nil || !a.processes.Issued(p) {
		return fail(ran + ", but its task is not as the server made it: nothing ran")
	}
	acct, why := a.accountOf(in.Account)
	if acct == nil {
		return fail(ran + ", but " + why + ": nothing ran")
	}
	args, _ := json.Marshal(in.Arguments)
	if Digest(acct, ap.Spec.Call.Canonical, args) != ap.Spec.Call.Digest || in.Digest != ap.Spec.Call.Digest {
		return fail(ran + ", but its task holds another call than the one approved: nothing ran")
	}
	if err := a.moveTask(ctx, p, builtin.ApproveCall, strings.Join(by, ","), ran, nil); err != nil {
		return err
	}
	switch {
	case workflow.Terminal(&p.Status): // its caller cancelled it since it was read
		return a.finish(ctx, ap, metav1alpha1.ApprovalWithdrawn, withdrawn(p), nil, audit)
	case p.Status.State != builtin.ApprovalRunning:
		return fail(ran + ", but its task did not move to " + builtin.ApprovalRunning + ": nothing ran")
	}
	res, err := a.run(Approved(ctx, ap.Spec.Call.Digest), acct, in.Tool, args)
	var msg string
	switch {
	case err != nil:
		msg = ran + "; the call failed: " + err.Error()
		res = tool.ErrorResult(msg)
	case res.IsError:
		msg = ran + "; the call answered an error: " + cut(tool.Text(res), 2048)
	default:
		msg = ran + "; the call ran"
	}
	if res.IsError {
		if err := a.moveTask(ctx, p, builtin.FailCall, "sandbar", msg, nil); err != nil {
			return err
		}
	} else if err := a.moveTask(ctx, p, builtin.SucceedCall, "sandbar", msg, resultOf(res)); err != nil {
		return err
	}
	return a.finish(ctx, ap, metav1alpha1.ApprovalDone, msg, by, func(o Outcome) {
		o.IsError = res.IsError
		if audit != nil {
			audit(o)
		}
	})
}

// withdrawn is what an Approval says whose task ended before the call ran.
func withdrawn(p *metav1alpha1.WorkflowProcess) string {
	return "its task ended before it was approved (" + p.Status.StatusMessage + "): nothing ran"
}

// resultOf is what a task keeps of a tool's answer: its structured content, or its
// text.
func resultOf(res *mcp.CallToolResult) []byte {
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(map[string]any{"text": tool.Text(res)})
	return b
}

// accountOf is the account a held call runs as: a ServiceAccount as the catalog
// has it now (deactivated, it runs nothing), or the person's account as it was.
func (a *Approvals) accountOf(h builtin.HeldAccount) (*catalog.Account, string) {
	if h.User == "" {
		acct := a.store.Load().AccountNamed(h.Namespace, h.Name)
		if acct == nil || !acct.Active {
			return nil, fmt.Sprintf("its account %s/%s is gone or inactive", h.Namespace, h.Name)
		}
		return acct, ""
	}
	return &catalog.Account{Namespace: h.Namespace, Name: h.Name, User: h.User, Groups: h.Groups, Active: true, Ready: true,
		Permissions: metav1alpha1.Permissions{Tools: h.Tools, Namespaces: []string{"*"}}, Clients: h.Clients,
		TasksNamespace: h.TasksNamespace}, ""
}

// moveTask moves a held call's task by a transition of the approval workflow, with
// the result of the call when it ran.
func (a *Approvals) moveTask(ctx context.Context, p *metav1alpha1.WorkflowProcess, transition, actor, reason string, result []byte) error {
	w := a.workflow()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var fresh metav1alpha1.WorkflowProcess
		if err := a.reader.Get(ctx, client.ObjectKeyFromObject(p), &fresh); err != nil {
			return err
		}
		if err := workflow.Transition(w, &fresh.Status, transition, actor, reason, metav1.Now()); err != nil {
			var we *workflow.Error
			if errors.As(err, &we) {
				*p = fresh // it moved meanwhile (cancelled): the caller sees where it is
				return nil
			}
			return err
		}
		if result != nil {
			fresh.Status.Result = &apiextensionsv1.JSON{Raw: result}
		}
		if err := a.client.Status().Update(ctx, &fresh); err != nil {
			return err
		}
		*p = fresh
		return nil
	})
}

// taskMessage sets what a waiting task says, when it says something else.
func (a *Approvals) taskMessage(ctx context.Context, p *metav1alpha1.WorkflowProcess, msg string) error {
	if p.Status.StatusMessage == msg {
		return nil
	}
	orig := p.DeepCopy()
	p.Status.StatusMessage = msg
	return client.IgnoreNotFound(a.client.Status().Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// workflow is the approval workflow, as the catalog has it (or as the manager
// makes it, before the catalog has it).
func (a *Approvals) workflow() *catalog.Workflow {
	if w := a.store.Load().Workflows[builtin.Approval]; w != nil && w.Problem == nil {
		return w
	}
	return catalog.ValidateWorkflow(builtin.ApprovalDefinition(), nil)
}

// setStatus writes an Approval's status, naming the version read: a conflict says
// another replica, or a person, changed it meanwhile.
func (a *Approvals) setStatus(ctx context.Context, ap *metav1alpha1.Approval, phase, msg string, approvedBy []string, deniedBy string) error {
	st := metav1alpha1.ApprovalStatus{Phase: phase, Message: cut(msg, 4096), ApprovedBy: approvedBy, DeniedBy: deniedBy,
		Conditions: slices.Clone(ap.Status.Conditions)}
	if ap.Status.Phase != phase {
		// Ready's time is when the phase began (how long a call has been Running
		// says whether its replica stopped): Ready stays False from Pending to
		// Running, and SetStatusCondition keeps the time of a status that stays.
		meta.RemoveStatusCondition(&st.Conditions, metav1alpha1.ConditionReady)
	}
	ready := metav1.ConditionFalse
	if ended(phase) {
		ready = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: metav1alpha1.ConditionReady, Status: ready, Reason: phase,
		Message: cut(msg, 4096), ObservedGeneration: ap.Generation})
	if ap.Status.Phase == st.Phase && ap.Status.Message == st.Message && slices.Equal(ap.Status.ApprovedBy, st.ApprovedBy) &&
		ap.Status.DeniedBy == st.DeniedBy {
		return nil
	}
	ap.Status = st
	return a.client.Status().Update(ctx, ap)
}

// finish ends an Approval, and audits what came of it.
func (a *Approvals) finish(ctx context.Context, ap *metav1alpha1.Approval, phase, msg string, by []string, audit func(Outcome)) error {
	var approved []string
	denied := ""
	if phase == metav1alpha1.ApprovalDenied && len(by) == 1 {
		denied = by[0]
	} else {
		approved = by
	}
	if err := a.setStatus(ctx, ap, phase, msg, approved, denied); err != nil {
		return client.IgnoreNotFound(err)
	}
	if audit != nil {
		audit(Outcome{Approval: client.ObjectKeyFromObject(ap), Account: ap.Spec.Call.Account, User: ap.Spec.Call.User,
			Tool: ap.Spec.Call.Tool, Phase: phase, Message: msg, By: by})
	}
	return nil
}
