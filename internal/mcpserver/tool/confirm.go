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

package tool

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConfirmArg is the argument of a tool that asks for confirmation (Spec.Confirms):
// true is the model's word that its user has agreed already. It spares a careful
// model's user a question; it controls nothing (the account's spec.confirm: false
// does the same for every call). What a platform must hold is a call policy's, and
// no argument of the call changes a policy's decision.
const ConfirmArg = "confirm"

// confirmID is the id of the confirmation among a call's input requests, and
// confirmKind the kind of the sealed state the client hands back with the answer.
const (
	confirmID   = "confirm"
	confirmKind = "confirmation"
)

// Asking is what a call knows of asking the client's user.
type Asking struct {
	// Confirmed: the call's confirm argument is true.
	Confirmed bool
	// CanAsk: the client declares elicitation in form mode (in initialize, or on
	// 2026-07-28 in the request's _meta: TakesForms), so it can put a question to
	// its user.
	CanAsk bool
	// Answers are what the client answered to the call's earlier questions (the
	// inputResponses of a call made again), and State the requestState it hands
	// back with them.
	Answers mcp.InputResponseMap
	State   string
}

// TakesForms says whether a client with these capabilities can be asked a question
// with a form (elicitation in form mode: an elicitation capability that names no
// mode takes forms; one that names only url does not).
func TakesForms(caps *mcp.ClientCapabilities) bool {
	return caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
}

// NeedsInput is what a call answers when it must ask the user first: the SDK sends
// the questions (as input_required to a client of 2026-07-28, as elicitation/create
// to a session's client) and the call is made again with the answers.
type NeedsInput struct {
	Requests mcp.InputRequestMap
	State    string
}

func (*NeedsInput) Error() string { return "the call needs the user's input" }

// Confirm asks the user to confirm what the call is about to do (question, a
// sentence that ends in a question mark), unless the call says it is confirmed
// (confirm: true) or the account asks for no confirmations. It answers nil once
// confirmed; a NeedsInput while the client can ask its user; and a domain error
// when the user declined, or the client cannot ask: then the error says to ask the
// user and call again with confirm: true.
func (c *Call) Confirm(question string) error {
	if c.Confirmed() {
		return nil
	}
	scope := c.Scope(confirmKind, question)
	if answer, ok := c.Asking.Answers[confirmID]; ok {
		var nothing struct{}
		if err := c.Tokens().Open(confirmKind, scope, c.Asking.State, &nothing); err != nil {
			return BadArgs("the answer to the confirmation comes without the requestState this server gave out for this call " +
				"(or with a stale one): call again without it (no inputResponses) to be asked again")
		}
		if r, ok := answer.(*mcp.ElicitResult); ok && r.Action == "accept" && r.Content[ConfirmArg] == true {
			return nil
		}
		return Fail("the user did not confirm, so nothing was done: %s", question)
	}
	if c.Asking.CanAsk {
		return &NeedsInput{State: c.Tokens().Seal(confirmKind, scope, struct{}{}), Requests: mcp.InputRequestMap{
			confirmID: &mcp.ElicitParams{Mode: "form", Message: question, RequestedSchema: map[string]any{
				"type": "object", "required": []string{ConfirmArg},
				"properties": map[string]any{ConfirmArg: map[string]any{
					"type": "boolean", "title": "Confirm", "description": "Yes, go ahead.",
				}},
			}},
		}}
	}
	return Fail("%s This needs the user's confirmation, and the client cannot ask its user (it declares no elicitation with forms): "+
		"ask the user, then call again with %q: true", question, ConfirmArg)
}

// Confirmed reports whether Confirm would ask nothing: the call says it is
// confirmed, or the account asks for no confirmations. A verb that must read to
// put its question can skip the reads then.
func (c *Call) Confirmed() bool {
	return c.Asking.Confirmed || (c.Account != nil && c.Account.NoConfirm)
}

// readConfirm takes the confirm argument out of a call's arguments: whether it is
// true, and the other arguments. A value that is not a boolean is refused.
func readConfirm(raw json.RawMessage) (bool, json.RawMessage, error) {
	if !bytes.Contains(raw, []byte(ConfirmArg)) && bytes.IndexByte(raw, '\\') < 0 {
		return false, raw, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil || args[ConfirmArg] == nil {
		return false, raw, nil
	}
	var confirmed bool
	if err := json.Unmarshal(args[ConfirmArg], &confirmed); err != nil {
		return false, nil, BadArgs("argument %q must be a boolean (true once the user has agreed)", ConfirmArg)
	}
	delete(args, ConfirmArg)
	rest, err := json.Marshal(args)
	return confirmed, rest, err
}

// addConfirmArg declares the confirm argument in an input schema.
func addConfirmArg(s *jsonschema.Schema) {
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	s.Properties[ConfirmArg] = &jsonschema.Schema{Type: "boolean",
		Description: "true: your word that the user agreed to this call, so the server asks nothing. Without it the server asks the user through the client, where the client can ask. " +
			"It is a courtesy to the user, not a permission: call policies apply all the same."}
}

// needsInput is the result that asks the client's user, from a NeedsInput error.
func needsInput(err error) (*mcp.CallToolResult, bool) {
	var n *NeedsInput
	if !errors.As(err, &n) {
		return nil, false
	}
	return &mcp.CallToolResult{InputRequests: n.Requests, RequestState: n.State}, true
}
