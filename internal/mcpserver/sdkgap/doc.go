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

// Package sdkgap is the room of the code that fills a gap of go-sdk v1.8.0 or answers
// ahead of it, and this comment is its register: for each workaround, what the SDK
// does or lacks, what we do instead, where, and the canary test that fails once the
// SDK catches up. The packages below it hold the code:
//
//   - transport: what the SDK's HTTP handlers do not serve, and the reading of a
//     POSTed message ahead of the SDK (transport.Peek).
//   - tasks: MCP Tasks, in both of its forms.
//   - ahead: tools/list answers rendered once, and a live session's kept list, ping
//     and tasks/get answered without the SDK's transport.
//
// The canaries (this package's tests, in make test-unit) drive go-sdk alone: its
// server, its HTTP handlers, its in-memory transport and its types, with nothing of
// ours in between, and assert that the gap is still there. Each failure says what
// the SDK now does and what to remove. A new workaround gets an entry here and a
// canary; one whose gap cannot be seen from outside the SDK names the go-sdk issue
// to watch instead.
//
// # Tasks, revision 2025-11-25
//
// go-sdk v1.8.0 has no Tasks: no tasks capability, no execution.taskSupport on a
// tool, no tasks/get, tasks/list, tasks/result or tasks/cancel (-32601).
// tasks.Adapter declares the capability and each tool's support, turns a
// task-augmented tools/call into a WorkflowProcess, and serves the four methods
// with mcp.AddReceivingCustomMethod (tasks/adapter.go). Canary:
// TestCanarySDKHasNoTasks. Watch [go-sdk#626].
//
// # Tasks extension of revision 2026-07-28 (io.modelcontextprotocol/tasks)
//
// go-sdk v1.8.0's stateless handler declares no such extension in server/discover
// and answers tasks/get with -32601, even to a client that declared it; its results
// have no resultType "task". tasks.Adapter's stateless form declares it, answers a
// long-running tool with a task, and serves tasks/get (with the result once the
// task ends), tasks/update and tasks/cancel (tasks/adapter.go). Its input path: a
// process of a user workflow, which waits in each state for a transition, is an
// input_required task to a client that declared elicitation, with one form that
// asks which transition to take, and that client's tasks/update takes it
// (tasks/input.go). Canary:
// TestCanarySDKHasNoTasksExtension. Watch [go-sdk#942] (closed: "no work in the
// SDK, given we haven't implemented them yet").
//
// # notifications/tasks/status
//
// go-sdk v1.8.0 sends only the notifications it knows, and a session has no method
// to send another. No one sends notifications/tasks/status (a MAY): the process
// service tells the session that started a task of its changes by
// notifications/message instead (internal/mcpserver/process/announce.go, outside
// this room: clients without Tasks read it too). Canary:
// TestCanarySDKSendsNoCustomNotification. Watch [go-sdk#745], [go-sdk#1146].
//
// # params.task of a task-augmented tools/call
//
// go-sdk v1.8.0's CallToolParams has no task member: the params the middleware and
// the handler get have lost it. transport.Peek reads it before the SDK parses the
// message (transport/capture.go), and tasks.Capture hands it on in an internal
// header that the adapter reads (tasks/adapter.go). Canary:
// TestCanarySDKDropsParamsTask.
//
// # The JSON-RPC id of a request
//
// go-sdk v1.8.0 hands the receiving middleware no request id (the request holds
// none, and has no method that gives one). transport.Peek reads it, and
// telemetry.Capture hands it on in an internal header for the span, the request log
// and the audit event (internal/mcpserver/telemetry/http.go, outside this room).
// Canary: TestCanarySDKHandsNoRequestIDToMiddleware. Watch [go-sdk#1264].
//
// # Custom methods without params
//
// go-sdk v1.8.0 hands a custom method's request without params (or with null) on
// with a typed nil params pointer, whose GetMeta panics in a goroutine of the SDK's
// where nothing recovers it. tasks.Adapter.Params, the outermost receiving
// middleware, gives such a tasks/* request empty params (tasks/adapter.go). Canary:
// TestCanarySDKHandsCustomMethodsNilParams. Upstream: [go-sdk#1052], [go-sdk#1261].
//
// # Legacy HTTP+SSE (2024-11-05) with the caller's token on every message
//
// go-sdk v1.8.0's SSEHandler hands a POSTed message no token info or headers (the
// server's middleware cannot tell who asks), lets another user's token post to a
// session, never ends an idle session, and refuses a custom method (tasks/get) with
// 400. transport.SSE hands every message its POST's token info and headers, answers
// only the user that opened the session, ends an idle one as the Streamable HTTP
// handler does, takes every method the server has, and refuses a rebound Host on a
// loopback listener as the SDK's handlers do (transport/sse.go). Canary:
// TestCanarySDKsSSEHandlerHandsNoTokenPerMessage.
//
// # Plain JSON answers to a POST that does not accept a stream
//
// go-sdk v1.8.0's Streamable HTTP handler refuses (400) a POST whose Accept names no
// event stream, or that has none, and answers curl's */* with an event stream; its
// JSONResponse option answers every client of a handler in JSON, and sessions live
// in one handler. transport.PlainJSON decides per request, and turns the stream of
// such a POST into its JSON-RPC response (transport/json.go). Canary:
// TestCanarySDKRefusesAPostThatTakesNoStream.
//
// # A page for a browser's GET
//
// go-sdk v1.8.0's Streamable HTTP handler answers a GET whose Accept names no event
// stream, or a browser's (*/* but no session), with 400. A browser opening the URL,
// or a hosted connector's check of it, gets transport.Page's small HTML page instead,
// before authentication (transport/page.go). Canary: TestCanarySDKRefusesABrowsersGET.
//
// # Routing by protocol revision
//
// go-sdk v1.8.0 serves the stateless revision (2026-07-28) only on a handler with
// Stateless set: a session handler refuses it (400, -32022), and a stateless
// handler serves the session-based revisions with a session per request (no
// Mcp-Session-Id, no GET stream). transport.ByRevision sends each request to the
// handler of its era by its MCP-Protocol-Version and Mcp-Method headers, and
// transport.StatelessRequest and StatelessSession tell the middleware which era a
// request is of (transport/revision.go). Canary:
// TestCanarySDKServesEachEraInAHandlerOfItsOwn.
//
// # Headers that repeat the body (Mcp-Method, Mcp-Name)
//
// The stateless revision has every request repeat its method in Mcp-Method, and the
// name of a tools/call or prompts/get (the URI of a resources/read) in Mcp-Name, and
// has the server refuse one whose header is missing or differs (400, -32020
// HeaderMismatch). go-sdk v1.8.0's stateless handler refuses those, but a missing
// header's refusal names only the header, not what the body says, and it compares
// an Mcp-Name sent in the revision's Base64 form (=?base64?...?=, which a client
// must use for a name that is not plain ASCII) without decoding it, so it refuses a
// name that matches. transport.MirroredHeaders checks them first, names the
// header's value and the body's, and hands an encoded name that matches on decoded
// (transport/headers.go). A client whose headers differ from its body is refused,
// whoever it is: GitHub Copilot's server/discover is said to send such headers, and
// the revision leaves no room (the server MUST refuse: a proxy may have routed or
// limited the request by the header while the server would act on the body); the
// refusal says which values differ, for the client to fix. Canary:
// TestCanarySDKsHeaderChecksNameOnlyTheHeaderAndDoNotDecode.
//
// # resultType on the results a middleware makes
//
// The stateless revision requires resultType on every result. go-sdk v1.8.0 sets it
// on a tools/call, prompts/get or resources/read result only in its own handlers of
// those methods, in an unexported field, so a result a receiving middleware returns
// instead (a refusal before the tool runs) goes out without it.
// transport.CompleteResults, a receiving middleware outside those that answer on
// their own, gives such a result "complete" (transport/resulttype.go). Canary:
// TestCanarySDKLeavesResultsOfMiddlewareUntyped.
//
// # An event store bounded in streams
//
// go-sdk v1.8.0's MemoryEventStore bounds its bytes but keeps every stream a session
// opened (every POST is one) until the session ends. transport.EventStore keeps the
// newest request streams of a session and a bound of bytes in all
// (transport/events.go). Canary: TestCanarySDKsEventStoreKeepsEveryStream.
//
// # A quick answer in one write
//
// go-sdk v1.8.0's session handler, with an event store, writes and flushes a POST's
// priming event alone before it handles the request, then the answer, and the HTTP
// server ends the response in a write of its own. transport.Coalesce holds the
// priming event's flush for the first message, and leaves the answer's flush to the
// end of the response (transport/prime.go). Canary:
// TestCanarySDKFlushesThePrimingEventAlone.
//
// # tools/list rendered once
//
// go-sdk v1.8.0 encodes every tool of a list anew for each tools/list; with a
// thousand classes that is a megabyte or two of JSON, and the per-account filter,
// the Tasks adapter and the redaction run on it each time. ahead.ListCache keeps the
// final answer as JSON per served tool set, account, known client, revision and page
// (ahead/cache.go). It also marks a stateless answer's resultType itself, since the
// SDK sets it after the middleware and only on its own result types; that detail
// has no canary of its own. Canary: TestCanarySDKEncodesEveryToolsListAnew.
//
// # Answers ahead of the SDK's transport
//
// Each time go-sdk v1.8.0 decodes a message it allocates a 32 KiB buffer (its
// decoder over segmentio/encoding), several times a request: a session's ping costs
// the Streamable HTTP handler a few hundred kilobytes. ahead.Direct, in front of the
// Streamable HTTP handlers, sends a kept tools/list (to a stateless request the SDK
// answered before, and to a live session of the key's account), and answers a live
// session's ping and tasks/get through the server's receiving middleware and its
// own handlers (ahead/direct.go; the ping's request and answer are pingRequest and
// pong in internal/mcpserver/server.go). Canary:
// TestCanarySDKsDecoderAllocatesABufferPerMessage. No go-sdk issue asks for it yet:
// watch the SDK's internal/json and jsonrpc.DecodeMessage.
//
// # Tracked, not a gap: messages read as the SDK reads them
//
// What the HTTP layer reads of a message ahead of the SDK must be what the SDK
// reads: transport.Unmarshal uses the SDK's parser with its flags (member names
// matched exactly) and refuses what nests deeper than the SDK reads
// (transport/decode.go). Canary: TestCanarySDKReadsMessagesAsTransportDoes, which
// fails when the two read a message differently.
//
// [go-sdk#626]: https://github.com/modelcontextprotocol/go-sdk/issues/626
// [go-sdk#745]: https://github.com/modelcontextprotocol/go-sdk/issues/745
// [go-sdk#942]: https://github.com/modelcontextprotocol/go-sdk/issues/942
// [go-sdk#1052]: https://github.com/modelcontextprotocol/go-sdk/issues/1052
// [go-sdk#1146]: https://github.com/modelcontextprotocol/go-sdk/pull/1146
// [go-sdk#1261]: https://github.com/modelcontextprotocol/go-sdk/issues/1261
// [go-sdk#1264]: https://github.com/modelcontextprotocol/go-sdk/issues/1264
package sdkgap
