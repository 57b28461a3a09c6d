// An agent that asks a model, writes a file through the official MCP
// filesystem server, asks again and writes a second file, so that a fork
// at the second model call shows where MCP goes live:
//
//   JUKEBOX_BIN=... node mcp_fork_agent.mjs DIR
import OpenAI from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const dir = process.argv[2];
const server = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-filesystem/package.json")), "dist/index.js");
const transport = new StdioClientTransport({
  command: process.env.JUKEBOX_BIN,
  args: ["mcp", "--name", "files", "--", process.execPath, server, dir],
  env: process.env,
  stderr: "inherit",
});
const fs = new Client({ name: "jukebox-mcp-fork-agent", version: "1.0.0" });
await fs.connect(transport);
const openai = new OpenAI();

for (const [i, file] of [[1, "first.txt"], [2, "second.txt"]]) {
  const r = await openai.chat.completions.create({ model: "demo-large", messages: [{ role: "user", content: `step ${i}` }] });
  const said = r.choices[0].message.content;
  const res = await fs.callTool({ name: "write_file", arguments: { path: path.join(dir, file), content: said } });
  console.log(`step ${i}:`, res.content[0].text);
}
await fs.close();
