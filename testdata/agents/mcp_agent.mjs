// An agent that uses MCP tools through the official MCP SDK client, with
// each server started through `jukebox mcp` (JUKEBOX_BIN), as an agent's
// mcpServers config would start it once wrapped:
//
//   node mcp_agent.mjs DIR
//
// It lists the tools of @modelcontextprotocol/server-everything and of
// @modelcontextprotocol/server-filesystem (over DIR), calls echo and
// get-sum, writes and reads a file, lists DIR, and prints what it got,
// one line per call, so a replay can be compared with the recording.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const dir = process.argv[2];
const jukebox = process.env.JUKEBOX_BIN;
if (!dir || !jukebox) {
  console.error("usage: JUKEBOX_BIN=... node mcp_agent.mjs DIR");
  process.exit(2);
}

const serverJS = (pkg, file) => path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);

async function connect(name, args) {
  const transport = new StdioClientTransport({
    command: jukebox,
    args: ["mcp", "--name", name, "--", process.execPath, ...args],
    // MCP_AGENT_DEFAULT_ENV: the client's default environment (HOME,
    // LOGNAME, PATH, SHELL, TERM, USER), as an mcpServers entry without
    // "env" gets.
    env: process.env.MCP_AGENT_DEFAULT_ENV ? undefined : process.env,
    stderr: "inherit",
  });
  const client = new Client({ name: "jukebox-mcp-test-agent", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const text = (res) => res.content.map((c) => c.text ?? `[${c.type}]`).join(" ");

const everything = await connect("everything", [serverJS("@modelcontextprotocol/server-everything", "dist/index.js"), "stdio"]);
const tools = (await everything.listTools()).tools.map((t) => t.name).sort();
console.log("everything tools:", tools.includes("echo"), tools.includes("get-sum"));
console.log("echo:", text(await everything.callTool({ name: "echo", arguments: { message: "hello from the agent" } })));
console.log("sum:", text(await everything.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } })));
await everything.close();

const fs = await connect("filesystem", [serverJS("@modelcontextprotocol/server-filesystem", "dist/index.js"), dir]);
const fsTools = (await fs.listTools()).tools.map((t) => t.name);
console.log("filesystem tools:", fsTools.includes("write_file"), fsTools.includes("read_text_file"));
console.log("write:", text(await fs.callTool({ name: "write_file", arguments: { path: path.join(dir, "note.txt"), content: "written through MCP" } })));
console.log("read:", text(await fs.callTool({ name: "read_text_file", arguments: { path: path.join(dir, "note.txt") } })));
console.log("list:", text(await fs.callTool({ name: "list_directory", arguments: { path: dir } })));
await fs.close();
