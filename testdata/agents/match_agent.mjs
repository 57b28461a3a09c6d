// An agent built on the official openai SDK whose requests change from run
// to run the way real agents' do, for replay's matching rules. AGENT_MODE:
//   timestamp  a chat call whose system prompt holds the time and a uuid;
//   parallel   20 identical streamed chat calls at once (Promise.all), each
//              caller printing the id of the answer it got, in call order;
//   files      an upload through client.files.create (a multipart body with
//              a random boundary).
import OpenAI, { toFile } from 'openai';
import { randomUUID } from 'node:crypto';

const model = process.env.AGENT_MODEL || 'demo-large';
const client = new OpenAI({ maxRetries: 0 });

const modes = {
  async timestamp() {
    const r = await client.chat.completions.create({
      model,
      messages: [
        { role: 'system', content: `Now: ${new Date().toISOString()}. Run ${randomUUID()}.` },
        { role: 'user', content: 'Say hello to the jukebox.' },
      ],
    });
    console.log(`chat: ${r.choices[0].message.content}`);
  },
  async parallel() {
    const one = async () => {
      const stream = await client.chat.completions.create({
        model, stream: true, messages: [{ role: 'user', content: 'Count to five.' }],
      });
      let id = '';
      let text = '';
      for await (const chunk of stream) {
        id = chunk.id;
        text += chunk.choices[0]?.delta?.content ?? '';
      }
      return `${id} ${text.length}`;
    };
    const got = await Promise.all(Array.from({ length: 20 }, one));
    got.forEach((g, i) => console.log(`call ${i}: ${g}`));
  },
  async files() {
    const f = await client.files.create({
      file: await toFile(Buffer.from('{"prompt":"a","completion":"b"}\n'), 'notes.jsonl'),
      purpose: 'fine-tune',
    });
    console.log(`file: ${f.id} ${f.bytes} ${f.filename} ${f.purpose}`);
  },
};

const mode = modes[process.env.AGENT_MODE];
if (!mode) {
  console.error(`AGENT_MODE must be one of ${Object.keys(modes).join(', ')}`);
  process.exit(2);
}
mode().catch((err) => {
  console.error(err);
  process.exit(1);
});
