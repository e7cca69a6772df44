// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A second opinion on the hints an agent follows: a client that knows only a
// workflow's name takes an order through it to its state of success. It reads
// tools/list and the workflow's prompt; from then on it makes only the calls the
// prompt, an answer's `next` or an error suggests ("call `tool` with {...}"),
// filling in what they leave to it (a value in angle brackets) from the tool's
// input schema. It walks once with the TypeScript SDK v1 client (2025-11-25) and
// once with the v2 client pinned to 2026-07-28.
// internal/mcpserver/typescript_test.go runs it against the test suite's server;
// by hand (the account may create instances and start processes):
//
//   MCP_URL=http://127.0.0.1:8080/mcp MCP_TOKEN=default/claude:<key> \
//   WORKFLOW=order.fulfillment NAME_V1=<new name> NAME_V2=<another> node hack/ts-client/walk.mjs
//
// It prints one JSON line with each walk's calls and exits 0, or names the first
// check that failed on stderr and exits 1.

import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { check, run, textOf } from "./check.mjs";

let step = "start";

// suggestions are the calls a text suggests, each "call `tool` with {...}".
function suggestions(text) {
  const out = [];
  for (const line of text.split("\n")) {
    for (const m of line.matchAll(/call `([^`]+)`/g)) {
      const s = { tool: m[1], arguments: {}, line };
      const rest = line.slice(m.index + m[0].length);
      if (rest.startsWith(" with {")) s.arguments = firstJSON(rest.slice(" with ".length));
      out.push(s);
    }
  }
  return out;
}

// firstJSON is the JSON object text starts with.
function firstJSON(text) {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === "\\") i++;
      else if (ch === '"') quoted = false;
    } else if (ch === '"') quoted = true;
    else if (ch === "{") depth++;
    else if (ch === "}" && --depth === 0) return JSON.parse(text.slice(0, i + 1));
  }
  throw new Error(`no JSON object in ${text}`);
}

// matching is a short string a regular expression of the usual subset matches:
// the least of each repetition, the first of each class and alternative.
function matching(pattern) {
  let i = 0;
  const escaped = (e) => ({ d: "0", w: "a", s: " " })[e] ?? e;
  function atom() {
    const ch = pattern[i++];
    if (ch === "\\") return escaped(pattern[i++]);
    if (ch === "[") {
      const end = pattern.indexOf("]", i + 1);
      const first = pattern[i] === "^" ? "a" : pattern[i] === "\\" ? escaped(pattern[i + 1]) : pattern[i];
      i = end + 1;
      return first;
    }
    if (ch === "(") {
      if (pattern.startsWith("?:", i)) i += 2;
      const first = alternatives();
      i++; // ")"
      return first;
    }
    if (ch === ".") return "a";
    return ch;
  }
  function sequence() {
    let out = "";
    while (i < pattern.length && pattern[i] !== "|" && pattern[i] !== ")") {
      if (pattern[i] === "^" || pattern[i] === "$") {
        i++;
        continue;
      }
      const a = atom();
      const q = pattern[i];
      if (q === "*" || q === "?") {
        i++;
      } else if (q === "+") {
        i++;
        out += a;
      } else if (q === "{") {
        const end = pattern.indexOf("}", i);
        out += a.repeat(Number(pattern.slice(i + 1, end).split(",")[0]));
        i = end + 1;
      } else {
        out += a;
      }
    }
    return out;
  }
  function alternatives() {
    const first = sequence();
    while (pattern[i] === "|") {
      i++;
      sequence();
    }
    return first;
  }
  const out = alternatives();
  check(new RegExp(pattern).test(out), `a value of ${pattern}: ${out} does not match`);
  return out;
}

async function walk(client, workflow, name) {
  const calls = [];
  const failed = [];
  step = "tools/list";
  const tools = {};
  for (let cursor; ; ) {
    const page = await client.listTools(cursor ? { cursor } : {});
    for (const t of page.tools) tools[t.name] = t;
    if (!(cursor = page.nextCursor)) break;
  }
  step = "prompts/list";
  const prompt = (await client.listPrompts()).prompts.find((p) => (p.title ?? "").includes(workflow));
  check(prompt, `a prompt for ${workflow}`);
  step = `prompts/get ${prompt.name}`;
  const args = Object.fromEntries((prompt.arguments ?? []).map((a) => [a.name, name]));
  const said = (await client.getPrompt({ name: prompt.name, arguments: args })).messages[0].content.text;

  // The workflow as the prompt says it: its transitions and its state of success.
  const steps = {};
  for (const m of said.matchAll(/^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \|$/gm)) {
    steps[m[1]] = { from: m[2].trim().split(", "), to: m[3].trim() };
  }
  const success = /^- success: `([^`]+)`/m.exec(said)?.[1];
  check(success && Object.keys(steps).length > 0, `the prompt says the transitions and the state of success:\n${said}`);
  const distance = (state) => {
    const dist = { [state]: 0 };
    for (const queue = [state]; queue.length > 0; ) {
      const at = queue.shift();
      if (at === success) return dist[at];
      for (const st of Object.values(steps)) {
        if (!(st.to in dist) && st.from.includes(at)) {
          dist[st.to] = dist[at] + 1;
          queue.push(st.to);
        }
      }
    }
    return Infinity;
  };

  const fill = (value, schema = {}, key = "") => {
    if (typeof value === "string" && /^<.*>$/.test(value)) {
      if (schema.enum?.length) return schema.enum[0];
      if (schema.type === "integer" || schema.type === "number") return 1;
      if (schema.type === "boolean") return true;
      if (schema.pattern) return matching(schema.pattern);
      return key === "name" ? name : `${name}-${key.toLowerCase()}`;
    }
    if (value && typeof value === "object" && !Array.isArray(value)) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, schema.properties?.[k], k)]));
    }
    return value;
  };
  const call = async (s) => {
    const tool = tools[s.tool];
    check(tool, `${s.tool} is one of the tools it was listed`);
    const filled = fill(s.arguments, tool.inputSchema);
    step = `tools/call ${s.tool} ${JSON.stringify(filled)}`;
    const res = await client.callTool({ name: s.tool, arguments: filled });
    calls.push(`${s.tool} ${JSON.stringify(filled)} -> ${res.isError ? "error: " + textOf(res) : "ok"}`);
    return res;
  };
  const changes = (s) => tools[s.tool] && !tools[s.tool].annotations?.readOnlyHint;

  const start = suggestions(said).find((s) => s.line.includes("Start a process"));
  check(start, `the prompt says how to start a process:\n${said}`);
  const todo = [start];
  let hasty = true;
  while (todo.length > 0) {
    check(calls.length < 30, `the agent goes round in circles:\n${calls.join("\n")}`);
    const res = await call(todo[todo.length - 1]);
    if (res.isError) {
      failed.push(calls[calls.length - 1]);
      const instead = suggestions(textOf(res));
      check(instead.length > 0, `the error says what to call instead: ${textOf(res)}`);
      const change = instead.find(changes);
      if (change) todo.push(change);
      else todo[todo.length - 1] = instead[0];
      continue;
    }
    todo.pop();
    if (todo.length > 0) continue;
    const next = res.structuredContent?.next ?? [];
    if (next.length === 0) break;
    let move;
    for (const s of next) {
      const t = s.arguments?.transition;
      if (t !== undefined && (!move || distance(steps[t].to) < distance(steps[move.arguments.transition].to))) move = s;
    }
    if (!move) {
      todo.push(next[0]);
      continue;
    }
    if (hasty) {
      // A hasty agent takes the transition into success at once.
      hasty = false;
      const into = Object.keys(steps).find((t) => steps[t].to === success);
      move = { ...move, arguments: { ...move.arguments, transition: into } };
    }
    todo.push(move);
  }
  return { calls, failed };
}

async function main() {
  const url = process.env.MCP_URL;
  const token = process.env.MCP_TOKEN;
  const workflow = process.env.WORKFLOW;
  const nameV1 = process.env.NAME_V1;
  const nameV2 = process.env.NAME_V2;
  check(url && token && workflow && nameV1 && nameV2, "MCP_URL, MCP_TOKEN, WORKFLOW, NAME_V1 and NAME_V2 must be set");
  const headers = { Authorization: `Bearer ${token}` };
  const seen = {};

  step = "v1 (2025-11-25) connect";
  const v1 = new ClientV1({ name: "sandbar-ts-walk", version: "1.0.0" });
  await v1.connect(new TransportV1(new URL(url), { requestInit: { headers } }));
  try {
    seen.v1 = await walk(v1, workflow, nameV1);
  } finally {
    await v1.close();
  }

  step = "v2 (2026-07-28) connect";
  const v2 = new Client({ name: "sandbar-ts-walk", version: "2.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await v2.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  try {
    seen.v2 = await walk(v2, workflow, nameV2);
  } finally {
    await v2.close();
  }
  console.log(JSON.stringify(seen));
}

run("ts-walk", main, () => step);
