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

package testenv

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Process is what /proc says of one process: its CPU time (user and system) and its
// resident memory.
type Process struct {
	PID int
	CPU time.Duration
	RSS int64 // bytes
}

// Processes are the processes whose command line (its arguments, as exec gave them)
// match accepts, read from /proc; none where /proc cannot be read. Benchmarks measure
// with them what a server in a process of its own (the API server, a manager in a
// pod) spends.
func Processes(match func(args []string) bool) []Process {
	var out []Process
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmd) == 0 || !match(strings.Split(strings.TrimSuffix(string(cmd), "\x00"), "\x00")) {
			continue
		}
		if p, ok := readProcess(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// readProcess reads /proc/<pid>/stat: utime and stime are its 14th and 15th fields,
// in clock ticks (100 a second on Linux), and rss its 24th, in pages; the command
// name before them may hold spaces, so the fields are counted from its ")".
func readProcess(pid int) (Process, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Process{}, false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 22 {
		return Process{}, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	rss, err3 := strconv.ParseInt(fields[21], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Process{}, false
	}
	return Process{PID: pid, CPU: time.Duration(utime+stime) * 10 * time.Millisecond, RSS: rss * int64(os.Getpagesize())}, true
}

// CPU is the CPU time of the processes together.
func CPU(ps []Process) time.Duration {
	var sum time.Duration
	for _, p := range ps {
		sum += p.CPU
	}
	return sum
}

// APIRequests is how many requests an API server has answered, by its own count
// (apiserver_request_total, read from its /metrics through rc), of those whose labels
// (the text between the braces: verb="POST",resource="classes",...) match accepts;
// every request when match is nil.
func APIRequests(ctx context.Context, rc rest.Interface, match func(labels string) bool) (float64, error) {
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	total, seen := 0.0, false
	for _, line := range strings.Split(string(raw), "\n") {
		labels, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		seen = true
		end := strings.LastIndexByte(labels, '}')
		if end < 0 || (match != nil && !match(labels[:end])) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(labels[end+1:]), 64); err == nil {
			total += v
		}
	}
	if !seen { // not 0: a count that cannot be read must not pass for none
		return 0, errors.New("the API server's /metrics has no apiserver_request_total")
	}
	return total, nil
}

// Write says whether apiserver_request_total labels are a write's: a create, an
// update, a patch or a delete.
func Write(labels string) bool {
	for _, verb := range []string{`verb="POST"`, `verb="PUT"`, `verb="PATCH"`, `verb="DELETE"`} {
		if strings.Contains(labels, verb) {
			return true
		}
	}
	return false
}
