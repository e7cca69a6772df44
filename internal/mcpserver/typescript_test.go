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
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// TestTypeScriptSDKClient is a second opinion from another implementation of the
// protocol: hack/ts-client/client.mjs drives the server with the official
// TypeScript SDK client (@modelcontextprotocol/sdk from npm, installed by
// `make ts-client`, which `make test` runs).
func TestTypeScriptSDKClient(t *testing.T) {
	tsClient(t)
	key := client.ObjectKey{Namespace: "default", Name: "ts-boot"}
	obj := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "zorp.sandbar.dev", Version: "v1", Kind: "SpaceBoot"})
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		return u
	}
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), obj()); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", key, err)
		}
	})

	// The server adds a class's create tool when it sees the class in a catalog
	// snapshot; wait until it serves it, so that the script lists it for sure.
	waitForTool(t, "sandbar_class_zorp_SpaceBoot")
	runScript(t, "client.mjs", "MCP_URL="+mcpURL, "MCP_TOKEN="+token)

	// The instance the script created is there, with the slot it gave.
	u := obj()
	if err := k8s.Get(context.Background(), key, u); err != nil {
		t.Fatalf("getting the SpaceBoot %s the script created: %v", key, err)
	}
	name, found, err := unstructured.NestedString(u.Object, "spec", "name")
	if err != nil || !found || name != "TS Boot" {
		t.Fatalf("SpaceBoot %s has spec.name %q (found %v, err %v), want %q; spec: %v",
			key, name, found, err, "TS Boot", u.Object["spec"])
	}
}

// tsClient is the folder of the TypeScript SDK client scripts (hack/ts-client) and
// the node that runs them; the test fails without them.
func tsClient(t *testing.T) (dir, node string) {
	t.Helper()
	dir = filepath.Join(testenv.RepoRoot(), "hack", "ts-client")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal("run make test (it installs the TypeScript SDK client)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the TypeScript SDK client needs Node.js (node on PATH): %v", err)
	}
	return dir, node
}

// runScript runs a script of hack/ts-client with env ("NAME=value" entries, which
// replace the environment's MCP_* and same-named ones) for at most 60 s, and
// answers what it printed; a script that fails or overruns fails the test.
func runScript(t *testing.T, script string, env ...string) []byte {
	t.Helper()
	dir, node := tsClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script))
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(name, "MCP_") || slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
	}), env...)
	out, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s did not finish within 60 s; output:\n%s", script, out)
	}
	if err != nil {
		t.Fatalf("%s failed (%v); output:\n%s", script, err, out)
	}
	t.Logf("%s: %s", script, strings.TrimSpace(string(out)))
	return out
}

// waitForTool waits until the suite's server lists a tool to the suite's account.
func waitForTool(t *testing.T, name string) {
	t.Helper()
	cs := connect(t, mcpURL, token, nil)
	var listErr error
	if err := waitFor(func() bool {
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				listErr = err
				return false
			}
			if tool.Name == name {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the server does not serve %s: %v (last tools/list error: %v)", name, err, listErr)
	}
}

// TestTypeScriptSDKClientsConfirmADelete is a second opinion on confirmations:
// hack/ts-client/confirm.mjs deletes one SpaceBoot with the TypeScript SDK v1 client
// (the server asks through elicitation/create on 2025-11-25) and another with the
// v2 client pinned to 2026-07-28 (an input_required result its elicitation handler
// answers); the user accepts each time, and both instances are gone.
func TestTypeScriptSDKClientsConfirmADelete(t *testing.T) {
	tsClient(t)
	_, tok := newAccount(t, unique("ts-confirm"), deleter)
	v1, v2 := unique("ts-confirm-v1"), unique("ts-confirm-v2")
	newBoot(t, "default", v1, map[string]any{"name": "TS v1"})
	newBoot(t, "default", v2, map[string]any{"name": "TS v2"})

	runScript(t, "confirm.mjs", "MCP_URL="+mcpURL, "MCP_TOKEN="+tok, "BOOT_V1="+v1, "BOOT_V2="+v2)
	for _, name := range []string{v1, v2} {
		if err := waitFor(func() bool { exists, _ := bootExists(t, "default", name); return !exists }); err != nil {
			t.Errorf("the SpaceBoot %s the script deleted after the user accepted is still there", name)
		}
	}
}
