// An agent built on the official openai SDK. It reads OPENAI_BASE_URL and
// OPENAI_API_KEY from the environment (the SDK does), and AGENT_MODEL.
// It lists models, makes a plain and a streamed chat call, a plain and a
// streamed Responses call, an embedding, and runs a tool-calling loop that
// alternates plain and streamed calls, writing files in its working directory.
import OpenAI from 'openai';
import { TASK, TOOL_SPECS, main, runTool } from './tools.mjs';

const model = process.env.AGENT_MODEL || 'demo-large';
const client = new OpenAI({ maxRetries: 2 });
const tools = TOOL_SPECS.map((t) => ({ type: 'function', function: t }));

async function basics() {
  const models = await client.models.list();
  console.log(`models: ${models.data.map((m) => m.id).join(' ')}`);

  const hello = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Say hello to the jukebox.' }],
  });
  console.log(`chat: ${hello.choices[0].message.content}`);

  const stream = await client.chat.completions.create({
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Count to five.' }],
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    usage = chunk.usage ?? usage;
  }
  if (!usage || usage.total_tokens !== usage.prompt_tokens + usage.completion_tokens) {
    throw new Error(`stream usage missing or inconsistent: ${JSON.stringify(usage)}`);
  }
  console.log(`stream: ${text}`);

  const resp = await client.responses.create({ model, input: 'Say hello to the jukebox.' });
  console.log(`responses: ${resp.output_text}`);
  const rstream = client.responses.stream({ model, input: 'Count to five.' });
  const final = await rstream.finalResponse();
  console.log(`responses stream: ${final.output_text}`);

  const emb = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'jukebox' });
  console.log(`embeddings: ${emb.data[0].embedding.length} dims`);
}

async function toolLoop() {
  const messages = [
    { role: 'system', content: 'You are a careful agent with file tools.' },
    { role: 'user', content: TASK },
  ];
  for (let step = 0; step < 8; step++) {
    const params = { model, messages, tools };
    const completion = step % 2 === 0
      ? await client.chat.completions.create(params)
      : await client.chat.completions.stream(params).finalChatCompletion();
    const msg = completion.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls?.length) {
      console.log(`final: ${msg.content}`);
      return;
    }
    if (msg.content) console.log(`say: ${msg.content}`);
    for (const call of msg.tool_calls) {
      const args = JSON.parse(call.function.arguments);
      console.log(`tool: ${call.function.name} ${JSON.stringify(args)}`);
      messages.push({ role: 'tool', tool_call_id: call.id, content: runTool(call.function.name, args) });
    }
  }
  throw new Error('the tool loop did not finish in 8 steps');
}

main(async () => {
  await basics();
  await toolLoop();
});
