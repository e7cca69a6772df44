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

// Package faults stands between clients and servers in tests, as the network of a
// real cluster does: a TCP proxy (between the manager and its API server) that can
// hold every byte, as a paused or overloaded server does, or cut every connection,
// as a server that went away does; a load balancer without affinity in front of
// several replicas; and a pool that probes replicas' readiness and keeps sessions on
// their replica.
package faults

import (
	"net"
	"sync"
)

// Proxy forwards loopback connections to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cond  *sync.Cond
	held  bool
	cut   bool
	conns map[net.Conn]struct{}
	done  bool
}

// Start listens on a loopback port and forwards every connection to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	return p, nil
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Hold stops forwarding: connections stay open and what is sent on them waits,
// as it does for a paused server, until Release.
func (p *Proxy) Hold() { p.set(true, false) }

// Cut closes every connection and every new one at once, as a server that went
// away does, until Release.
func (p *Proxy) Cut() {
	p.set(false, true)
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

// Release forwards again, and what was held goes on.
func (p *Proxy) Release() { p.set(false, false) }

func (p *Proxy) set(held, cut bool) {
	p.mu.Lock()
	p.held, p.cut = held, cut
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.done, p.held = true, false
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	return p.ln.Close()
}

func (p *Proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut || p.done
		p.mu.Unlock()
		if cut {
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !p.track(in, out) {
			continue
		}
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from one side to the other, waiting while the proxy holds.
func (p *Proxy) pipe(from, to net.Conn) {
	defer func() {
		_ = from.Close()
		_ = to.Close()
		p.mu.Lock()
		delete(p.conns, from)
		delete(p.conns, to)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.held && !p.done {
				p.cond.Wait()
			}
			stop := p.cut || p.done
			p.mu.Unlock()
			if stop {
				return
			}
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
