// An agent built on the official @anthropic-ai/sdk. It reads
// ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the environment (the SDK
// does; the base URL has no /v1, the SDK appends /v1/messages), and
// AGENT_MODEL. It makes a plain and a streamed call, counts tokens, and runs
// a tool-calling loop that alternates plain and streamed calls, writing
// files in its working directory.
import Anthropic from '@anthropic-ai/sdk';
import { TASK, TOOL_SPECS, main, runTool } from './tools.mjs';

const model = process.env.AGENT_MODEL || 'demo-small';
const client = new Anthropic({ maxRetries: 2 });
const tools = TOOL_SPECS.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));

function textOf(message) {
  return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

async function basics() {
  const hello = await client.messages.create({
    model,
    max_tokens: 256,
    messages: [{ role: 'user', content: 'Say hello to the jukebox.' }],
  });
  console.log(`messages: ${textOf(hello)}`);

  const stream = client.messages.stream({
    model,
    max_tokens: 256,
    messages: [{ role: 'user', content: 'Count to five.' }],
  });
  const final = await stream.finalMessage();
  if (!(final.usage.output_tokens > 0) || !(final.usage.input_tokens > 0)) {
    throw new Error(`stream usage missing: ${JSON.stringify(final.usage)}`);
  }
  console.log(`stream: ${textOf(final)}`);

  const count = await client.messages.countTokens({
    model,
    messages: [{ role: 'user', content: 'Count to five.' }],
  });
  console.log(`count_tokens: ${count.input_tokens > 0 ? 'ok' : 'zero'}`);
}

async function toolLoop() {
  const messages = [{ role: 'user', content: TASK }];
  for (let step = 0; step < 8; step++) {
    const params = { model, max_tokens: 1024, system: 'You are a careful agent with file tools.', messages, tools };
    const msg = step % 2 === 0
      ? await client.messages.create(params)
      : await client.messages.stream(params).finalMessage();
    messages.push({ role: 'assistant', content: msg.content });
    const calls = msg.content.filter((b) => b.type === 'tool_use');
    if (msg.stop_reason !== 'tool_use' || calls.length === 0) {
      console.log(`final: ${textOf(msg)}`);
      return;
    }
    if (textOf(msg)) console.log(`say: ${textOf(msg)}`);
    const results = [];
    for (const call of calls) {
      console.log(`tool: ${call.name} ${JSON.stringify(call.input)}`);
      results.push({ type: 'tool_result', tool_use_id: call.id, content: runTool(call.name, call.input) });
    }
    messages.push({ role: 'user', content: results });
  }
  throw new Error('the tool loop did not finish in 8 steps');
}

main(async () => {
  await basics();
  await toolLoop();
});
