// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A second opinion on the stateless revision 2026-07-28: drives the server with the
// TypeScript SDK v2 client (@modelcontextprotocol/client) and the Tasks extension's
// client (@modelcontextprotocol/ext-tasks). internal/mcpserver/typescript_stateless_test.go
// runs it against the test suite's server; by hand:
//
//   MCP_URL=http://127.0.0.1:8080/mcp MCP_TOKEN=claude:<key> BOOT_NAME=ts-v2 \
//   BOOT_SLOT="TS v2" node hack/ts-client/stateless.mjs
//
// It creates the SpaceBoot default/$BOOT_NAME with spec.name $BOOT_SLOT. When
// LISTEN_TOOL is set, it prints the line READY once its subscriptions/listen stream
// is acknowledged, and waits for notifications/tools/list_changed and a tools/list
// that has LISTEN_TOOL (the caller applies the Class after READY). It prints one
// JSON line with what it saw and exits 0, or names the first check that failed on
// stderr and exits 1.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { callTyped, check, refusedToken, run, textOf } from "./check.mjs";

const REVISION = "2026-07-28";
const CLASS_TOOL = "sandbar_class_zorp_SpaceBoot";
const EXPORT_TOOL = "sandbar_project_export";
const TASKS = "io.modelcontextprotocol/tasks";
const REALM = 'realm="sandbar-mcp"';
const CLIENT_INFO = { name: "sandbar-ts-stateless", version: "1.0.0" };

let step = "start";

async function main() {
  const url = process.env.MCP_URL;
  const token = process.env.MCP_TOKEN;
  const bootName = process.env.BOOT_NAME;
  const bootSlot = process.env.BOOT_SLOT;
  const listenTool = process.env.LISTEN_TOOL;
  check(url, "MCP_URL is not set");
  check(token, "MCP_TOKEN is not set");
  check(bootName && bootSlot, "BOOT_NAME and BOOT_SLOT are not set");
  const seen = {};

  // Every answer of the server passes here: none may carry a session.
  const sessionHeaders = [];
  const watchingFetch = async (input, init) => {
    const res = await fetch(input, init);
    const sid = res.headers.get("mcp-session-id");
    if (sid !== null) sessionHeaders.push(sid);
    return res;
  };

  step = "connect (server/discover)";
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: watchingFetch,
  });
  const client = new Client(CLIENT_INFO, { versionNegotiation: { mode: { pin: REVISION } } });
  await client.connect(transport);
  try {
    seen.era = client.getProtocolEra();
    seen.protocolVersion = transport.protocolVersion;
    check(seen.era === "modern", `protocol era is ${JSON.stringify(seen.era)}, want "modern"`);
    check(seen.protocolVersion === REVISION, `negotiated ${JSON.stringify(seen.protocolVersion)}, want ${REVISION}`);
    const info = client.getServerVersion();
    check(info?.name === "sandbar", `serverInfo.name is ${JSON.stringify(info?.name)}, want "sandbar"`);
    const caps = client.getServerCapabilities();
    check(caps?.extensions?.[TASKS] !== undefined, `server/discover does not offer ${TASKS}: ${JSON.stringify(caps)}`);

    step = "tools/list";
    const listed = (await client.listTools()).tools;
    const tools = listed.map((t) => t.name);
    seen.tools = tools.length;
    for (const want of [CLASS_TOOL, "sandbar_entity_find"]) {
      check(tools.includes(want), `tool ${want} is not listed; got ${JSON.stringify(tools)}`);
    }
    const untyped = listed.filter((t) => t.outputSchema?.type !== "object").map((t) => t.name);
    check(untyped.length === 0, `tools without an object's outputSchema: ${JSON.stringify(untyped)}`);

    step = `tools/call ${CLASS_TOOL}`;
    const created = await client.callTool({
      name: CLASS_TOOL,
      arguments: { name: bootSlot, price: 7, metadata: { name: bootName } },
    });
    check(!created.isError, `isError is true: ${textOf(created)}`);
    seen.created = created.structuredContent ?? textOf(created);

    // The SDK checks each answer's structuredContent against the tool's
    // outputSchema, and refuses the call when it does not match.
    seen.typedAnswers = await callTyped(client, [
      ["sandbar_schema_classes", {}],
      ["sandbar_class_describe", { class: "zorp/SpaceBoot" }],
      ["sandbar_entity_find", { class: "zorp/SpaceBoot" }],
      ["sandbar_workflow_find", {}],
      ["sandbar_tasks_list", {}],
      ["sandbar_validation_start", { class: "zorp/Wearer" }],
    ], tools, (s) => (step = s));

    step = "resources/read";
    const uri = `mcp://sandbar/zorp/SpaceBoot/default/${bootName}`;
    const read = await client.readResource({ uri });
    const text = read.contents.map((c) => c.text ?? "").join("\n");
    check(read.contents.length > 0 && text.includes(bootSlot), `${uri} does not show spec.name ${bootSlot}: ${text}`);
    seen.resource = uri;

    step = "prompts/list";
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    check(prompts.length > 0, "prompts/list is empty");
    seen.prompts = prompts.length;

    if (listenTool) {
      step = "subscriptions/listen";
      let changed;
      const toolsChanged = new Promise((resolve) => {
        changed = resolve;
      });
      client.setNotificationHandler("notifications/tools/list_changed", () => changed());
      const sub = await client.listen({ toolsListChanged: true });
      check(sub.honoredFilter?.toolsListChanged === true, `the server does not honour toolsListChanged: ${JSON.stringify(sub.honoredFilter)}`);
      console.log("READY");
      step = `notifications/tools/list_changed (for ${listenTool})`;
      await toolsChanged;
      step = `tools/list after list_changed (${listenTool})`;
      // The notification says the list changed; the next list has the new tool.
      let names = [];
      for (let i = 0; i < 50 && !names.includes(listenTool); i++) {
        names = (await client.listTools(undefined, { cacheMode: "bypass" })).tools.map((t) => t.name);
      }
      check(names.includes(listenTool), `${listenTool} is not listed after list_changed`);
      seen.listChanged = listenTool;
      await sub.close();
    }

    step = `ext-tasks ${EXPORT_TOOL}`;
    const session = createTaskSessionFromClient(client, {
      endpointId: url,
      rawDispatch: rawDispatch(url, token),
      v2RequestFraming: { protocolVersion: REVISION, clientInfo: CLIENT_INFO, clientCapabilities: {} },
    });
    try {
      const execution = await session.callTool(EXPORT_TOOL, { class: "zorp/SpaceBoot" });
      check(execution.kind === "task", `execution kind is ${JSON.stringify(execution.kind)}, want "task"`);
      seen.taskId = execution.handle.taskId;
      step = `ext-tasks ${EXPORT_TOOL} settle (task ${seen.taskId})`;
      const { outcome } = await execution.settle();
      check(outcome.status === "completed", `outcome is ${outcome.status} (${outcome.error?.message ?? ""}; ${outcome.error?.cause?.stack ?? outcome.error?.cause ?? ""}); task: ${JSON.stringify(outcome.task?.raw)}`);
      const result = resultFromTaskOutcome(outcome);
      check(!result.isError, `the export failed: ${textOf(result)}`);
      const items = result.structuredContent?.items;
      check(Array.isArray(items) && items.length > 0, `structuredContent.items is ${JSON.stringify(items)}, want a non-empty list`);
      seen.exported = items.length;
    } finally {
      await session.close();
    }
  } finally {
    await client.close();
  }
  check(sessionHeaders.length === 0, `the server sent Mcp-Session-Id: ${JSON.stringify(sessionHeaders)}`);

  step = "server/discover with a wrong token";
  const wrong = token.includes(":") ? token.slice(0, token.indexOf(":")) + ":not-the-key" : "nobody:not-the-key";
  const res = await post(url, wrong, { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: meta({}) } });
  seen.wrongToken = refusedToken(res, await res.text(), REALM);

  step = "done";
  console.log(JSON.stringify({ ok: true, sdk: "@modelcontextprotocol/client + ext-tasks", ...seen }));
}

