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
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
)

// Balance starts a loopback load balancer without affinity in front of the servers
// of urls: each request goes to the next server, whatever session it belongs to. It
// returns the balancer's URL with the path of the first, and a function that stops it.
func Balance(urls ...string) (string, func(), error) {
	rr := &roundRobin{}
	var path string
	for _, u := range urls {
		target, err := url.Parse(u)
		if err != nil {
			return "", nil, err
		}
		if path == "" {
			path = target.Path
		}
		target.Path = ""
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1 // streams go through as they come
		rr.servers = append(rr.servers, p)
	}
	lb := httptest.NewServer(rr)
	return lb.URL + path, lb.Close, nil
}

type roundRobin struct {
	mu      sync.Mutex
	next    int
	servers []*httputil.ReverseProxy
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.mu.Lock()
	p := rr.servers[rr.next%len(rr.servers)]
	rr.next++
	rr.mu.Unlock()
	fullDuplex(w)
	p.ServeHTTP(w, r)
}

// fullDuplex lets a proxy send the rest of a request's body to its replica while the
// replica's answer goes back. Without it, Go's HTTP/1 server drains and closes the
// body when the answer begins (unless the connection closes after the answer), the
// proxy's transport fails on its next read of it and cuts its connection to the
// replica in the middle of the answer (golang/go#40747). An ingress buffers the
// request or streams it, and never cuts the answer.
func fullDuplex(w http.ResponseWriter) {
	_ = http.NewResponseController(w).EnableFullDuplex() // an httptest server supports it
}
