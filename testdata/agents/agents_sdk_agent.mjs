// An agent built on the OpenAI Agents SDK (@openai/agents): an Agent with
// the shared file tools, run streamed through the Responses API or, with
// AGENT_API=chat_completions, the Chat Completions API. The SDK reads
// OPENAI_BASE_URL and OPENAI_API_KEY through the openai client it builds.
// It prints every streamed event kind it sees once, each tool call, and the
// final output. Its own trace export is left on: jukebox switches it off in
// replay (OPENAI_AGENTS_DISABLE_TRACING).
import { Agent, run, tool, setOpenAIAPI } from '@openai/agents';
import { TASK, TOOL_SPECS, main, runTool } from './tools.mjs';

setOpenAIAPI(process.env.AGENT_API === 'chat_completions' ? 'chat_completions' : 'responses');

const tools = TOOL_SPECS.map((spec) => tool({
  name: spec.name,
  description: spec.description,
  parameters: { ...spec.parameters, additionalProperties: false },
  strict: false,
  execute: async (args) => {
    console.log(`tool: ${spec.name} ${JSON.stringify(args)}`);
    return runTool(spec.name, args);
  },
}));

const agent = new Agent({
  name: 'poet',
  instructions: 'You are a careful agent with file tools.',
  model: process.env.AGENT_MODEL || 'demo-large',
  tools,
});

main(async () => {
  const result = await run(agent, TASK, { stream: true, maxTurns: 8 });
  const kinds = new Set();
  for await (const event of result) {
    if (!kinds.has(event.type)) {
      kinds.add(event.type);
      console.log(`event: ${event.type}`);
    }
  }
  await result.completed;
  console.log(`final: ${result.finalOutput}`);
});
