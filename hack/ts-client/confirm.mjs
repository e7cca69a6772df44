// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A second opinion on confirmations: a delete asks the user first. The TypeScript
// SDK v1 client (2025-11-25) answers the server's elicitation/create, and the v2
// client pinned to 2026-07-28 answers the input_required result through its
// registered elicitation handler; each accepts, and the SpaceBoot it names goes.
// internal/mcpserver/typescript_test.go runs it against the test suite's server
// (with an account that may delete); by hand:
//
//   MCP_URL=http://127.0.0.1:8080/mcp MCP_TOKEN=default/claude:<key> \
//   BOOT_V1=<a SpaceBoot> BOOT_V2=<another> node hack/ts-client/confirm.mjs
//
// It prints one JSON line with the questions it was asked and exits 0, or names the
// first check that failed on stderr and exits 1.

import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { check, run, textOf } from "./check.mjs";

const DELETE = "sandbar_entity_delete";
let step = "start";

// accept answers a confirmation yes, and keeps the question.
function accept(asked) {
  return (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: { confirm: true } };
  };
}

async function deleteWith(client, boot, asked) {
  const res = await client.callTool({ name: DELETE, arguments: { class: "zorp/SpaceBoot", name: boot } });
  check(!res.isError, `${DELETE} ${boot}: ${textOf(res)}`);
  check(asked.length === 1 && asked[0].includes(`"${boot}"`), `the user was asked ${JSON.stringify(asked)}, want one question naming ${boot}`);
  return JSON.parse(textOf(res));
}

async function main() {
  const url = process.env.MCP_URL;
  const token = process.env.MCP_TOKEN;
  const bootV1 = process.env.BOOT_V1;
  const bootV2 = process.env.BOOT_V2;
  check(url && token && bootV1 && bootV2, "MCP_URL, MCP_TOKEN, BOOT_V1 and BOOT_V2 must be set");
  const headers = { Authorization: `Bearer ${token}` };
  const seen = {};

  step = "v1 (2025-11-25) connect";
  const v1 = new ClientV1({ name: "sandbar-ts-confirm", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const askedV1 = [];
  v1.setRequestHandler(ElicitRequestSchema, accept(askedV1));
  await v1.connect(new TransportV1(new URL(url), { requestInit: { headers } }));
  try {
    step = "v1 delete (elicitation/create)";
    seen.v1 = { deleted: (await deleteWith(v1, bootV1, askedV1)).deleted, question: askedV1[0] };
  } finally {
    await v1.close();
  }

  step = "v2 (2026-07-28) connect";
  const v2 = new Client({ name: "sandbar-ts-confirm", version: "2.0.0" }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  const askedV2 = [];
  v2.setRequestHandler("elicitation/create", accept(askedV2));
  await v2.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  try {
    step = "v2 delete (input_required)";
    seen.v2 = { deleted: (await deleteWith(v2, bootV2, askedV2)).deleted, question: askedV2[0] };
  } finally {
    await v2.close();
  }
  console.log(JSON.stringify(seen));
}

run("ts-confirm", main, () => step);
