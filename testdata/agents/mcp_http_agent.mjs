// An agent that uses an MCP server over the streamable HTTP transport
// through `jukebox mcp --url`, with the official MCP SDK client:
//
//   JUKEBOX_BIN=... PORT=N node mcp_http_agent.mjs
//
// Given JUKEBOX_MCP_URL_EVERYTHING (jukebox record --mcp-url), it connects
// there. Else it starts @modelcontextprotocol/server-everything
// (streamableHttp) on PORT, unless it runs under jukebox replay
// (JUKEBOX_MODE), where the server is not needed, and jukebox mcp --url in
// front of it, and reads the URL that prints. Then it lists tools, calls
// echo and get-sum.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { once } from "node:events";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(import.meta.url);
const port = process.env.PORT;
let server, proxy, url = process.env.JUKEBOX_MCP_URL_EVERYTHING;
if (!url) {
  if (process.env.JUKEBOX_MODE !== "replay") {
    const js = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");
    server = spawn(process.execPath, [js, "streamableHttp"], { env: { ...process.env, PORT: port }, stdio: ["ignore", "ignore", "pipe"] });
    const lines = readline.createInterface({ input: server.stderr });
    for await (const line of lines) {
      if (line.includes("listening on port")) break;
    }
  }
  proxy = spawn(process.env.JUKEBOX_BIN, ["mcp", "--name", "everything", "--url", `http://127.0.0.1:${port}/mcp`], { stdio: ["ignore", "pipe", "inherit"] });
  [url] = await once(readline.createInterface({ input: proxy.stdout }), "line");
}

const client = new Client({ name: "jukebox-mcp-http-agent", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const text = (res) => res.content.map((c) => c.text ?? `[${c.type}]`).join(" ");
const tools = (await client.listTools()).tools.map((t) => t.name);
console.log("tools:", tools.includes("echo"), tools.includes("get-sum"));
console.log("echo:", text(await client.callTool({ name: "echo", arguments: { message: process.env.ECHO_MESSAGE || "over HTTP" } })));
console.log("sum:", text(await client.callTool({ name: "get-sum", arguments: { a: 20, b: 22 } })));
await client.close();
if (proxy) {
  proxy.kill("SIGTERM");
  await once(proxy, "exit");
}
server?.kill();
