// Latency of one ONNX Runtime session.run on fixed inputs: warm-up runs,
// then ITERS timed runs; prints one JSON line with the median and min in ms
// (the same fields model_latency prints for slimpack's interpreter).
// Usage: node ort_bench.mjs MODEL --inputs IN.npz [--threads N] [--warmup W] [--iters I]
import { createSession, parseArgs, readFeeds } from './common.mjs';

const usage = 'usage: node ort_bench.mjs MODEL --inputs IN.npz [--threads N] [--warmup W] [--iters I]';
const opts = parseArgs(process.argv.slice(2), usage, { inputs: '', threads: '1', warmup: '3', iters: '20' });
const threads = Number(opts.threads);
const session = await createSession(opts.model, threads);
const feeds = readFeeds(session, opts.inputs);
for (let i = 0; i < Number(opts.warmup); ++i) await session.run(feeds);
const ms = [];
for (let i = 0; i < Number(opts.iters); ++i) {
  const t0 = process.hrtime.bigint();
  await session.run(feeds);
  ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
ms.sort((a, b) => a - b);
const median = ms.length % 2 ? ms[(ms.length - 1) / 2] : (ms[ms.length / 2 - 1] + ms[ms.length / 2]) / 2;
console.log(JSON.stringify({ runtime: 'onnxruntime-node', model: opts.model, threads,
  iters: ms.length, median_ms: +median.toFixed(3), min_ms: +ms[0].toFixed(3) }));
