// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// The legacy HTTP+SSE transport (2024-11-05) through the official TypeScript SDK's
// SSEClientTransport: internal/mcpserver/transports_test.go runs it against the
// test suite's server; by hand:
//
//   MCP_URL=http://127.0.0.1:8080/mcp/sse MCP_TOKEN=claude:<key> MCP_NAME=ts-sse-boot node hack/ts-client/sse.mjs
//
// It prints one JSON line with what it saw and exits 0, or names the first check
// that failed on stderr and exits 1.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport, SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import { check, run, textOf } from "./check.mjs";

const CLASS_TOOL = "sandbar_class_zorp_SpaceBoot";

let step = "start";

async function main() {
  const url = process.env.MCP_URL;
  const token = process.env.MCP_TOKEN;
  const name = process.env.MCP_NAME;
  check(url && token && name, "MCP_URL, MCP_TOKEN and MCP_NAME must be set");
  const seen = {};

  step = "connect";
  const transport = new SSEClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "sandbar-ts-sse-client", version: "1.0.0" });
  await client.connect(transport);
  try {
    const info = client.getServerVersion();
    seen.serverInfo = info;
    check(info?.name === "sandbar", `serverInfo.name is ${JSON.stringify(info?.name)}, want "sandbar"`);

    step = "tools/list";
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    seen.tools = names.length;
    check(names.includes(CLASS_TOOL), `tool ${CLASS_TOOL} is not listed; got ${JSON.stringify(names)}`);

    step = `tools/call ${CLASS_TOOL}`;
    const ok = await client.callTool({
      name: CLASS_TOOL,
      arguments: { name: "TS SSE Boot", price: 4, metadata: { name } },
    });
    check(!ok.isError, `isError is true: ${textOf(ok)}`);
    seen.created = ok.structuredContent ?? textOf(ok);
  } finally {
    await client.close();
  }

  step = "connect without a token";
  const anonymous = new SSEClientTransport(new URL(url));
  const refused = new Client({ name: "sandbar-ts-sse-client", version: "1.0.0" });
  let err;
  try {
    await refused.connect(anonymous);
  } catch (e) {
    err = e;
  } finally {
    await refused.close();
  }
  check(err instanceof SseError, `connecting without a token: ${err ? err.stack ?? err : "it connected"}; want an SseError`);
  check(err.code === 401, `connecting without a token: code ${err.code}, want 401`);
  seen.withoutToken = err.code;

  step = "done";
  console.log(JSON.stringify({ ok: true, sdk: "@modelcontextprotocol/sdk", transport: "sse", ...seen }));
}

run("ts-client", main, () => step);
