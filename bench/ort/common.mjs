// Shared by ort_run.mjs and ort_bench.mjs: argument parsing and session
// creation with the thread settings the comparison pins.
import ort from 'onnxruntime-node';

import { readNpyOrNpz } from './npy.mjs';

// Parses "--key value" pairs after the positional MODEL.
export function parseArgs(argv, usage, defaults) {
  const opts = { ...defaults };
  const pos = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i].startsWith('--')) {
      const key = argv[i].slice(2);
      if (!(key in defaults) || i + 1 >= argv.length) {
        console.error(usage);
        process.exit(2);
      }
      opts[key] = argv[++i];
    } else {
      pos.push(argv[i]);
    }
  }
  if (pos.length !== 1 || opts.inputs === '') {
    console.error(usage);
    process.exit(2);
  }
  opts.model = pos[0];
  return opts;
}

// Same thread count for intra- and inter-op pools; full graph optimisation
// (ORT's default for the C API as well); sequential execution.
export async function createSession(model, threads) {
  return ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: threads,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    executionProviders: ['cpu'],
  });
}

// Reads the feeds from an .npy/.npz file and checks them against the
// session's input names.
export function readFeeds(session, file) {
  const feeds = {};
  for (const [name, t] of readNpyOrNpz(file)) {
    if (!session.inputNames.includes(name)) {
      throw new Error(`${file}: tensor ${name} is not a model input (inputs: ${session.inputNames.join(', ')})`);
    }
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  for (const name of session.inputNames) {
    if (!(name in feeds)) throw new Error(`${file}: missing model input ${name}`);
  }
  return feeds;
}
