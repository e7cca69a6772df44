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
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
	"github.com/sandbar-dev/sandbar/internal/instanceapi"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// classesPerRound is how many Classes BenchmarkClassToTool applies, one after another,
// per iteration; its p50 and p99 are over all of them.
const classesPerRound = 10

// burstClasses is how many Classes BenchmarkClassesToTools applies at once.
const burstClasses = 500

// BenchmarkClassToTool creates one Class at a time, as kubectl apply does, and times
// it until its tool is in tools/list of a connected client that lists again on every
// notifications/tools/list_changed (the CRD's establishment included).
func BenchmarkClassToTool(b *testing.B) {
	w := newToolWatcher(b)
	var lat []time.Duration
	for b.Loop() {
		for i := 0; i < classesPerRound; i++ {
			kind := "Bench" + rand.String(6)
			start := time.Now()
			createBenchClass(b, kind)
			w.waitFor(b, map[string]bool{classTool(kind): true})
			lat = append(lat, time.Since(start))
		}
	}
	reportMillis(b, lat)
}

// BenchmarkClassToToolBaseline creates the CRD such a Class generates straight
// through the API server and times it until the CRD is Established.
func BenchmarkClassToToolBaseline(b *testing.B) {
	var lat []time.Duration
	for b.Loop() {
		for i := 0; i < classesPerRound; i++ {
			crd := bareCRD(b, "Bare"+rand.String(6))
			start := time.Now()
			if err := k8s.Create(context.Background(), crd); err != nil {
				b.Fatal(err)
			}
			waitCRDsEstablished(b, []string{crd.Name})
			lat = append(lat, time.Since(start))
		}
	}
	reportMillis(b, lat)
}

// BenchmarkClassesToTools creates 500 Classes at once (eight writers) and times them
// until every one's tool is in tools/list of a connected client. It reports the CPU
// the API server and this process (the manager, the MCP server and the client) spent
// meanwhile: on two cores, where the time goes.
func BenchmarkClassesToTools(b *testing.B) {
	w := newToolWatcher(b)
	for b.Loop() {
		kinds := make([]string, burstClasses)
		want := map[string]bool{}
		for i := range kinds {
			kinds[i] = "Burst" + rand.String(6)
			want[classTool(kinds[i])] = true
		}
		writes, apiCPU, cpu := allAPIWrites(b), apiServerCPU(), cpuTime()
		start := time.Now()
		inParallel(b, kinds, func(kind string) error { return createBenchClassErr(b, kind) })
		w.waitFor(b, want)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-all")
		b.ReportMetric((allAPIWrites(b)-writes)/burstClasses, "writes/class")
		b.ReportMetric((apiServerCPU() - apiCPU).Seconds(), "apiserver-cpu-s")
		b.ReportMetric((cpuTime() - cpu).Seconds(), "self-cpu-s")
		reportMilestones(b, start, kinds)
	}
}

// allAPIWrites is how many write requests (create, update, patch, delete) the API
// server has answered so far, of every client: a burst's include the Events and
// status writes that its Classes cause.
func allAPIWrites(b *testing.B) float64 {
	n, err := testenv.APIRequests(context.Background(), kube.Discovery().RESTClient(), testenv.Write)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// reportMilestones reports, to the second (that of the API server's times), when the
// last of the classes' CRDs was created, when the last was Established and when the
// last class was Ready.
func reportMilestones(b *testing.B, start time.Time, kinds []string) {
	var created, established, ready time.Time
	for _, kind := range kinds {
		var c metav1alpha1.Class
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: "zorp." + strings.ToLower(kind)}, &c); err != nil {
			b.Fatal(err)
		}
		if r := meta.FindStatusCondition(c.Status.Conditions, metav1alpha1.ConditionReady); r != nil && r.LastTransitionTime.After(ready) {
			ready = r.LastTransitionTime.Time
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: c.Status.InstanceAPI.CRDName}, &crd); err != nil {
			b.Fatal(err)
		}
		if crd.CreationTimestamp.After(created) {
			created = crd.CreationTimestamp.Time
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.LastTransitionTime.After(established) {
				established = cond.LastTransitionTime.Time
			}
		}
	}
	b.ReportMetric(created.Sub(start.Truncate(time.Second)).Seconds(), "s-to-created")
	b.ReportMetric(established.Sub(start.Truncate(time.Second)).Seconds(), "s-to-established")
	b.ReportMetric(ready.Sub(start.Truncate(time.Second)).Seconds(), "s-to-ready")
}

// BenchmarkClassesToToolsBaseline creates the 500 CRDs such Classes generate straight
// through the API server (eight writers) and times them until all are Established.
func BenchmarkClassesToToolsBaseline(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		var crds []*apiextensionsv1.CustomResourceDefinition
		names := []string{}
		for i := 0; i < burstClasses; i++ {
			crd := bareCRD(b, "Bare"+rand.String(6))
			crds = append(crds, crd)
			names = append(names, crd.Name)
		}
		writes, apiCPU, cpu := allAPIWrites(b), apiServerCPU(), cpuTime()
		b.StartTimer()
		start := time.Now()
		inParallel(b, crds, func(crd *apiextensionsv1.CustomResourceDefinition) error {
			return k8s.Create(context.Background(), crd)
		})
		waitCRDsEstablished(b, names)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-all")
		b.ReportMetric((allAPIWrites(b)-writes)/burstClasses, "writes/class")
		b.ReportMetric((apiServerCPU() - apiCPU).Seconds(), "apiserver-cpu-s")
		b.ReportMetric((cpuTime() - cpu).Seconds(), "self-cpu-s")
	}
}

