// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// What the client scripts share: a failed expectation (reported as FAIL, not as a
// crash) and the text of a tool result.

export class CheckFailed extends Error {}

export function check(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

export function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

// callTyped calls each [name, args] of calls that is in listed (the tools a client
// saw) and checks it answers a result with structuredContent; the SDK has checked
// that against the tool's outputSchema, and refused the call when it does not
// match. setStep names the call under way. It answers how many it called.
export async function callTyped(client, calls, listed, setStep) {
  const typed = calls.filter(([name]) => listed.includes(name));
  for (const [name, args] of typed) {
    setStep(`tools/call ${name} (typed)`);
    const res = await client.callTool({ name, arguments: args });
    check(!res.isError, `isError is true: ${textOf(res)}`);
    check(typeof res.structuredContent === "object", `no structuredContent: ${JSON.stringify(res)}`);
  }
  return typed.length;
}

// refusedToken checks that res (with its body) refuses a wrong token as the server
// does: 401 with a Bearer challenge of realm. It returns what it saw.
export function refusedToken(res, body, realm) {
  const challenge = res.headers.get("www-authenticate");
  check(res.status === 401, `status ${res.status}, want 401; body: ${body}`);
  check(
    challenge !== null && /^Bearer\b/i.test(challenge) && challenge.includes(realm),
    `WWW-Authenticate is ${JSON.stringify(challenge)}, want a Bearer challenge with ${realm}`,
  );
  return { status: res.status, wwwAuthenticate: challenge, body: body.trim() };
}

// run runs a script's main and exits 0 when it resolves; otherwise, or when it takes
// more than 45 s (the Go tests give a script 60 s), it names the step it was at
// (stepOf) on stderr and exits 1.
export function run(name, main, stepOf) {
  const deadline = setTimeout(() => {
    console.error(`${name}: FAIL at ${stepOf()}: no answer within 45 s`);
    process.exit(1);
  }, 45_000);
  deadline.unref();
  main().then(
    () => process.exit(0),
    (err) => {
      const what = err instanceof CheckFailed ? err.message : err?.stack ?? String(err);
      console.error(`${name}: FAIL at ${stepOf()}: ${what}`);
      process.exit(1);
    },
  );
}

// CLASS_TOOL is the create tool of the sample class zorp/SpaceBoot.
export const CLASS_TOOL = "sandbar_class_zorp_SpaceBoot";

// listAndCreate is what the OAuth scripts do once signed in: list every page of
// tools, check the sample class's create tool is there, and create a SpaceBoot
// (metadata: its name and namespace). setStep names the step under way. It
// answers how many tools were listed and what the create returned.
export async function listAndCreate(client, title, metadata, setStep) {
  setStep("tools/list");
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  check(names.includes(CLASS_TOOL), `tool ${CLASS_TOOL} is not listed; got ${JSON.stringify(names)}`);

  setStep(`tools/call ${CLASS_TOOL}`);
  const ok = await client.callTool({ name: CLASS_TOOL, arguments: { name: title, metadata } });
  check(!ok.isError, `isError is true: ${textOf(ok)}`);
  return { tools: names.length, created: ok.structuredContent ?? textOf(ok) };
}
