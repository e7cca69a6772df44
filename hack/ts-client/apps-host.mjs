// Copyright 2026 The Sandbar Authors.
// SPDX-License-Identifier: Apache-2.0
//
// A host of Sandbar's MCP Apps views for the browser test
// (internal/mcpserver/apps_browser_test.go), built with the official host side of
// the extension (@modelcontextprotocol/ext-apps/app-bridge) and the official
// TypeScript client. The test bundles it for the browser with esbuild and serves
// it beside the MCP server; the page's query names the token and the tool whose
// view it shows:
//
//   /?token=<token>&tool=sandbar_class_zorp_SpaceBoot
//
// It connects, lists the tools, reads the view the tool names in _meta.ui, and shows
// it in a sandboxed frame joined to the server through an AppBridge. With
// &args=<JSON> it also calls the tool, as a host does for a model, and hands the
// view the call's arguments and its result. It sets window.viewReady once the view
// has initialized (and has the result, if any), and window.hostError if anything
// fails.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

async function main() {
  const params = new URLSearchParams(location.search);
  const client = new Client({ name: "sandbar-apps-host", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href), {
    requestInit: { headers: { Authorization: "Bearer " + params.get("token") } },
  }));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === params.get("tool"));
  if (!tool) throw new Error("no tool " + params.get("tool"));
  const uri = tool._meta?.ui?.resourceUri;
  if (!uri) throw new Error(tool.name + " has no view");
  const res = await client.readResource({ uri });
  const view = res.contents[0];
  window.viewResource = { uri, mimeType: view.mimeType, meta: view._meta, bytes: view.text.length };

  const iframe = document.createElement("iframe");
  // allow-same-origin lets the test reach into the view's document; a host that
  // keeps views apart serves them from another origin.
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  iframe.title = tool.name;
  document.body.appendChild(iframe);
  const bridge = new AppBridge(client, { name: "sandbar-apps-host", version: "1.0.0" }, { serverTools: {}, serverResources: {} });
  const args = params.get("args") ? JSON.parse(params.get("args")) : null;
  bridge.oninitialized = async () => {
    try {
      if (args) {
        await bridge.sendToolInput({ arguments: args });
        await bridge.sendToolResult(await client.callTool({ name: tool.name, arguments: args }));
      }
      window.viewReady = true;
    } catch (err) {
      window.hostError = String((err && err.stack) || err);
    }
  };
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = Math.min(height, 2000) + "px"; };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = view.text;
}

main().catch((err) => { window.hostError = String((err && err.stack) || err); });
