// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// The OAuth flow of a hosted connector, by the official TypeScript SDK client: it
// connects to the OAuth route without a token, finds the Protected Resource Metadata
// from the 401, discovers the authorization server, registers itself, follows the
// authorization redirect (the server under test approves at once), exchanges the code
// (PKCE) and then lists tools and creates an instance. internal/mcpserver/
// typescript_test.go runs it against a test issuer; by hand:
//
//   MCP_URL=https://sandbar.example.com/oauth/mcp node hack/ts-client/oauth.mjs
//
// (with an authorization server that approves without a browser). It prints one JSON
// line with what it saw and exits 0, or names the first check that failed and exits 1.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { check, listAndCreate, run } from "./check.mjs";

const REDIRECT = "http://127.0.0.1:1/callback";

let step = "start";

// A provider that keeps everything in memory and, instead of opening a browser,
// fetches the authorization URL and takes the code from the redirect.
class HeadlessProvider {
  constructor() {
    this.seen = { redirects: 0 };
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: "sandbar-ts-oauth",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
    this.seen.registered = info.client_id !== undefined;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url) {
    this.seen.redirects++;
    this.seen.resource = url.searchParams.get("resource");
    this.seen.scope = url.searchParams.get("scope");
    this.seen.codeChallengeMethod = url.searchParams.get("code_challenge_method");
    const res = await fetch(url, { redirect: "manual" });
    check(res.status === 302, `the authorization endpoint answered ${res.status}: ${await res.text()}`);
    const to = new URL(res.headers.get("location"));
    check(to.origin + to.pathname === REDIRECT, `redirected to ${to}, want ${REDIRECT}`);
    this.code = to.searchParams.get("code");
    check(this.code, `no code in the redirect ${to}`);
  }
}

async function main() {
  const url = process.env.MCP_URL;
  check(url, "MCP_URL is not set");
  const provider = new HeadlessProvider();
  const seen = provider.seen;

  step = "connect without a token";
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await new Client({ name: "sandbar-ts-oauth", version: "1.0.0" }).connect(first);
    check(false, "connected without authorizing");
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
  }
  check(provider.code, "the client did not go through the authorization endpoint");

  step = "finish auth";
  await first.finishAuth(provider.code);
  check(provider.tokens()?.access_token, "no access token after the code exchange");
  seen.tokenType = provider.tokens().token_type;

  step = "connect with the token";
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: "sandbar-ts-oauth", version: "1.0.0" });
  await client.connect(transport);
  try {
    const ns = process.env.MCP_NAMESPACE;
    const metadata = ns ? { name: "ts-oauth-boot", namespace: ns } : { name: "ts-oauth-boot" };
    Object.assign(seen, await listAndCreate(client, "TS OAuth Boot", metadata, (s) => (step = s)));
  } finally {
    await client.close();
  }
  step = "done";
  console.log(JSON.stringify({ ok: true, sdk: "@modelcontextprotocol/sdk", ...seen }));
}

run("ts-oauth", main, () => step);
