// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A call held for a person's approval, as the official TypeScript SDK client meets
// it: an order over the sample limit (config/samples/policies.yaml) is answered with
// the Approval that waits and the task to follow; the script prints
// {"held": "<approval>"} on a line of its own, then follows the task until a person
// decides (internal/mcpserver/approval_test.go approves or denies it with kubectl
// sandbar; by hand, under make dev: bin/kubectl-sandbar approve NAME --as=alice
// --as-group=approvers). With EXPECT=approved it checks that the order was created
// once, with the approver's name in the result; with EXPECT=denied, that the task
// failed with the reason and no order exists. REVISION=2026-07-28 speaks the stateless
// revision with the SDK v2 client (@modelcontextprotocol/client); otherwise the v1
// client's session (2025-11-25).
//
//   MCP_URL=http://127.0.0.1:8080/mcp MCP_TOKEN=default/claude:<key> ORDER=ord-1 EXPECT=approved node hack/ts-client/approval.mjs

import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { check, run, textOf } from "./check.mjs";

let step = "start";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const url = process.env.MCP_URL;
  const token = process.env.MCP_TOKEN;
  const order = process.env.ORDER ?? "ord-" + Date.now();
  const expect = process.env.EXPECT ?? "approved";
  check(url && token, "MCP_URL and MCP_TOKEN are needed");
  const revision = process.env.REVISION ?? "2025-11-25";
  const init = { requestInit: { headers: { Authorization: `Bearer ${token}` } } };
  const info = { name: "sandbar-ts-approval", version: "1.0.0" };
  const stateless = revision === "2026-07-28";
  const transport = stateless ? new TransportV2(new URL(url), init) : new StreamableHTTPClientTransport(new URL(url), init);
  const client = stateless ? new ClientV2(info, { versionNegotiation: { mode: { pin: revision } } }) : new Client(info);
  step = `connect (${revision})`;
  await client.connect(transport);
  try {
    step = "create the customer";
    const customer = order + "-customer";
    const made = await client.callTool({ name: "sandbar_class_zorp_Wearer", arguments: { handle: "buyer", metadata: { name: customer } } });
    check(!made.isError, textOf(made));

    // Until the server sees the admission policy of approvals, it holds nothing.
    step = "the order over the limit";
    let held;
    for (let i = 0; i < 60; i++) {
      held = await client.callTool({
        name: "sandbar_class_order_Order",
        arguments: { number: "ORD-7", customer, total: 25000, metadata: { name: order } },
      });
      if (!textOf(held).includes("approvals are off")) break;
      await sleep(500);
    }
    const text = textOf(held);
    check(held.isError === true, `a held call is no answer of the tool: ${JSON.stringify(held)}`);
    check(text.startsWith("held for approval, not run and not failed: ClusterCallPolicy order-limits, rule over-limit"), text);
    const m = text.match(/Approval (task-[a-z0-9]+) in namespace (\S+) waits/);
    check(m, `no Approval named: ${text}`);
    const [, name] = m;
    console.log(JSON.stringify({ held: name }));

    step = "follow the task";
    let task;
    for (let i = 0; i < 80; i++) {
      const got = await client.callTool({ name: "sandbar_tasks_get", arguments: { taskId: name } });
      check(!got.isError, textOf(got));
      task = got.structuredContent.task;
      if (task.status !== "working") break;
      await sleep(250);
    }
    step = "the task's result";
    const result = await client.callTool({ name: "sandbar_tasks_result", arguments: { taskId: name } });
    const found = await client.callTool({ name: "sandbar_entity_find", arguments: { class: "order/Order", name: order } });
    check(!found.isError, textOf(found));
    if (expect === "approved") {
      check(task.status === "completed", `the task ended ${task.status}: ${task.statusMessage}`);
      check(!result.isError, textOf(result));
      check(result.structuredContent.approvedBy?.length > 0, `no approver in ${JSON.stringify(result.structuredContent)}`);
      check(found.structuredContent.count === 1, `${found.structuredContent.count} orders named ${order}`);
      console.log(JSON.stringify({ revision, task: task.status, approvedBy: result.structuredContent.approvedBy, orders: found.structuredContent.count }));
    } else {
      check(task.status === "failed", `the task ended ${task.status}`);
      check(result.isError && textOf(result).includes("denied by"), textOf(result));
      check(found.structuredContent.count === 0, `the denied order exists`);
      console.log(JSON.stringify({ revision, task: task.status, result: textOf(result) }));
    }
  } finally {
    await client.close();
  }
}

run("approval", main, () => step);
