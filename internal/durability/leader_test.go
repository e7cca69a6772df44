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

package durability_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// The lease timings of the leader test: a replica takes over from a leader that died
// about 4 s after the leader last renewed. An import makes two API requests an item,
// within --kube-api-qps: a higher one keeps the test short.
var fastLease = []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
	"--kube-api-qps=400", "--kube-api-burst=800"}

// The leader is killed (SIGKILL: no lease released, no chunk finished) in the middle
// of an import; the other replica takes the lease and finishes it. Every item exists
// once and whole, and the counts are those of one import: every item created once.
func TestImportFinishesWhenTheLeaderIsKilled(t *testing.T) {
	g := NewWithT(t)
	kc := kubeconfig(t, env)
	leader := startManager(t, kc, "leader", token, fastLease...)
	var first string
	g.Eventually(func() string { first = leaseHolder(k8s); return first }).WithTimeout(timeout).WithPolling(100 * time.Millisecond).
		ShouldNot(BeEmpty())
	follower := startManager(t, kc, "follower", token, fastLease...)
	g.Expect(leaseHolder(k8s)).To(Equal(first), "the first replica leads")

	// The client talks to the follower throughout: the leader does the work.
	const n = 1000
	res, rpcErr := rpc(t, follower.url, "tools/call", map[string]any{"name": "sandbar_project_import",
		"arguments": map[string]any{"bundle": map[string]any{"items": importItems("leader", n)}}, "task": map[string]any{}})
	g.Expect(rpcErr).To(BeNil())
	id := res["task"].(map[string]any)["taskId"].(string)
	began := time.Now()
	g.Eventually(func() int64 {
		if p := process(t, id).Status.Progress; p != nil {
			return p.Done
		}
		return 0
	}).WithTimeout(timeout).WithPolling(20 * time.Millisecond).Should(BeNumerically(">", 0))
	leader.kill(t)
	killed := time.Now()
	t.Logf("the leader was killed %s after the import began", killed.Sub(began).Round(100*time.Millisecond))
	stopped := process(t, id)
	g.Expect(stopped.Status.Phase).To(Equal(metav1alpha1.PhaseRunning), "the leader died before the import ended")
	g.Expect(stopped.Status.Progress.Done).To(BeNumerically("<", n))

	g.Eventually(func() string { return leaseHolder(k8s) }).WithTimeout(timeout).WithPolling(100*time.Millisecond).
		ShouldNot(Or(Equal(first), BeEmpty()), "the follower takes the lease")
	t.Logf("the follower took the lease %s after the leader was killed", time.Since(killed).Round(100*time.Millisecond))
	g.Eventually(func() string { return taskStatus(t, follower.url, id) }).WithTimeout(3*time.Minute).WithPolling(200*time.Millisecond).
		Should(Equal("completed"), func() string { return fmt.Sprintf("progress: %+v", process(t, id).Status.Progress) })

	result, rpcErr := rpc(t, follower.url, "tasks/result", map[string]any{"taskId": id})
	g.Expect(rpcErr).To(BeNil())
	g.Expect(result["structuredContent"]).To(Equal(map[string]any{"created": float64(n), "updated": 0.0, "unchanged": 0.0, "failed": 0.0}))
	t.Logf("the import ended %s after the leader was killed", time.Since(killed).Round(100*time.Millisecond))
	done := process(t, id)
	g.Expect(done.Status.Phase).To(Equal(metav1alpha1.PhaseSucceeded))
	g.Expect(done.Status.StatusMessage).To(HaveSuffix(fmt.Sprintf(": created %d, updated 0, unchanged 0, failed 0", n)))
	importedOnce(g, k8s, "leader", n, id)
	g.Expect(follower.running()).To(BeTrue(), "the follower ran throughout")
}
