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

package verbs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/mcptest"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/seal"
	"github.com/sandbar-dev/sandbar/internal/testenv"
)

// asker is a go-sdk client of a revision whose user answers every question with
// action (nil: a client that declares no elicitation), counting the questions.
func asker(t *testing.T, s *mcptest.Server, revision, action string, asked *atomic.Int32) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if action != "" {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if !strings.Contains(req.Params.Message, "for good?") {
				t.Errorf("the question does not say what is deleted: %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: action, Content: map[string]any{"confirm": action == "accept"}}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandbar-test", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: testenv.Bearer{Token: s.Token}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connecting at %s: %v", revision, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A delete asks the user first, through the client: elicitation on a 2025-11-25
// session, an input_required result on 2026-07-28. The instance goes only when the
// user accepts; a client that cannot ask is told to ask and send confirm: true.
func TestDeleteAsksTheUserFirst(t *testing.T) {
	s := mcptest.Running(t)
	for _, revision := range []string{mcptest.SessionRevision, mcptest.StatelessRevision} {
		t.Run(revision, func(t *testing.T) {
			for _, action := range []string{"accept", "decline", "cancel", ""} {
				f := &fixture{g: NewWithT(t), t: t, server: s, id: fmt.Sprintf("ask%d", runs.Add(1))}
				var asked atomic.Int32
				f.cs = asker(t, s, revision, action, &asked)
				name := f.boot(nil)
				res, text := f.call("sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": name})
				gone := f.instance("SpaceBoot", name) == nil
				switch action {
				case "accept":
					f.g.Expect(res.IsError).To(BeFalse(), text)
					f.g.Expect(gone).To(BeTrue(), "accepted: the instance is gone")
					f.g.Expect(asked.Load()).To(Equal(int32(1)))
				case "":
					f.g.Expect(res.IsError).To(BeTrue())
					f.g.Expect(text).To(And(ContainSubstring("the client cannot ask its user"), ContainSubstring(`"confirm": true`)))
					f.g.Expect(gone).To(BeFalse(), "nothing is deleted unasked")
					res, text = f.call("sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": name, "confirm": true})
					f.g.Expect(res.IsError).To(BeFalse(), text)
					f.g.Expect(f.instance("SpaceBoot", name)).To(BeNil(), "confirm: true deletes it")
				default:
					f.g.Expect(res.IsError).To(BeTrue())
					f.g.Expect(text).To(ContainSubstring("the user did not confirm, so nothing was done"))
					f.g.Expect(gone).To(BeFalse(), "%s: the instance stays", action)
				}
			}
		})
	}
}

// The answer a client of 2026-07-28 hands back is checked before it is used: an
// accept without the requestState the server gave out, or with one of another
// call, deletes nothing.
func TestForgedConfirmationIsRefused(t *testing.T) {
	s := mcptest.Running(t)
	f := &fixture{g: NewWithT(t), t: t, server: s, id: fmt.Sprintf("forged%d", runs.Add(1))}
	f.cs = s.Client(t, mcptest.StatelessRevision)
	name := f.boot(nil)
	call := func(state string) (int64, string) {
		params := map[string]any{"name": "sandbar_entity_delete", "arguments": map[string]any{"class": "zorp/SpaceBoot", "name": name},
			"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
		if state != "" {
			params["requestState"] = state
		}
		answer, _ := s.Request(t, mcptest.VariantStateless, "tools/call", params)
		var res struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		code, msg := mcptest.ErrorOf(answer)
		if code != 0 {
			return code, msg
		}
		f.g.Expect(json.Unmarshal(answer.Result, &res)).To(Succeed())
		if !res.IsError {
			return 0, ""
		}
		return 0, res.Content[0].Text
	}
	sealer, err := seal.New(mcptest.TokenKey)
	f.g.Expect(err).NotTo(HaveOccurred())
	question := func(instance string) string {
		return seal.Scope("sandbar_entity_delete", mcptest.Home, "claude", "", "confirmation",
			`Delete the zorp/SpaceBoot "`+instance+`" in namespace "default" for good?`)
	}
	another := sealer.Seal("confirmation", question("another-boot"), struct{}{})
	for _, state := range []string{"", "forged", strings.Repeat("A", 20000), another} {
		_, msg := call(state)
		f.g.Expect(msg).To(ContainSubstring("requestState"), "state %.20q", state)
		f.g.Expect(f.instance("SpaceBoot", name)).NotTo(BeNil(), "state %.20q: nothing is deleted", state)
	}
	// The state the server gives out for this very call is taken.
	_, msg := call(sealer.Seal("confirmation", question(name), struct{}{}))
	f.g.Expect(msg).To(BeEmpty(), "the call's own state is taken")
	f.g.Expect(f.instance("SpaceBoot", name)).To(BeNil())
}

// An account with spec.confirm: false (an agent that runs unattended) deletes
// without a question.
func TestAccountWithoutConfirmationsIsNotAsked(t *testing.T) {
	no := false
	s := startWith(t, mcptest.Config{Account: func(spec *metav1alpha1.ServiceAccountSpec) {
		spec.Confirm = &no
	}})
	f := &fixture{g: NewWithT(t), t: t, server: s, id: fmt.Sprintf("unattended%d", runs.Add(1))}
	var asked atomic.Int32
	f.cs = asker(t, s, mcptest.SessionRevision, "decline", &asked)
	name := f.boot(nil)
	res, text := f.call("sandbar_entity_delete", map[string]any{"class": "zorp/SpaceBoot", "name": name})
	f.g.Expect(res.IsError).To(BeFalse(), text)
	f.g.Expect(f.instance("SpaceBoot", name)).To(BeNil())
	f.g.Expect(asked.Load()).To(BeZero())
}

// An import's question names how many items it imports and how many existing
// instances it overwrites, the first few by class and name. An item whose content is
// the instance's already, given as attributes or as a markdown source, overwrites
// nothing, and a bundle of such items starts without a question.
func TestImportNamesTheInstancesItWouldOverwrite(t *testing.T) {
	s := startWith(t, mcptest.Config{RunWorkflows: true})
	f := &fixture{g: NewWithT(t), t: t, server: s, id: "overwrites"}
	f.cs = s.Client(t, mcptest.SessionRevision)
	create := func(name, value string) map[string]any {
		f.answer("sandbar_entity_create", map[string]any{"class": "zorp/SpaceBoot", "attributes": map[string]any{"name": value},
			"metadata": map[string]any{"name": name}})
		return map[string]any{"class": "zorp/SpaceBoot", "name": name, "attributes": map[string]any{"name": value}}
	}
	same := []any{
		create("same", "Same"),
		map[string]any{"class": "zorp/SpaceBoot", "source": "---\nmetadata:\n  name: same-md\nname: Same in markdown\n---\n"},
	}
	create("same-md", "Same in markdown")
	changed := []any{}
	for _, name := range []string{"o-1", "o-2", "o-3", "o-4", "o-5"} {
		item := create(name, "Old")
		item["attributes"] = map[string]any{"name": "New"}
		changed = append(changed, item)
	}

	out := f.answer("sandbar_project_import", map[string]any{"bundle": map[string]any{"items": same}})
	result := f.answer("sandbar_tasks_result", map[string]any{"taskId": taskOf(out), "waitSeconds": 5})
	f.g.Expect(result["result"]).To(HaveKeyWithValue("unchanged", 2.0), "unasked, the import ran and changed nothing")

	res, text := f.call("sandbar_project_import", map[string]any{"bundle": map[string]any{"items": append(same, changed...)}})
	f.g.Expect(res.IsError).To(BeTrue(), text)
	f.g.Expect(text).To(HavePrefix(`Import 7 items into namespace "default", overwriting 5 existing instances: ` +
		`zorp/SpaceBoot "o-1", zorp/SpaceBoot "o-2", zorp/SpaceBoot "o-3" and 2 more? `))
	f.g.Expect(f.instance("SpaceBoot", "o-1").Object["spec"]).To(HaveKeyWithValue("name", "Old"), "nothing was imported")
}
