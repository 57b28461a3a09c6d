// An agent that asks a model, calls the official everything MCP server
// over streamable HTTP (at JUKEBOX_MCP_URL_EVERYTHING, jukebox record
// --mcp-url), asks again and calls it again, so that a fork at the second
// model call shows where the HTTP session goes live:
//
//   node mcp_http_fork_agent.mjs
import OpenAI from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "jukebox-mcp-http-fork-agent", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.env.JUKEBOX_MCP_URL_EVERYTHING)));
const openai = new OpenAI();
const text = (res) => res.content.map((c) => c.text ?? `[${c.type}]`).join(" ");

const ask = async (i) => {
  const r = await openai.chat.completions.create({ model: "demo-large", messages: [{ role: "user", content: `step ${i}` }] });
  return r.choices[0].message.content;
};
console.log("step 1:", text(await client.callTool({ name: "echo", arguments: { message: await ask(1) } })));
const said = await ask(2);
console.log("step 2:", text(await client.callTool({ name: "get-sum", arguments: { a: said.length, b: 1 } })));
await client.close();
