// Runs an ONNX model once with ONNX Runtime and writes every output as
// OUT_DIR/<output name>.npy ('/' in names becomes '_').
// Usage: node ort_run.mjs MODEL --inputs IN.npz|IN.npy --out-dir DIR [--threads N]
import fs from 'node:fs';
import path from 'node:path';

import { createSession, parseArgs, readFeeds } from './common.mjs';
import { writeNpy } from './npy.mjs';

const usage = 'usage: node ort_run.mjs MODEL --inputs IN.npz|IN.npy --out-dir DIR [--threads N]';
const opts = parseArgs(process.argv.slice(2), usage, { inputs: '', 'out-dir': '', threads: '1' });
if (opts['out-dir'] === '') {
  console.error(usage);
  process.exit(2);
}
const session = await createSession(opts.model, Number(opts.threads));
const results = await session.run(readFeeds(session, opts.inputs));
fs.mkdirSync(opts['out-dir'], { recursive: true });
for (const name of session.outputNames) {
  const t = results[name];
  const file = path.join(opts['out-dir'], name.replace(/^\/+/, '').replaceAll('/', '_') + '.npy');
  writeNpy(file, t);
  console.log(`${name} ${t.type} [${t.dims}] -> ${file}`);
}
