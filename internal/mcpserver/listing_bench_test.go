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
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// The 10,000 wearers that the listing benchmarks page through: 20 in each of 500
// namespaces (bench-listed-000 to -499).
const (
	listedPrefix     = "bench-listed-"
	listedNamespaces = 500
	listedInstances  = 10000
)

var listedOnce sync.Once

// listedNamespace is the namespace of the wearer w%05d i.
func listedNamespace(i int) string {
	return fmt.Sprintf("%s%03d", listedPrefix, i%listedNamespaces)
}

// listedWearers creates, once a process, the 10,000 wearers and their namespaces.
func listedWearers(b *testing.B) {
	b.Helper()
	var failed error
	listedOnce.Do(func() {
		ctx := context.Background()
		for i := range listedNamespaces {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: listedNamespace(i)}}
			if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				failed = err
				return
			}
		}
		names := make(chan int)
		errs := make(chan error, listedInstances)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for i := range names {
					u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"handle": fmt.Sprintf("bench/w%05d", i)}}}
					u.SetAPIVersion("zorp.sandbar.dev/v1")
					u.SetKind("Wearer")
					u.SetNamespace(listedNamespace(i))
					u.SetName(fmt.Sprintf("w%05d", i))
					if err := k8s.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
						errs <- err
					}
				}
			})
		}
		for i := range listedInstances {
			names <- i
		}
		close(names)
		wg.Wait()
		close(errs)
		failed = <-errs
	})
	if failed != nil {
		b.Fatal(failed)
	}
}

// BenchmarkResourcesList10000Instances pages through resources/list as an account
// with every namespace that may list wearers cluster-wide, as a client does: page
// after page until no nextCursor, the 10,000 wearers of 500 namespaces among them.
func BenchmarkResourcesList10000Instances(b *testing.B) {
	listedWearers(b)
	cs := benchSession(b, serveDirect(b), readerTenant(b, true).token)
	pages := 0
	reviews, lists := reviewsAsked(b), apiRequests(b, "wearers", "LIST")
	for b.Loop() {
		n := 0
		cursor := ""
		for {
			res, err := cs.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			pages++
			for _, r := range res.Resources {
				if strings.Contains(r.URI, "/"+listedPrefix) {
					n++
				}
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		if n != listedInstances {
			b.Fatalf("listed %d wearers of %s*, not %d", n, listedPrefix, listedInstances)
		}
	}
	b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
	b.ReportMetric((reviewsAsked(b)-reviews)/float64(b.N), "reviews/op")
	b.ReportMetric((apiRequests(b, "wearers", "LIST")-lists)/float64(b.N), "api-lists/op")
}

// BenchmarkResourcesList10000InstancesBaseline lists the wearers' metadata from the
// API server with client-go, 500 a page, as the tests' administrator, and counts the
// 10,000 of the benchmark's namespaces.
func BenchmarkResourcesList10000InstancesBaseline(b *testing.B) {
	listedWearers(b)
	mc, err := metadata.NewForConfig(apiConfig)
	if err != nil {
		b.Fatal(err)
	}
	wearers := mc.Resource(schema.GroupVersionResource{Group: "zorp.sandbar.dev", Version: "v1", Resource: "wearers"})
	pages := 0
	lists := apiRequests(b, "wearers", "LIST")
	for b.Loop() {
		n := 0
		opts := metav1.ListOptions{Limit: 500}
		for {
			page, err := wearers.List(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			pages++
			for _, m := range page.Items {
				if strings.HasPrefix(m.Namespace, listedPrefix) {
					n++
				}
			}
			if opts.Continue = page.GetContinue(); opts.Continue == "" {
				break
			}
		}
		if n != listedInstances {
			b.Fatalf("listed %d wearers, not %d", n, listedInstances)
		}
	}
	b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
	b.ReportMetric((apiRequests(b, "wearers", "LIST")-lists)/float64(b.N), "api-lists/op")
}
