// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A second opinion on the MCP server: drives it with the official TypeScript SDK
// client. internal/mcpserver/typescript_test.go runs it against the test suite's
// server; by hand:
//
//   MCP_URL=http://127.0.0.1:8080/mcp MCP_TOKEN=claude:<key> node hack/ts-client/client.mjs
//
// It prints one JSON line with what it saw and exits 0, or names the first check
// that failed on stderr and exits 1.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateTaskResultSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { callTyped, check, refusedToken, run, textOf } from "./check.mjs";

const CLASS_TOOL = "sandbar_class_zorp_SpaceBoot";
const REQUIRED_TOOLS = ["sandbar_entity_find", CLASS_TOOL];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const REALM = 'realm="sandbar-mcp"';

let step = "start";

async function main() {
  const url = process.env.MCP_URL;
  const token = process.env.MCP_TOKEN;
  check(url, "MCP_URL is not set");
  check(token, "MCP_TOKEN is not set");
  const seen = {};

  step = "connect";
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "sandbar-ts-client", version: "1.0.0" });
  await client.connect(transport);
  try {
    const info = client.getServerVersion();
    seen.serverInfo = info;
    seen.protocolVersion = transport.protocolVersion;
    seen.sessionId = transport.sessionId !== undefined;
    check(info?.name === "sandbar", `serverInfo.name is ${JSON.stringify(info?.name)}, want "sandbar"`);

    step = "tools/list";
    const names = [];
    const untyped = [];
    let cursor;
    let pages = 0;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      pages++;
      check(pages <= 100, "tools/list: more than 100 pages; the cursor does not advance");
      names.push(...page.tools.map((t) => t.name));
      untyped.push(...page.tools.filter((t) => t.outputSchema?.type !== "object").map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    seen.tools = names.length;
    seen.toolPages = pages;
    const bad = names.filter((n) => !TOOL_NAME.test(n));
    check(bad.length === 0, `tool names not matching ${TOOL_NAME}: ${JSON.stringify(bad)}`);
    const dup = names.filter((n, i) => names.indexOf(n) !== i);
    check(dup.length === 0, `tools listed twice: ${JSON.stringify(dup)}`);
    for (const want of REQUIRED_TOOLS) {
      check(names.includes(want), `tool ${want} is not listed; got ${JSON.stringify(names)}`);
    }
    check(untyped.length === 0, `tools without an object's outputSchema: ${JSON.stringify(untyped)}`);

    // A session's ping and tasks/get may be answered as one JSON body rather than
    // a stream: the client takes either.
    step = "ping";
    await client.ping();
    await client.ping();
    seen.ping = true;

    step = "tasks/get";
    const started = await client.request(
      {
        method: "tools/call",
        params: { name: "sandbar_validation_start", arguments: { class: "zorp/Wearer" }, task: { ttl: 60000 } },
      },
      CreateTaskResultSchema,
    );
    const taskId = started.task.taskId;
    const task = await client.experimental.tasks.getTask(taskId);
    check(task.taskId === taskId, `tasks/get answered ${JSON.stringify(task)} for ${taskId}`);
    seen.taskStatus = task.status;
    let unknown;
    try {
      await client.experimental.tasks.getTask("task-not-there");
    } catch (err) {
      unknown = err;
    }
    check(unknown?.code === -32602, `tasks/get of a task that is not there: ${unknown}, want the error -32602`);

    step = `tools/call ${CLASS_TOOL} (valid)`;
    const ok = await client.callTool({
      name: CLASS_TOOL,
      arguments: { name: "TS Boot", price: 3, metadata: { name: "ts-boot" } },
    });
    check(!ok.isError, `isError is true: ${textOf(ok)}`);
    seen.created = ok.structuredContent ?? textOf(ok);

    // The SDK checks each answer's structuredContent against the tool's
    // outputSchema, and refuses the call when it does not match.
    seen.typedAnswers = await callTyped(client, [
      ["sandbar_schema_classes", {}],
      ["sandbar_schema_properties", {}],
      ["sandbar_schema_datatypes", {}],
      ["sandbar_codec_list", {}],
      ["sandbar_class_describe", { class: "zorp/SpaceBoot" }],
      ["sandbar_class_slots", { class: "zorp/SpaceBoot" }],
      ["sandbar_class_parents", { class: "zorp/SpaceBoot" }],
      ["sandbar_entity_find", { class: "zorp/SpaceBoot" }],
      ["sandbar_entity_validate", { class: "zorp/SpaceBoot", attributes: { name: "TS Dry", price: 1 } }],
      ["sandbar_workflow_find", {}],
      ["sandbar_tasks_get", { taskId }],
      ["sandbar_tasks_list", {}],
      ["sandbar_tasks_result", { taskId, waitSeconds: 30 }],
      ["sandbar_validation_start", { class: "zorp/Wearer" }],
    ], names, (s) => (step = s));

    step = `tools/call ${CLASS_TOOL} (without name)`;
    const missing = await client.callTool({ name: CLASS_TOOL, arguments: { price: 3 } });
    const missingText = textOf(missing);
    check(missing.isError === true, `isError is ${JSON.stringify(missing.isError)}, want true; result: ${JSON.stringify(missing)}`);
    check(/\bname\b/.test(missingText), `the error does not mention "name": ${JSON.stringify(missingText)}`);
    seen.missingNameError = missingText;

    step = "close session";
    await transport.terminateSession();
  } finally {
    await client.close();
  }

  step = "initialize with a wrong token";
  const wrong = token.includes(":") ? token.slice(0, token.indexOf(":")) + ":not-the-key" : "nobody:not-the-key";
  const res = await fetch(url, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${wrong}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: "sandbar-ts-client", version: "1.0.0" },
      },
    }),
  });
  seen.wrongToken = refusedToken(res, await res.text(), REALM);

  step = "done";
  console.log(JSON.stringify({ ok: true, sdk: "@modelcontextprotocol/sdk", ...seen }));
}

run("ts-client", main, () => step);
