// Drives a decoder exported with `slimpack convert --format onnx
// --onnx-kv-cache` the way ONNX Runtime GenAI does: the prompt in one run
// with an empty past, then one token per run, each run's present.* fed back
// as the next run's past_key_values.*, greedy (arg-max) choice. Then the
// whole sequence again in one run with an empty past (ORT's own no-cache
// recomputation). Everything about the model comes from the
// genai_config.json the export wrote beside it, as GenAI reads it: the
// file name, the input/output names (past/present as %d patterns), the
// layer count, KV heads and head size that size the cache.
//
// Writes to OUT_DIR:
//   tokens.npy          i64 [1, P + STEPS]: the prompt and the STEPS greedy tokens
//   cached_logits.npy   f32 [P + STEPS, vocab]: the prompt run's rows, then one row
//                       per cached step (row r scores the token at r + 1)
//   full_logits.npy     f32 [P + STEPS, vocab]: the same rows from the one-run recomputation
//   cached_present.N.key|value.npy, full_present.N.key|value.npy: the last cache
//                       of the stepwise run and the recomputation's
//   padded_logits.npy   f32 [P - 2, vocab]: a batch of two, the prompt and the
//                       prompt without its first 2 tokens left-padded by 2
//                       (attention_mask 0, position_ids counting real tokens):
//                       the padded row's real positions
//   unpadded_logits.npy f32 [P - 2, vocab]: that shorter prompt alone
// --control zero-positions feeds position 0 to every cached step (a broken
// driver), so the test can show its comparison catches a wrong cache.
// Usage: node ort_kv_generate.mjs MODEL --prompt PROMPT.npy --steps N --out-dir DIR
//        [--control zero-positions]
import fs from 'node:fs';
import path from 'node:path';

import ort from 'onnxruntime-node';

import { createSession, parseArgs } from './common.mjs';
import { readNpyOrNpz, writeNpy } from './npy.mjs';

const usage = 'usage: node ort_kv_generate.mjs MODEL --prompt PROMPT.npy --steps N --out-dir DIR ' +
  '[--control zero-positions]';
const opts = parseArgs(process.argv.slice(2), usage,
  { inputs: 'unused', prompt: '', steps: '32', 'out-dir': '', control: '' });
if (opts.prompt === '' || opts['out-dir'] === '' || !['', 'zero-positions'].includes(opts.control)) {
  console.error(usage);
  process.exit(2);
}

function fail(message) {
  console.error(`ort_kv_generate: ${message}`);
  process.exit(1);
}

const configPath = path.join(path.dirname(opts.model), 'genai_config.json');
if (!fs.existsSync(configPath)) fail(`${configPath}: missing (the export writes it beside the model)`);
const decoder = JSON.parse(fs.readFileSync(configPath, 'utf8')).model.decoder;
if (decoder.filename !== path.basename(opts.model)) {
  fail(`${configPath}: decoder.filename '${decoder.filename}' is not ${path.basename(opts.model)}`);
}
const layers = decoder.num_hidden_layers;
const kvHeads = decoder.num_key_value_heads;
const headDim = decoder.head_size;
const { inputs: inNames, outputs: outNames } = decoder;
const nth = (pattern, l) => pattern.replace('%d', String(l));

const session = await createSession(opts.model, 1);
const pastNames = [];
for (let l = 0; l < layers; ++l) {
  pastNames.push([nth(inNames.past_key_names, l), nth(outNames.present_key_names, l)]);
  pastNames.push([nth(inNames.past_value_names, l), nth(outNames.present_value_names, l)]);
}
const expectedInputs = [inNames.input_ids, inNames.attention_mask, inNames.position_ids,
  ...pastNames.map((p) => p[0])];
const expectedOutputs = [outNames.logits, ...pastNames.map((p) => p[1])];
if (JSON.stringify(session.inputNames) !== JSON.stringify(expectedInputs)) {
  fail(`${opts.model}: inputs [${session.inputNames}], expected [${expectedInputs}]`);
}
if (JSON.stringify(session.outputNames) !== JSON.stringify(expectedOutputs)) {
  fail(`${opts.model}: outputs [${session.outputNames}], expected [${expectedOutputs}]`);
}

const i64 = (values, dims) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);
const emptyPast = () => new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]);