// meta is the per-request envelope of the revision.
function meta(capabilities) {
  return {
    "io.modelcontextprotocol/protocolVersion": REVISION,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": capabilities,
  };
}

// post sends one JSON-RPC message with the headers of the revision.
function post(url, token, message, { headers = {}, signal } = {}) {
  const name = message.params?.name ?? message.params?.taskId;
  return fetch(url, {
    method: "POST",
    signal,
    headers: {
      Authorization: `Bearer ${token}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": REVISION,
      "Mcp-Method": message.method,
      ...(typeof name === "string" ? { "Mcp-Name": name } : {}),
      ...headers,
    },
    body: JSON.stringify(message),
  });
}

// rawDispatch is the request path ext-tasks needs for the Tasks wire shapes (a
// tools/call answered with a task, tasks/*), which the SDK client's codecs do not
// accept: one POST per request, its answer read from JSON or from the event stream.
function rawDispatch(url, token) {
  let next = 0;
  return async (request, options = {}) => {
    const id = `tasks-${++next}`;
    const res = await post(url, token, { jsonrpc: "2.0", id, ...request }, {
      headers: options.context?.headers,
      signal: options.signal,
    });
    const body = await res.text();
    const messages = (res.headers.get("content-type") ?? "").includes("text/event-stream")
      ? body.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim())
      : [body];
    for (const data of messages) {
      let msg;
      try {
        msg = JSON.parse(data);
      } catch {
        continue;
      }
      if (msg.id !== id) continue;
      if (msg.error) return { kind: "error", error: msg.error };
      return { kind: "result", result: msg.result };
    }
    throw new Error(`${request.method}: no answer (HTTP ${res.status}): ${body}`);
  };
}

run("ts-stateless", main, () => step);
