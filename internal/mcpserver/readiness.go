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

package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// APIServerCheck is a readiness check that fails while the Kubernetes API server
// does not answer its own /readyz within 2 s: a replica that cannot reach it cannot
// serve a tool call, so its Service endpoint is taken out and an Ingress sends
// clients to a replica that can. An answer is kept for a second, so that probes add
// no load.
func APIServerCheck(cfg *rest.Config) (healthz.Checker, error) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	rc := cs.Discovery().RESTClient()
	var mu sync.Mutex
	var checked time.Time
	var last error
	return func(req *http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(checked) < time.Second {
			return last
		}
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		last = nil
		if err := rc.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			last = fmt.Errorf("the Kubernetes API server does not answer: %w", err)
		}
		checked = time.Now()
		return last
	}, nil
}
