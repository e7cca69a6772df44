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

package scale_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memCgroup is a memory cgroup of its own for the manager, limited as a container's
// limits.memory limits it: the kernel reclaims the group's page cache as it nears the
// limit and kills the process if it cannot, and the manager's Go runtime reads the
// limit at start (GOMEMLIMIT). Version 1 and version 2 hierarchies both work.
type memCgroup struct {
	dir string
	v2  bool
}

// newMemCgroup makes a child of the benchmark's own memory cgroup, limited to
// limit bytes. It needs a writable cgroup file system (root in a container that
// mounts it so, or a delegated hierarchy).
func newMemCgroup(limit int64) (*memCgroup, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var cg memCgroup
	for line := range strings.Lines(string(own)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			cg.dir = filepath.Join("/sys/fs/cgroup/memory", parts[2])
		case parts[0] == "0" && parts[1] == "" && cg.dir == "":
			root := "/sys/fs/cgroup"
			if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
				root = "/sys/fs/cgroup/unified"
			}
			cg.dir, cg.v2 = filepath.Join(root, parts[2]), true
		}
	}
	if cg.dir == "" {
		return nil, errors.New("this process is in no memory cgroup")
	}
	cg.dir = filepath.Join(cg.dir, fmt.Sprintf("sandbar-classcurve-%d", os.Getpid()))
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		return nil, fmt.Errorf("making a memory cgroup: %w", err)
	}
	file := "memory.limit_in_bytes"
	if cg.v2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		cg.remove()
		return nil, fmt.Errorf("limiting the memory cgroup: %w", err)
	}
	return &cg, nil
}

// evict drops a file's pages from the page cache, so that the process that runs it
// next reads them again, charged to its own cgroup as a container's first start is:
// a binary just built is in the cache on the builder's account.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// wrap is a command line that joins the cgroup and then runs argv, so that the
// process is in the cgroup from its first instruction.
func (cg *memCgroup) wrap(argv []string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ > "$0" && shift && exec "$@"`,
		filepath.Join(cg.dir, "cgroup.procs"), "--"}, argv...)
}

// stats are the group's peak usage in MiB (page cache included, as the kernel
// counts it against the limit) and the processes the kernel killed for memory.
func (cg *memCgroup) stats() (peakMiB float64, oomKills int64, err error) {
	peakFile, eventsFile, killKey := "memory.max_usage_in_bytes", "memory.oom_control", "oom_kill"
	if cg.v2 {
		peakFile, eventsFile = "memory.peak", "memory.events"
	}
	raw, err := os.ReadFile(filepath.Join(cg.dir, peakFile))
	if err != nil {
		return 0, 0, err
	}
	peak, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	f, err := os.Open(filepath.Join(cg.dir, eventsFile))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == killKey {
			oomKills, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return float64(peak) / mib, oomKills, sc.Err()
}

// remove deletes the group; it must have no process left.
func (cg *memCgroup) remove() { _ = os.Remove(cg.dir) }
