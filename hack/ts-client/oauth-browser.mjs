// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// The OAuth flow of a client that names itself by a client ID metadata document
// (CIMD), as Claude Code and VS Code do, by the official TypeScript SDK client,
// against Sandbar's own authorization server: from the 401 on the OAuth route to
// the metadata, the authorization URL it opens in a browser (here it prints it as
// {"authorize": URL} and a test drives a browser there: the login, the consent
// page's Allow), the code at its loopback redirect URI, the exchange (PKCE), then
// tools/list, a create as the person, and a refresh. internal/mcpserver/
// authserver_browser_test.go runs it; by hand, with a document you serve at an
// https URL that lists http://127.0.0.1/callback:
//
//   MCP_URL=https://sandbar.example.com/oauth/mcp CLIENT_ID_URL=https://.../client.json \
//     node hack/ts-client/oauth-browser.mjs
//
// and open the printed URL. It prints one JSON line with what it saw and exits 0,
// or names the first check that failed and exits 1.

import { createServer } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  UnauthorizedError,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  refreshAuthorization,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { check, listAndCreate, run } from "./check.mjs";

let step = "start";

// The loopback listener the browser brings the code to (RFC 8252 7.3: any port).
function listen() {
  return new Promise((resolve) => {
    let deliver;
    const code = new Promise((r) => (deliver = r));
    const server = createServer((req, res) => {
      const u = new URL(req.url, "http://127.0.0.1");
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<!doctype html><title>Signed in</title><p>Signed in; you may close this window.</p>");
      deliver({ code: u.searchParams.get("code"), error: u.searchParams.get("error"), state: u.searchParams.get("state") });
    });
    server.listen(0, "127.0.0.1", () => resolve({ server, port: server.address().port, code }));
  });
}

class BrowserProvider {
  constructor(clientMetadataUrl, redirect) {
    this.clientMetadataUrl = clientMetadataUrl;
    this.redirect = redirect;
    this.seen = { redirects: 0 };
  }
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata() {
    return {
      client_name: "sandbar-ts-browser",
      redirect_uris: [this.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
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
  redirectToAuthorization(url) {
    this.seen.redirects++;
    this.seen.clientId = url.searchParams.get("client_id");
    this.seen.resource = url.searchParams.get("resource");
    this.seen.codeChallengeMethod = url.searchParams.get("code_challenge_method");
    console.log(JSON.stringify({ authorize: url.href }));
  }
}

async function main() {
  const url = process.env.MCP_URL;
  const clientId = process.env.CLIENT_ID_URL;
  check(url && clientId, "MCP_URL and CLIENT_ID_URL must be set");
  const { server, port, code } = await listen();
  const provider = new BrowserProvider(clientId, `http://127.0.0.1:${port}/callback`);
  const seen = provider.seen;
  try {
    step = "connect without a token";
    const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    try {
      await new Client({ name: "sandbar-ts-browser", version: "1.0.0" }).connect(first);
      check(false, "connected without authorizing");
    } catch (err) {
      if (!(err instanceof UnauthorizedError)) throw err;
    }
    check(seen.redirects === 1, "the client did not open the authorization URL");

    step = "wait for the browser";
    const back = await code;
    check(!back.error && back.code, `the browser came back without a code: ${JSON.stringify(back)}`);

    step = "finish auth";
    await first.finishAuth(back.code);
    const tokens = provider.tokens();
    check(tokens?.access_token && tokens?.refresh_token, "no access and refresh token after the code exchange");
    seen.tokenType = tokens.token_type;

    step = "connect with the token";
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    const client = new Client({ name: "sandbar-ts-browser", version: "1.0.0" });
    await client.connect(transport);
    try {
      const metadata = { name: "ts-browser-boot", namespace: process.env.MCP_NAMESPACE };
      Object.assign(seen, await listAndCreate(client, "TS Browser Boot", metadata, (s) => (step = s)));
    } finally {
      await client.close();
    }

    step = "refresh";
    // As the SDK refreshes once the access token is refused: a new pair, the old
    // refresh token no longer valid.
    const prm = await discoverOAuthProtectedResourceMetadata(new URL(url));
    const asUrl = new URL(prm.authorization_servers[0]);
    const metadata = await discoverAuthorizationServerMetadata(asUrl);
    const renewed = await refreshAuthorization(asUrl, {
      metadata,
      clientInformation: provider.clientInformation() ?? { client_id: clientId },
      refreshToken: tokens.refresh_token,
      resource: new URL(url),
    });
    check(renewed.access_token && renewed.refresh_token && renewed.refresh_token !== tokens.refresh_token, "the refresh gave no new pair");
    seen.refreshed = true;
  } finally {
    server.close();
  }
  step = "done";
  console.log(JSON.stringify({ ok: true, sdk: "@modelcontextprotocol/sdk", ...seen }));
}

run("ts-oauth-browser", main, () => step);
