// The official OpenAI SDK (the openai npm package, pinned in
// package-lock.json) against infertop's sim: what a real client reads
// from the sim's answers. Run by sdkcheck_test.go (make test-sdk), which
// starts the sims on 127.0.0.1 and passes their base URLs:
//
//   node check.mjs PLAIN_URL REASONING_URL MODEL
//
// PLAIN_URL's sim answers text only, REASONING_URL's reasons first. Each
// check prints a line; any failure exits 1.
import OpenAI from 'openai';

const [plainURL, reasoningURL, model] = process.argv.slice(2);
if (!plainURL || !reasoningURL || !model) {
  console.error('usage: node check.mjs PLAIN_URL REASONING_URL MODEL');
  process.exit(2);
}

let failed = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed++;
}

// client is the SDK as an application builds it, with no retries (a
// failure is the finding) and a bound on each call.
function client(baseURL) {
  return new OpenAI({ baseURL, apiKey: 'sim', maxRetries: 0, timeout: 30_000 });
}

const outputTokens = 12;

// streamed: responses.stream().finalResponse() holds the whole text the
// deltas made (and, when the model reasons, the reasoning item's text),
// as the SDK builds it from the stream's events.
async function streamed(baseURL, reasons) {
  const name = reasons ? 'responses.stream, reasoning' : 'responses.stream';
  let text = '';
  let reasoning = '';
  const stream = client(baseURL).responses.stream({ model, input: 'Say something.', max_output_tokens: outputTokens });
  stream.on('response.output_text.delta', (e) => { text += e.delta; });
  stream.on('response.reasoning_text.delta', (e) => { reasoning += e.delta; });
  const r = await stream.finalResponse();
  check(r.status === 'completed', `${name}: finalResponse() status ${r.status}`);
  check(text.trim() !== '' && r.output_text === text, `${name}: finalResponse().output_text is the deltas' text (${JSON.stringify(r.output_text)})`);
  check(r.usage?.output_tokens === outputTokens, `${name}: usage.output_tokens ${r.usage?.output_tokens}, asked ${outputTokens}`);
  const item = r.output.find((o) => o.type === 'reasoning');
  if (reasons) {
    const got = item?.content?.[0]?.text;
    check(reasoning.trim() !== '' && got === reasoning, `${name}: the reasoning item's text is the reasoning deltas' (${JSON.stringify(got)})`);
  } else {
    check(item === undefined && reasoning === '', `${name}: no reasoning item`);
  }
}

// embedded: embeddings.create with the SDK's defaults (it asks for
// base64 and decodes it) gives the sim's unit vector, never zeros.
async function embedded(baseURL) {
  const r = await client(baseURL).embeddings.create({ model, input: 'hello there' });
  const v = r.data[0]?.embedding;
  check(Array.isArray(v) && v.length === 64, `embeddings.create: a vector of ${v?.length} numbers, want 64`);
  const norm = (v ?? []).reduce((a, x) => a + x * x, 0);
  check(Math.abs(norm - 1) < 1e-4, `embeddings.create: norm² ${norm.toFixed(6)}, want 1 (a unit vector)`);
}

// Each check on its own: one that throws does not hide the others.
for (const [name, run] of [
  ['responses.stream', () => streamed(plainURL, false)],
  ['responses.stream, reasoning', () => streamed(reasoningURL, true)],
  ['embeddings.create', () => embedded(plainURL)],
]) {
  try {
    await run();
  } catch (err) {
    check(false, `${name}: the SDK threw: ${err?.message ?? err}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
