// An agent that handles secrets, for the redaction tests: it sends PROMPT
// to the model through the official openai SDK, streamed, prints the
// answer, then prints PLANT (a secret it read from the environment).
import OpenAI from 'openai';

const client = new OpenAI({ maxRetries: 0 });
const stream = await client.chat.completions.create({
  model: process.env.AGENT_MODEL || 'demo-large',
  stream: true,
  messages: [{ role: 'user', content: process.env.PROMPT }],
});
let text = '';
for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
console.log(`answer: ${text}`);
const again = await client.chat.completions.create({
  model: process.env.AGENT_MODEL || 'demo-large',
  messages: [
    { role: 'user', content: process.env.PROMPT },
    { role: 'assistant', content: text },
    { role: 'user', content: 'Thanks.' },
  ],
});
console.log(`again: ${again.choices[0].message.content}`);
console.log(`plant: ${process.env.PLANT}`);
