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

package process

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/tool"
	"github.com/sandbar-dev/sandbar/internal/workflow"
	"github.com/sandbar-dev/sandbar/internal/workflow/builtin"
)

// Limits bound what one account may make the server hold, so that one account cannot
// fill etcd or the manager's memory. Zero is no limit.
type Limits struct {
	// Processes is how many WorkflowProcesses an account may hold at once, running
	// or finished: a finished process holds its result until it is deleted.
	Processes int
	// Bytes is how many bytes of inputs and results an account's processes may hold
	// together; an export's stored result counts as its chunks' compressed bytes. A
	// running built-in process counts as holding what its result may come to: its
	// budget (spec.resultBudget), or without one the largest result its status may
	// keep (builtin.MaxResultBytes). An export starts with the room its account has
	// left as its budget, and fails rather than hold more.
	Bytes int64
	// StoredResultBytes is the most one export may store (--max-stored-result-bytes;
	// 0: no cap): an export's budget is no more than that.
	StoredResultBytes int64
	// FinishedTTL is how long a finished process started through MCP is kept: its
	// spec.ttlSecondsAfterFinished, and the most a client may ask for.
	FinishedTTL time.Duration
	// Followers is how many followers (a call's progress notifications, a wait for
	// a task's result) an account may have at once; AllFollowers how many all
	// accounts together. Beyond them a call is answered without following.
	Followers, AllFollowers int
}

func (l Limits) on() bool { return l.Processes > 0 || l.Bytes > 0 }

// MinBytes is the least Limits.Bytes worth setting: room for a built-in job's largest
// result and as large an input again.
const MinBytes = 2 * builtin.MaxResultBytes

// pendingFor is how long a process's reservation stays in its account's ledger
// (ledger.go): by then every replica's informer cache has the process; a safety net
// should one never see it.
const pendingFor = time.Minute

// finishedShown is how many finished processes a refusal names for deletion.
const finishedShown = 5

// quota keeps accounts within the limits: the starts they are admitted (against
// their ledgers), and the followers running now.
type quota struct {
	limits Limits
	// locks take an account's starts in this replica one at a time (by a hash of the
	// account), so that they do not contend for its ledger, which orders them among
	// replicas.
	locks [64]sync.Mutex

	fmu       sync.Mutex
	followers map[string]int
	total     int
}

func newQuota(l Limits) *quota {
	return &quota{limits: l, followers: map[string]int{}}
}

// lock takes the account's lock, and answers how to give it back.
func (q *quota) lock(acct *catalog.Account) (unlock func()) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(accountKey(acct)))
	m := &q.locks[h.Sum32()%uint32(len(q.locks))]
	m.Lock()
	return m.Unlock
}

func accountKey(acct *catalog.Account) string { return acct.Namespace + "/" + acct.Name }

// holds is what a process holds in etcd for its account: its input, and its result
// (with the chunks of a stored one, compressed), or for a running built-in process
// at least what its result may come to (budgetOf).
func holds(p *metav1alpha1.WorkflowProcess) int64 {
	n := inputBytes(p)
	if p.Status.Result != nil {
		n += int64(len(p.Status.Result.Raw))
		if st := builtin.StoredOf(p.Status.Result.Raw); st != nil {
			n += st.StoredBytes // the chunks it owns, as etcd holds them
		}
	}
	if !workflow.Terminal(&p.Status) && builtin.IsBuiltin(p.Spec.Definition) {
		n = max(n, inputBytes(p)+budgetOf(p))
	}
	return n
}

// budgetOf is what the result of a built-in process may come to hold: its budget,
// or without one the largest result its status may keep.
func budgetOf(p *metav1alpha1.WorkflowProcess) int64 {
	if p.Spec.ResultBudget > 0 {
		return p.Spec.ResultBudget
	}
	return builtin.MaxResultBytes
}

func inputBytes(p *metav1alpha1.WorkflowProcess) int64 {
	if p.Spec.Input == nil {
		return 0
	}
	return int64(len(p.Spec.Input.Raw))
}

// holding is what an account holds now.
type holding struct {
	count int
	bytes int64
	// finished are the names of its oldest finished processes.
	finished []string
}