// One run over `ids` at positions start..start+len-1 after `past` (a map
// past name -> tensor, or null for an empty cache).
async function step(ids, start, past) {
  const feeds = {
    input_ids: i64(ids, [1, ids.length]),
    attention_mask: i64(new Array(start + ids.length).fill(1), [1, start + ids.length]),
    position_ids: i64(ids.map((_, i) => (opts.control === 'zero-positions' && start > 0 ? 0 : start + i)),
      [1, ids.length]),
  };
  for (const [pastName, presentName] of pastNames) {
    feeds[pastName] = past === null ? emptyPast() : past[presentName];
  }
  const out = await session.run(feeds);
  const [b, s, vocab] = out.logits.dims;
  if (b !== 1 || s !== ids.length) fail(`logits dims [${out.logits.dims}] for ${ids.length} tokens`);
  for (const [, presentName] of pastNames) {
    const d = out[presentName].dims;
    if (d[0] !== 1 || d[1] !== kvHeads || d[2] !== start + ids.length || d[3] !== headDim) {
      fail(`${presentName} dims [${d}], expected [1,${kvHeads},${start + ids.length},${headDim}]`);
    }
  }
  return { out, vocab };
}

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; ++i) if (row[i] > row[best]) best = i;
  return best;
}

const prompt = Array.from(readNpyOrNpz(opts.prompt).values())[0];
const promptIds = Array.from(prompt.data, Number);
const steps = Number(opts.steps);
const rows = [];
const tokens = [...promptIds];
const t0 = performance.now();
let { out, vocab } = await step(promptIds, 0, null);
const t1 = performance.now();
for (let r = 0; r < promptIds.length; ++r) rows.push(out.logits.data.slice(r * vocab, (r + 1) * vocab));
for (let k = 0; k < steps; ++k) {
  const next = argmax(rows[rows.length - 1]);
  tokens.push(next);
  ({ out } = await step([next], tokens.length - 1, out));
  rows.push(out.logits.data.slice(0, vocab));
}
const t2 = performance.now();
const cached = out;
const full = (await step(tokens, 0, null)).out;

// Left padding in a batch of two, empty past.
const p = promptIds.length, pad = 2;
const batchFeeds = {
  input_ids: i64([...promptIds, 0, 0, ...promptIds.slice(pad)], [2, p]),
  attention_mask: i64([...new Array(p).fill(1), 0, 0, ...new Array(p - pad).fill(1)], [2, p]),
  position_ids: i64([...promptIds.map((_, i) => i), 0, 0, ...promptIds.slice(pad).map((_, i) => i)], [2, p]),
};
for (const [pastName] of pastNames) {
  batchFeeds[pastName] = new ort.Tensor('float32', new Float32Array(0), [2, kvHeads, 0, headDim]);
}
const padded = (await session.run(batchFeeds)).logits.data.slice((p + pad) * vocab, 2 * p * vocab);
const unpadded = (await step(promptIds.slice(pad), 0, null)).out.logits.data;

fs.mkdirSync(opts['out-dir'], { recursive: true });
const file = (name) => path.join(opts['out-dir'], name);
writeNpy(file('tokens.npy'), { type: 'int64', dims: [1, tokens.length], data: BigInt64Array.from(tokens, BigInt) });
const flat = new Float32Array(rows.length * vocab);
rows.forEach((row, r) => flat.set(row, r * vocab));
writeNpy(file('cached_logits.npy'), { type: 'float32', dims: [rows.length, vocab], data: flat });
writeNpy(file('full_logits.npy'), { type: 'float32', dims: [tokens.length, vocab], data: full.logits.data });
writeNpy(file('padded_logits.npy'), { type: 'float32', dims: [p - pad, vocab], data: padded });
writeNpy(file('unpadded_logits.npy'), { type: 'float32', dims: [p - pad, vocab], data: unpadded });
for (const [, presentName] of pastNames) {
  writeNpy(file(`cached_${presentName}.npy`), cached[presentName]);
  writeNpy(file(`full_${presentName}.npy`), full[presentName]);
}
console.log(`prompt ${promptIds.length} tokens (${(t1 - t0).toFixed(2)} ms), ${steps} greedy steps with the ` +
  `cache (${((t2 - t1) / steps).toFixed(2)} ms/token, 1 thread): ${tokens.slice(promptIds.length)}`);
