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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// lockedBuffer collects a script's stdout and stderr for the failure message.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTypeScriptSDKStatelessClient is the second opinion on the stateless revision
// 2026-07-28: hack/ts-client/stateless.mjs drives the server with the TypeScript
// SDK v2 client (@modelcontextprotocol/client: server/discover, no session,
// subscriptions/listen) and the Tasks extension's client
// (@modelcontextprotocol/ext-tasks), both from npm, installed by `make ts-client`.
func TestTypeScriptSDKStatelessClient(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "hack", "ts-client")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "ext-tasks")); err != nil {
		t.Fatal("run make test (it installs the TypeScript SDK clients)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the TypeScript SDK client needs Node.js (node on PATH): %v", err)
	}

	key := client.ObjectKey{Namespace: "default", Name: unique("ts-v2")}
	const slot = "TS Stateless Boot"
	boot := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot"})
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		return u
	}
	// The Class the test applies once the script listens: its tool must be announced.
	kind := "Tsv" + strings.ToLower(unique("x")[2:])
	ident := "zorp." + strings.ToLower(kind)
	prop := &metav1alpha1.Property{ObjectMeta: metav1.ObjectMeta{Name: ident + ".peak"}, Spec: metav1alpha1.PropertySpec{Range: metav1alpha1.RangeNumber}}
	class := &metav1alpha1.Class{ObjectMeta: metav1.ObjectMeta{Name: ident}, Spec: metav1alpha1.ClassSpec{
		Prefix: "zorp", Kind: kind, Slots: []metav1alpha1.SlotRef{{Property: prop.Name}},
	}}
	t.Cleanup(func() {
		for _, o := range []client.Object{boot(), class, prop} {
			if err := k8s.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", o.GetName(), err)
			}
		}
	})

	// Wait until the server serves the create tool, so that the script lists it.
	waitForTool(t, "sandbar_class_zorp_SpaceBoot")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "stateless.mjs"))
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, v := range []string{"MCP_URL=", "MCP_TOKEN=", "BOOT_NAME=", "BOOT_SLOT=", "LISTEN_TOOL="} {
			if strings.HasPrefix(kv, v) {
				return true
			}
		}
		return false
	}), "MCP_URL="+mcpURL, "MCP_TOKEN="+token, "BOOT_NAME="+key.Name, "BOOT_SLOT="+slot,
		"LISTEN_TOOL=sandbar_class_zorp_"+kind)
	var out lockedBuffer
	cmd.Stderr = &out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the TypeScript SDK client: %v", err)
	}
	// The script prints READY once its subscriptions/listen stream is acknowledged;
	// then the Class is applied, and the script waits for the announcement.
	var last string
	var applyErr error
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		_, _ = out.Write([]byte(line + "\n"))
		if line == "READY" && applyErr == nil {
			applyErr = errors.Join(k8s.Create(context.Background(), prop), k8s.Create(context.Background(), class))
		}
		if strings.HasPrefix(line, "{") {
			last = line
		}
	}
	err = cmd.Wait()
	if applyErr != nil {
		t.Fatalf("applying the Class %s: %v", ident, applyErr)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("the TypeScript SDK client did not finish within 60 s; output:\n%s", out.String())
	}
	if err != nil {
		t.Fatalf("the TypeScript SDK client failed (%v); output:\n%s", err, out.String())
	}
	t.Logf("TypeScript SDK v2 client: %s", strings.TrimSpace(out.String()))

	// The instance the script created is there, with the slot it gave.
	u := boot()
	if err := k8s.Get(context.Background(), key, u); err != nil {
		t.Fatalf("getting the SpaceBoot %s the script created: %v", key, err)
	}
	name, found, err := unstructured.NestedString(u.Object, "spec", "name")
	if err != nil || !found || name != slot {
		t.Fatalf("SpaceBoot %s has spec.name %q (found %v, err %v), want %q; spec: %v",
			key, name, found, err, slot, u.Object["spec"])
	}
	// The export ran as a task: a WorkflowProcess that succeeded.
	var seen struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal([]byte(last), &seen); err != nil || seen.TaskID == "" {
		t.Fatalf("the script's summary has no taskId (%v): %q", err, last)
	}
	var proc metav1alpha1.WorkflowProcess
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: seen.TaskID}, &proc); err != nil {
		t.Fatalf("getting the WorkflowProcess %s of the export task: %v", seen.TaskID, err)
	}
	if proc.Status.Phase != metav1alpha1.PhaseSucceeded {
		t.Fatalf("the export task %s is %q, want %q", seen.TaskID, proc.Status.Phase, metav1alpha1.PhaseSucceeded)
	}
}
