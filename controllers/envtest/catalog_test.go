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

package envtest_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sandbar-dev/sandbar/controllers"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// A manager whose caches hold no metamodel at all (a cluster that declares nothing)
// still builds its catalog once they have synced: its store says it was built, with
// the empty first snapshot, and so its MCP server gets ready. No watch event would
// ever ask for that build.
func TestTheCatalogIsBuiltWhenTheClusterDeclaresNothing(t *testing.T) {
	g := NewWithT(t)
	// Its caches select no object: a label no object has.
	nothing := labels.SelectorFromSet(labels.Set{"sandbar.dev/test-selects": uniq("nothing")})
	// The suite's manager has a catalog controller of the same name.
	skipNameValidation := true
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:     controllers.NewScheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultLabelSelector: nothing},
		Controller: config.Controller{SkipNameValidation: &skipNameValidation},
	})
	g.Expect(err).NotTo(HaveOccurred())
	st := catalog.NewStore()
	g.Expect((&controllers.CatalogReconciler{Reader: mgr.GetClient(), Store: st}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})

	g.Eventually(func() bool { _, ok := st.Built(); return ok }).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(),
		"the catalog was never built")
	v, _ := st.Built()
	g.Expect(v).To(BeZero())
	g.Expect(st.Load().Classes).To(BeEmpty())
	g.Expect(st.Load().Accounts).To(BeEmpty())
}
