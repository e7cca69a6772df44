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

package faults

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a load balancer in front of replicas as a cluster has one: it probes each
// replica's /readyz (every 50 ms) and sends requests only to ready replicas, a new
// session to the next one in turn. It keeps a session on its replica (affinity): it
// learns from the answer to initialize which replica holds which Mcp-Session-Id, as
// HAProxy's `stick store-response res.hdr(Mcp-Session-Id)` does. A session whose
// replica is not ready goes to the next ready one, which does not know it.
type Pool struct {
	// URL is the pool's address with the path of the first replica's URL.
	URL string

	lb       *httptest.Server
	replicas []*poolReplica
	stop     context.CancelFunc
	probes   sync.WaitGroup

	mu       sync.Mutex
	next     int
	sessions map[string]int

	unknownSessions atomic.Int64
	unreachable     atomic.Int64
}

type poolReplica struct {
	proxy  *httputil.ReverseProxy
	readyz string
	ready  atomic.Bool
}

// NewPool starts a pool in front of the replicas at urls (their MCP endpoints; /readyz
// is read on the same host). Close stops it.
func NewPool(urls ...string) (*Pool, error) {
	ctx, stop := context.WithCancel(context.Background())
	p := &Pool{stop: stop, sessions: map[string]int{}}
	var path string
	for i, u := range urls {
		target, err := url.Parse(u)
		if err != nil {
			stop()
			return nil, err
		}
		if path == "" {
			path = target.Path
		}
		readyz := *target
		readyz.Path = "/readyz"
		target.Path = ""
		r := &poolReplica{proxy: httputil.NewSingleHostReverseProxy(target), readyz: readyz.String()}
		r.proxy.FlushInterval = -1 // streams go through as they come
		r.proxy.ErrorLog = log.New(io.Discard, "", 0)
		r.proxy.ModifyResponse = func(resp *http.Response) error {
			if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
				p.mu.Lock()
				p.sessions[id] = i
				p.mu.Unlock()
			}
			if resp.StatusCode == http.StatusNotFound && resp.Request.Header.Get("Mcp-Session-Id") != "" {
				p.unknownSessions.Add(1)
			}
			return nil
		}
		r.proxy.ErrorHandler = func(w http.ResponseWriter, req *http.Request, err error) {
			if req.Context().Err() == nil { // not a client that went away
				p.unreachable.Add(1)
			}
			http.Error(w, "the replica cannot be reached: "+err.Error(), http.StatusBadGateway)
		}
		p.replicas = append(p.replicas, r)
		p.probes.Add(1)
		go p.probe(ctx, r)
	}
	p.lb = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.lb.URL + path
	return p, nil
}

// probe follows a replica's /readyz until the pool closes.
func (p *Pool) probe(ctx context.Context, r *poolReplica) {
	defer p.probes.Done()
	c := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok := false
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.readyz, nil); err == nil {
			if resp, err := c.Do(req); err == nil {
				ok = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
		}
		r.ready.Store(ok)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *Pool) serve(w http.ResponseWriter, r *http.Request) {
	i, ok := p.pick(r.Header.Get("Mcp-Session-Id"))
	if !ok {
		http.Error(w, "no replica is ready", http.StatusServiceUnavailable)
		return
	}
	fullDuplex(w)
	p.replicas[i].proxy.ServeHTTP(w, r)
}

// pick is the session's replica while it is ready, else the next ready one.
func (p *Pool) pick(session string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i, ok := p.sessions[session]; ok && p.replicas[i].ready.Load() {
		return i, true
	}
	for range p.replicas {
		i := p.next % len(p.replicas)
		p.next++
		if p.replicas[i].ready.Load() {
			return i, true
		}
	}
	return 0, false
}

// Ready reports whether the pool sends requests to replica i (the i-th URL).
func (p *Pool) Ready(i int) bool { return p.replicas[i].ready.Load() }

// Holder is the replica that made a session, or -1.
func (p *Pool) Holder(session string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i, ok := p.sessions[session]; ok {
		return i
	}
	return -1
}

// UnknownSessions counts the 404 answers to requests that named a session: requests
// that reached a replica that does not hold their session.
func (p *Pool) UnknownSessions() int64 { return p.unknownSessions.Load() }

// Unreachable counts the requests the pool sent to a replica it could not reach or
// that broke off before its answer began (answered 502).
func (p *Pool) Unreachable() int64 { return p.unreachable.Load() }

// Close stops the pool.
func (p *Pool) Close() {
	p.stop()
	p.probes.Wait()
	p.lb.CloseClientConnections()
	p.lb.Close()
}
