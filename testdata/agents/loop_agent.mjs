// An agent stuck in a tool loop, for the circuit breaker's tests: it
// asks the model (official openai SDK, streamed when AGENT_STREAM is set)
// for the next step, runs the tool the model calls, sends the result
// back, and goes on until the model calls no tool, up to 50 rounds.
import OpenAI from 'openai';
import { TOOL_SPECS, main, runTool } from './tools.mjs';

const client = new OpenAI({ maxRetries: 2 });
const model = process.env.AGENT_MODEL || 'demo-large';
const stream = Boolean(process.env.AGENT_STREAM);
const tools = TOOL_SPECS.map((t) => ({ type: 'function', function: t }));

async function ask(messages) {
  if (!stream) {
    const r = await client.chat.completions.create({ model, messages, tools });
    return r.choices[0].message;
  }
  const s = await client.chat.completions.create({ model, messages, tools, stream: true });
  const msg = { role: 'assistant', content: '', tool_calls: [] };
  for await (const chunk of s) {
    const d = chunk.choices[0]?.delta ?? {};
    msg.content += d.content ?? '';
    for (const tc of d.tool_calls ?? []) {
      const call = (msg.tool_calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) call.id = tc.id;
      call.function.name += tc.function?.name ?? '';
      call.function.arguments += tc.function?.arguments ?? '';
    }
  }
  if (msg.tool_calls.length === 0) delete msg.tool_calls;
  return msg;
}

main(async () => {
  const messages = [{ role: 'user', content: 'Wait until the job is done, then report.' }];
  for (let round = 1; round <= 50; round++) {
    const msg = await ask(messages);
    messages.push(msg);
    if (!msg.tool_calls) {
      console.log(`done after ${round} rounds: ${msg.content}`);
      return;
    }
    for (const call of msg.tool_calls) {
      const result = runTool(call.function.name, JSON.parse(call.function.arguments));
      console.log(`round ${round}: ${call.function.name} -> ${result}`);
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    }
  }
  console.log('gave up after 50 rounds');
});