func classTool(kind string) string { return "sandbar_class_zorp_" + kind }

// createBenchClass creates a concrete Class of prefix zorp (which the suite's account
// may use) with three slots; the benchmark deletes it, and its CRD, when it ends.
func createBenchClass(b *testing.B, kind string) {
	if err := createBenchClassErr(b, kind); err != nil {
		b.Fatal(err)
	}
}

func createBenchClassErr(b *testing.B, kind string) error {
	c := &metav1alpha1.Class{
		ObjectMeta: metav1.ObjectMeta{Name: "zorp." + strings.ToLower(kind)},
		Spec: metav1alpha1.ClassSpec{
			Prefix: "zorp", Kind: kind, Description: "A class of the class-to-tool benchmark.",
			Slots: []metav1alpha1.SlotRef{
				{Property: "footwear.name", Required: true}, {Property: "footwear.price"}, {Property: "footwear.tentacle-count"},
			},
			InstanceAPI: metav1alpha1.InstanceAPISpec{DeletionPolicy: metav1alpha1.DeletionPolicyDelete},
		},
	}
	if err := k8s.Create(context.Background(), c); err != nil {
		return err
	}
	cleanupLater(b, c)
	return nil
}

// bareCRD is the CRD a Class of that kind generates, with no Sandbar labels (so no
// reconciler looks at it) in a group of its own.
func bareCRD(b *testing.B, kind string) *apiextensionsv1.CustomResourceDefinition {
	c := &catalog.Class{Name: "bare." + strings.ToLower(kind), Prefix: "bare", Kind: kind, Description: "A bare CRD.",
		Slots: []*catalog.Slot{
			{Definition: &catalog.Definition{Field: "name", Range: metav1alpha1.RangeString, Cardinality: "one", Description: "The name."}, Required: true},
			{Definition: &catalog.Definition{Field: "price", Range: metav1alpha1.RangeNumber, Cardinality: "one", Description: "The price."}},
			{Definition: &catalog.Definition{Field: "tentacleCount", Range: metav1alpha1.RangeInteger, Cardinality: "one", Description: "Tentacles."}},
		},
		Required: []string{"name"}}
	crd := instanceapi.CRD(c, nil)
	crd.Labels = nil
	cleanupLater(b, crd)
	return crd
}

var (
	cleanupMu sync.Mutex
	// cleanups are the objects each running benchmark made.
	cleanups = map[*testing.B][]client.Object{}
)

// cleanupLater deletes o when the benchmark ends, with everything else it made, and
// waits until they are gone, so that the next benchmark meets an API server of the
// same size.
func cleanupLater(b *testing.B, o client.Object) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	if _, ok := cleanups[b]; !ok {
		b.Cleanup(func() {
			cleanupMu.Lock()
			objs := cleanups[b]
			delete(cleanups, b)
			cleanupMu.Unlock()
			deleteAll(b, objs)
		})
	}
	cleanups[b] = append(cleanups[b], o)
}

func deleteAll(b *testing.B, objs []client.Object) {
	ctx := context.Background()
	for _, o := range objs {
		if err := k8s.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			b.Error(err)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for _, o := range objs {
		for k8s.Get(ctx, client.ObjectKeyFromObject(o), o) == nil {
			if time.Now().After(deadline) {
				b.Errorf("%s is still there after 5 minutes", o.GetName())
				return
			}
			<-time.After(50 * time.Millisecond)
		}
	}
}

func waitCRDsEstablished(b *testing.B, names []string) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var list apiextensionsv1.CustomResourceDefinitionList
		if err := k8s.List(context.Background(), &list); err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, crd := range list.Items {
			if !want[crd.Name] {
				continue
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					n++
				}
			}
		}
		if n == len(want) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d CRDs established after 5 minutes", n, len(want))
		}
		<-time.After(10 * time.Millisecond)
	}
}

func inParallel[T any](b *testing.B, items []T, do func(T) error) {
	var wg sync.WaitGroup
	next := make(chan T)
	errs := make(chan error, len(items))
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for it := range next {
				if err := do(it); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// toolWatcher is a client session of the suite's account that is told of every
// change of the tool list.
type toolWatcher struct {
	cs      *mcp.ClientSession
	changed chan struct{}
}

func newToolWatcher(b *testing.B) *toolWatcher {
	w := &toolWatcher{changed: make(chan struct{}, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case w.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: mcpURL, HTTPClient: &http.Client{Transport: testenv.Bearer{Token: token}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	w.cs = cs
	return w
}

// waitFor lists the tools, then again after every list_changed notification, until
// every tool in want is listed.
func (w *toolWatcher) waitFor(b *testing.B, want map[string]bool) {
	deadline := time.After(5 * time.Minute)
	for {
		missing := len(want)
		for t, err := range w.cs.Tools(context.Background(), nil) {
			if err != nil {
				b.Fatal(err)
			}
			if want[t.Name] {
				missing--
			}
		}
		if missing == 0 {
			return
		}
		select {
		case <-w.changed:
		case <-deadline:
			b.Fatalf("%d of %d tools still missing after 5 minutes", missing, len(want))
		}
	}
}

func reportMillis(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
}