// admit reserves room for p, a process acct is about to create, in the account's
// ledger, or refuses it with what the account holds and how to free room. An export
// gets the room the account has left as its budget. Call settle with p's name once
// the create is done. Nothing is reserved when there are no limits.
func (s *Service) admit(ctx context.Context, acct *catalog.Account, p *metav1alpha1.WorkflowProcess) error {
	q := s.quota
	if !q.limits.on() {
		return nil
	}
	defer q.lock(acct)()
	return s.onLedger(ctx, acct, func(l *ledger) error {
		h, err := s.holding(ctx, acct, l)
		if err != nil {
			return err
		}
		p.Spec.ResultBudget = 0
		adds := holds(p)
		switch {
		case q.limits.Processes > 0 && h.count >= q.limits.Processes:
			return tool.Fail("refused: this account holds %d processes (WorkflowProcesses of namespace %s, running or finished), "+
				"its limit (--max-processes-per-account); nothing was started. %s",
				h.count, acct.Home(), s.howToFree(acct, h, "--max-processes-per-account"))
		case q.limits.Bytes > 0 && h.bytes+adds > q.limits.Bytes:
			return tool.Fail("refused: this account's processes hold %s of inputs and results, and this one may add %s: "+
				"over the account's limit of %s (--max-process-bytes-per-account); nothing was started. %s",
				size(h.bytes), size(adds), size(q.limits.Bytes), s.howToFree(acct, h, "--max-process-bytes-per-account"))
		case len(l.pending) >= maxPending:
			return tool.Fail("refused: this account has started %d processes within %s, as many as may start in that time; "+
				"nothing was started: start it again in a minute", len(l.pending), pendingFor)
		}
		if p.Spec.Definition == builtin.Export && q.limits.Bytes > 0 {
			// An export may store far more than a status keeps: as much as the
			// account has room for, up to what one export may store.
			p.Spec.ResultBudget = q.limits.Bytes - h.bytes - inputBytes(p)
			if c := q.limits.StoredResultBytes; c > 0 {
				p.Spec.ResultBudget = min(p.Spec.ResultBudget, max(c, builtin.MaxResultBytes))
			}
			adds = holds(p)
		}
		l.pending[p.Name] = entry{Bytes: adds, At: time.Now().UnixMilli()}
		return nil
	})
}

// holding counts the account's processes in the informer cache, and those its
// ledger reserved that the cache does not show (yet). It drops from the ledger the
// reservations that have expired and those of processes created and since deleted.
func (s *Service) holding(ctx context.Context, acct *catalog.Account, l *ledger) (holding, error) {
	var list metav1alpha1.WorkflowProcessList
	// Read only: the cache's own objects, not copies of every result.
	if err := s.client.List(ctx, &list, client.InNamespace(acct.Home()), client.UnsafeDisableDeepCopy); err != nil {
		return holding{}, err
	}
	var h holding
	seen := map[string]bool{}
	var finished []*metav1alpha1.WorkflowProcess
	for i := range list.Items {
		p := &list.Items[i]
		if !s.owns(acct, p) {
			continue // a process planted in its name does not use up its limits
		}
		seen[p.Name] = true
		h.count++
		h.bytes += holds(p)
		if workflow.Terminal(&p.Status) {
			finished = append(finished, p)
		}
	}
	now := time.Now()
	for name, e := range l.pending {
		switch {
		case seen[name]:
			continue // counted above
		case e.expired(now):
			delete(l.pending, name)
			continue
		case e.Created:
			// Created: in the API server, unless deleted since (then for good).
			there, err := s.exists(ctx, acct.Home(), name)
			if err != nil {
				return holding{}, err
			}
			if !there {
				delete(l.pending, name)
				continue
			}
		}
		h.count++
		h.bytes += e.Bytes
	}
	sortOldestFirst(finished)
	for _, p := range finished[:min(len(finished), finishedShown)] {
		h.finished = append(h.finished, p.Name)
	}
	return h, nil
}

// howToFree tells a refused account how to make room.
func (s *Service) howToFree(acct *catalog.Account, h holding, flag string) string {
	var b strings.Builder
	if len(h.finished) > 0 {
		fmt.Fprintf(&b, "Finished processes hold their results until deleted: delete the ones no longer needed, "+
			"for example the oldest with `kubectl delete workflowprocess -n %s %s`", acct.Home(), strings.Join(h.finished, " "))
	} else {
		fmt.Fprintf(&b, "None has finished: wait for them to end, or cancel some (tasks/cancel), "+
			"then delete them with `kubectl delete workflowprocess -n %s <task id>`", acct.Home())
	}
	if ttl := s.quota.limits.FinishedTTL; ttl > 0 {
		fmt.Fprintf(&b, "; or wait: a finished process is deleted %s after it ends", ttl)
	}
	fmt.Fprintf(&b, "; or ask an admin to raise %s.", flag)
	return b.String()
}

// size is a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// follow takes a follower's place for the account, or reports that there is none:
// the account or the server follows as many processes as it may.
func (s *Service) follow(acct *catalog.Account) bool {
	q := s.quota
	q.fmu.Lock()
	defer q.fmu.Unlock()
	key := accountKey(acct)
	if (q.limits.Followers > 0 && q.followers[key] >= q.limits.Followers) ||
		(q.limits.AllFollowers > 0 && q.total >= q.limits.AllFollowers) {
		return false
	}
	q.followers[key]++
	q.total++
	return true
}

// unfollow gives a follower's place back.
func (s *Service) unfollow(acct *catalog.Account) {
	q := s.quota
	q.fmu.Lock()
	defer q.fmu.Unlock()
	key := accountKey(acct)
	if q.followers[key]--; q.followers[key] <= 0 {
		delete(q.followers, key)
	}
	q.total--
}

// TooManyFollowersError is a wait refused because the account, or the server,
// follows as many processes as it may.
type TooManyFollowersError struct{ ID string }

func (e *TooManyFollowersError) Error() string {
	return fmt.Sprintf("refused: waiting for task %s: this account (or the server) already waits on or follows as many tasks "+
		"as it may (--max-followers-per-account, --max-followers); poll tasks/get instead, and ask for the result once it has ended", e.ID)
}
