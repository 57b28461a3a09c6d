// An agent that gives its official SDKs explicit public base URLs, as
// code often does, so that only jukebox's forward proxy (the proxy
// variables, and for Node the preload) can see its calls: an OpenAI chat
// call, a plain HTTP tool call (a web search, its key in the query and a
// header), an Anthropic message, then a streamed OpenAI call.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const openai = new OpenAI({ baseURL: 'https://api.openai.com/v1', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: 'https://api.anthropic.com', maxRetries: 0 });
const model = process.env.AGENT_MODEL || 'demo-large';
const key = process.env.SEARCH_KEY;

const chat = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello to the jukebox.' }] });
console.log(`openai: ${chat.choices[0].message.content}`);

const search = await fetch(`https://search.example/api/search?q=jukebox&key=${key}`, { headers: { 'X-Api-Key': key } });
console.log(`search: ${search.status} ${await search.text()}`);

const msg = await anthropic.messages.create({ model: 'demo-small', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello to the jukebox.' }] });
console.log(`anthropic: ${msg.content[0].text}`);

const stream = await openai.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'Count to five.' }] });
let text = '';
for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
console.log(`stream: ${text}`);
