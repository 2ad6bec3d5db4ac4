// The AgentScript extension: the grammar and language configuration are declared in
// package.json; this client starts `agentscript lsp` and hands it every .as file.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const settings = vscode.workspace.getConfiguration("agentscript");
  const command = settings.get("server.path") || "agentscript";
  const args = settings.get("server.args") || ["lsp"];
  // TransportKind.stdio adds `--stdio`, which `agentscript lsp` accepts.
  const server = { command, args, transport: TransportKind.stdio };
  client = new LanguageClient(
    "agentscript",
    "AgentScript",
    { run: server, debug: server },
    {
      documentSelector: [{ scheme: "file", language: "agentscript" }],
      // Off by default: completion never starts an MCP server unless the user allows it.
      initializationOptions: { startMcpServers: settings.get("mcp.startServers") === true },
    }
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
