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
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/policy"
)

// FlushEvery is how often a replica adds what it counted to the policies' status.
const FlushEvery = 2 * time.Second

// policyKey names a policy: its namespace ("" for a ClusterCallPolicy) and name.
type policyKey struct{ namespace, name string }

// counts are what a replica counted of one policy since its last flush.
type counts struct {
	matched, denied, held, audited int64
	last                           *metav1alpha1.PolicyDecision
}

// Tally counts the decisions of one replica until they are written into the
// policies' status. Every replica adds its own counts there (a read, the sum, an
// update that names the version read), so the status counts the calls of all.
type Tally struct {
	mu sync.Mutex
	by map[policyKey]*counts
}

func newTally() *Tally { return &Tally{by: map[policyKey]*counts{}} }

func (t *Tally) of(p *policy.Policy) *counts {
	k := policyKey{p.Namespace, p.Name}
	c := t.by[k]
	if c == nil {
		c = &counts{}
		t.by[k] = c
	}
	return c
}

func (t *Tally) matched(p *policy.Policy) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.of(p).matched++
}

func (t *Tally) decided(o policy.Outcome, d metav1alpha1.PolicyDecision) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.of(o.Policy)
	switch o.Action {
	case metav1alpha1.ActionDeny:
		c.denied++
	case metav1alpha1.ActionRequireApproval:
		c.held++
	}
	if o.Action == metav1alpha1.ActionAudit || !o.Enforced {
		c.audited++
	}
	c.last = &d
}

// take empties the tally and returns what it held.
func (t *Tally) take() map[policyKey]*counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	by := t.by
	t.by = map[policyKey]*counts{}
	return by
}

// putBack returns counts that could not be written, to be tried again.
func (t *Tally) putBack(k policyKey, c *counts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	have := t.by[k]
	if have == nil {
		t.by[k] = c
		return
	}
	have.matched += c.matched
	have.denied += c.denied
	have.held += c.held
	have.audited += c.audited
	if have.last == nil {
		have.last = c.last
	}
}

// Flush adds what the tally counted to the policies' status. Counts of a policy
// that is gone are dropped; those that cannot be written now are kept for the next
// flush.
func (t *Tally) Flush(ctx context.Context, c client.Client) {
	for k, n := range t.take() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var obj client.Object
			var st *metav1alpha1.CallPolicyStatus
			if k.namespace == "" {
				p := &metav1alpha1.ClusterCallPolicy{}
				obj, st = p, &p.Status
			} else {
				p := &metav1alpha1.CallPolicy{}
				obj, st = p, &p.Status
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: k.name}, obj); err != nil {
				return err
			}
			st.Matched += n.matched
			st.Denied += n.denied
			st.Held += n.held
			st.Audited += n.audited
			if n.last != nil && (st.LastDecision == nil || !n.last.Time.Before(&st.LastDecision.Time)) {
				st.LastDecision = n.last
			}
			return c.Status().Update(ctx, obj)
		})
		if err != nil && !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).WithName("policies").Info("could not count decisions in a policy's status; trying again", "policy", k.namespace+"/"+k.name, "error", err.Error())
			t.putBack(k, n)
		}
	}
}

// Run flushes the tally every FlushEvery until ctx ends, and once more then.
func (t *Tally) Run(ctx context.Context, c client.Client) {
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.Flush(ctx, c)
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			t.Flush(last, c)
			cancel()
			return
		}
	}
}
