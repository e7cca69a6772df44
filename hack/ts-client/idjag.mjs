// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// Enterprise-Managed Authorization, by the official TypeScript SDK v2 client: it
// exchanges an ID-JAG (ASSERTION, which the organisation's identity provider issued
// for the authorization server) at TOKEN_ENDPOINT with the SDK's exchangeJwtAuthGrant
// (the jwt-bearer grant; a public client, CLIENT_ID its metadata document's URL), lists
// the tools of the OAuth route MCP_URL with the token, and presents the same ID-JAG
// again, which must be refused. internal/mcpserver/authserver_idjag_test.go runs it;
// by hand:
//
//   MCP_URL=https://sandbar.example.com/oauth/mcp TOKEN_ENDPOINT=https://sandbar.example.com/oauth2/token \
//   CLIENT_ID=https://client.example.com/client.json ASSERTION=<ID-JAG> node hack/ts-client/idjag.mjs
//
// It prints one JSON line with what it saw and exits 0, or names the first check that
// failed on stderr and exits 1.

import { Client, StreamableHTTPClientTransport, exchangeJwtAuthGrant } from "@modelcontextprotocol/client";
import { check, run } from "./check.mjs";

let step = "start";

async function main() {
  const { MCP_URL: url, TOKEN_ENDPOINT: tokenEndpoint, ASSERTION: assertion, CLIENT_ID: clientId } = process.env;
  check(url && tokenEndpoint && assertion && clientId, "MCP_URL, TOKEN_ENDPOINT, ASSERTION and CLIENT_ID must be set");
  const seen = {};

  step = "the jwt-bearer grant";
  const exchange = () => exchangeJwtAuthGrant({ tokenEndpoint, jwtAuthGrant: assertion, clientId, authMethod: "none" });
  const tokens = await exchange();
  check(typeof tokens.access_token === "string" && tokens.access_token !== "", `no access token: ${JSON.stringify(tokens)}`);
  check(tokens.refresh_token === undefined, "a refresh token came with it");
  seen.tokenType = tokens.token_type;

  step = "tools/list with the token";
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } },
  });
  const client = new Client({ name: "sandbar-ts-idjag", version: "1.0.0" });
  await client.connect(transport);
  try {
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    check(names.includes("sandbar_entity_find"), `sandbar_entity_find is not listed: ${names.join(", ")}`);
    seen.tools = names.length;
  } finally {
    await client.close();
  }

  step = "the same ID-JAG again";
  let refused = "";
  try {
    await exchange();
  } catch (err) {
    refused = String(err?.message ?? err);
  }
  check(refused.includes("invalid_grant") && refused.includes("presented before"), `presented again: ${refused || "a token"}`);
  seen.replay = refused;
  console.log(JSON.stringify(seen));
}

run("idjag", main, () => step);
