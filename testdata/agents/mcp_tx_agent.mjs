// An agent that opens a transaction of its own through the control API
// (as the Python SDK's begin does), writes a file through the official
// MCP filesystem server started through `jukebox mcp` under a policy that
// holds write_file, and ends the transaction as told:
//
//   JUKEBOX_BIN=... node mcp_tx_agent.mjs DIR commit|rollback
//
// MCP_MODE sets the transaction's mcp_mode (default staged_acid).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const [dir, end] = process.argv.slice(2);
const control = async (p, body) => {
  const r = await fetch(`${process.env.JUKEBOX_CONTROL}/v1/${p}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${process.env.JUKEBOX_CONTROL_TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const out = await r.json();
  if (!r.ok) throw new Error(`${p}: ${JSON.stringify(out)}`);
  return out;
};

const { tx } = await control("tx", { mcp_mode: process.env.MCP_MODE || "staged_acid" });
const server = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-filesystem/package.json")), "dist/index.js");
const fs = new Client({ name: "jukebox-mcp-tx-agent", version: "1.0.0" });
await fs.connect(new StdioClientTransport({
  command: process.env.JUKEBOX_BIN, args: ["mcp", "--name", "files", "--", process.execPath, server, dir],
  env: process.env, stderr: "inherit",
}));
const res = await fs.callTool({ name: "write_file", arguments: { path: path.join(dir, "note.txt"), content: "written at the commit" } });
console.log("write:", res.content.map((c) => c.text).join(" "));
await fs.close();
const out = await control(`tx/${tx}/${end}`, end === "rollback" ? { reason: "changed my mind" } : {});
console.log(`${end}:`, JSON.stringify(out.mcp_calls ?? []));
