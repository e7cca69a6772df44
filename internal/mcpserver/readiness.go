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
	p, err := newAPIServerProbe(cfg)
	if err != nil {
		return nil, err
	}
	return func(req *http.Request) error { return p.answers(req.Context()) }, nil
}

// probeTimeout bounds one question to the API server's /readyz.
const probeTimeout = 2 * time.Second

// apiServerProbe asks the Kubernetes API server's /readyz, at most once a second:
// whoever asks meanwhile gets the last answer, or waits for the question under way
// until its own context ends. The readiness check and the authentication (which
// lets a refusal stand only while the API server answers) ask it.
type apiServerProbe struct {
	rc rest.Interface

	mu      sync.Mutex
	checked time.Time
	last    error
	// asking is closed when the question under way has its answer.
	asking chan struct{}
}

func newAPIServerProbe(cfg *rest.Config) (*apiServerProbe, error) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	return &apiServerProbe{rc: cs.Discovery().RESTClient()}, nil
}

// answers is nil when the API server answered its last question, asked within the
// last second, or asked now before ctx ends.
func (p *apiServerProbe) answers(ctx context.Context) error {
	p.mu.Lock()
	if !p.checked.IsZero() && time.Since(p.checked) < time.Second {
		defer p.mu.Unlock()
		return p.last
	}
	asking := p.asking
	if asking == nil {
		asking = make(chan struct{})
		p.asking = asking
		go p.ask(asking)
	}
	p.mu.Unlock()
	select {
	case <-asking:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.last
	case <-ctx.Done():
		return fmt.Errorf("the Kubernetes API server does not answer: %w", ctx.Err())
	}
}

// ask asks /readyz once, within probeTimeout, and closes asking with the answer kept.
func (p *apiServerProbe) ask(asking chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var last error
	if err := p.rc.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		last = fmt.Errorf("the Kubernetes API server does not answer: %w", err)
	}
	p.mu.Lock()
	p.last, p.checked, p.asking = last, time.Now(), nil
	p.mu.Unlock()
	close(asking)
}
