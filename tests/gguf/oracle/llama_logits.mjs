// Stock llama.cpp (node-llama-cpp 3.22.1's prebuilt linux-x64 CPU binaries) as
// an oracle for slimpack's GGUF files: per-position logits of token sequences,
// and llama.cpp's own tokenization of a text.
//
//   node llama_logits.mjs MODEL.gguf TOKENS.json OUT.json|OUT.f32 [options]
//   node llama_logits.mjs MODEL.gguf --tokenize TEXT_FILE [--special]
//
// Logits mode: TOKENS.json is [[id, ...], ...] (one array per sequence; each
// sequence starts at position 0 in a fresh KV cache). For every position p of
// every sequence the output holds the raw logits llama.cpp computes for the
// next token after ids[0..p] (no sampling, penalties or bias: the greedy
// sampler leaves logits untouched).
//   OUT.json: {"n_vocab": V, "sequence_lengths": [...], "kv_cache_type": "f16",
//              "logits": [[[f32 x V] x positions] x sequences]}
//   OUT.f32:  the same logits as raw little-endian float32, sequence-major
//             ([sequence][position][vocab]), plus OUT.f32.json holding the
//             JSON above without "logits". Use it when V x positions is large.
// A one-line JSON summary (n_vocab, sequence_lengths, ...) goes to stdout.
// Options:
//   --kv-type f16|f32  KV cache element type (default f16, llama.cpp's default;
//                      f32 removes the cache rounding for tight comparisons)
//   --threads N        CPU threads (default 1: deterministic, reproducible)
//
// Tokenize mode: prints llama.cpp's ids for the UTF-8 text of TEXT_FILE as a
// JSON array. No BOS/EOS is added (llama.cpp's add_special = false); with
// --special, special-token text such as "<s>" becomes its id (parse_special).
//
// CPU only (gpu: false), never builds or downloads anything (build: "never",
// skipDownload), so it makes no network access. node-llama-cpp is imported from
// $SLIMPACK_ORACLE_DIR/node_modules when that is set (an `npm ci` of this
// folder's package.json done elsewhere, e.g. in the build tree), else from
// node_modules next to this script.
//
// Exit codes: 0 success, 2 usage error, 1 anything llama.cpp refused (the
// message, with llama.cpp's own log lines, is on stderr).
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath, pathToFileURL} from "node:url";

const USAGE =
    "usage: node llama_logits.mjs MODEL.gguf TOKENS.json OUT.json|OUT.f32 [--kv-type f16|f32] [--threads N]\n" +
    "       node llama_logits.mjs MODEL.gguf --tokenize TEXT_FILE [--special]";

function usage(message) {
    process.stderr.write(`llama_logits: ${message}\n${USAGE}\n`);
    process.exit(2);
}

function parseArgs(argv) {
    const opts = {positional: [], kvType: "f16", threads: 1, tokenize: null, special: false};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) usage(`${a} needs a value`);
            return argv[++i];
        };
        if (a === "--kv-type") opts.kvType = next();
        else if (a === "--threads") opts.threads = Number(next());
        else if (a === "--tokenize") opts.tokenize = next();
        else if (a === "--special") opts.special = true;
        else if (a.startsWith("--")) usage(`unknown option ${a}`);
        else opts.positional.push(a);
    }
    if (!["f16", "f32"].includes(opts.kvType)) usage(`--kv-type must be f16 or f32, got ${opts.kvType}`);
    if (!Number.isInteger(opts.threads) || opts.threads < 1) usage("--threads must be a positive integer");
    const want = opts.tokenize != null ? 1 : 3;
    if (opts.positional.length !== want) usage(`expected ${want} positional arguments, got ${opts.positional.length}`);
    return opts;
}

function readSequences(file) {
    let seqs;
    try {
        seqs = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (e) {
        usage(`${file}: ${e.message}`);
    }
    const ok = Array.isArray(seqs) && seqs.length > 0 && seqs.every(
        (s) => Array.isArray(s) && s.length > 0 && s.every((t) => Number.isInteger(t) && t >= 0));
    if (!ok) usage(`${file}: expected [[id, ...], ...] with non-negative integer ids and no empty sequence`);
    return seqs;
}

// Imports node-llama-cpp without letting it build, download or probe GPUs.
async function loadLlama(threads) {
    process.env.NODE_LLAMA_CPP_SKIP_DOWNLOAD = "true";
    process.env.NODE_LLAMA_CPP_GPU = "false";
    const here = path.dirname(fileURLToPath(import.meta.url));
    const base = process.env.SLIMPACK_ORACLE_DIR || here;
    const entry = path.join(base, "node_modules", "node-llama-cpp", "dist", "index.js");
    if (!fs.existsSync(entry)) {
        process.stderr.write(`llama_logits: ${entry} not found: run ` +
            `\`npm ci --ignore-scripts --omit=optional\` in ${base} (copy package.json and package-lock.json there first)\n`);
        process.exit(1);
    }
    const nlc = await import(pathToFileURL(entry).href);
    const llama = await nlc.getLlama({
        gpu: false,
        build: "never",
        skipDownload: true,
        usePrebuiltBinaries: true,
        progressLogs: false,
        maxThreads: threads,
        logLevel: "warn",
        logger: (level, message) => process.stderr.write(`[llama.cpp ${level}] ${message.endsWith("\n") ? message : message + "\n"}`),
    });
    return {nlc, llama};
}

async function tokenizeMode(modelPath, opts) {
    const text = fs.readFileSync(opts.tokenize, "utf8");
    const {llama} = await loadLlama(opts.threads);
    const model = await llama.loadModel({modelPath, vocabOnly: true, gpuLayers: 0});
    const ids = Array.from(model.tokenize(text, opts.special));
    process.stdout.write(JSON.stringify(ids) + "\n");
    await model.dispose();
    await llama.dispose();
}

async function logitsMode(modelPath, tokensFile, outFile, opts) {
    const seqs = readSequences(tokensFile);
    const longest = Math.max(...seqs.map((s) => s.length));
    const {nlc, llama} = await loadLlama(opts.threads);
    const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true, checkTensors: true});
    const kvType = opts.kvType === "f32" ? nlc.GgmlType.F32 : nlc.GgmlType.F16;
    // Room beyond the longest sequence: a full context makes node-llama-cpp
    // shift it (drop the oldest tokens) before the last token, which changes
    // that token's logits; the check after each sequence catches any shift.
    const context = await model.createContext({
        contextSize: longest + 16,
        batchSize: longest,  // one decode per sequence
        sequences: 1,
        threads: opts.threads,
        flashAttention: false,
        experimentalKvCacheKeyType: kvType,
        experimentalKvCacheValueType: kvType,
    });
    const sequence = context.getSequence();
    let nVocab = -1;
    const perSequence = [];
    for (const [si, ids] of seqs.entries()) {
        await sequence.clearHistory();
        const input = ids.map((id) => [id, {generateNext: {logits: true, options: {temperature: 0}}}]);
        const results = await sequence.controlledEvaluate(input);
        const kept = sequence.contextTokens;
        if (kept.length !== ids.length || kept.some((t, i) => t !== ids[i])) {
            throw new Error(`sequence ${si}: the context holds ${kept.length} of its ${ids.length} tokens afterwards ` +
                "(context shift?): logits would not be those of the whole prefix");
        }
        const rows = [];
        for (let p = 0; p < ids.length; p++) {
            const map = results[p]?.next?.logits;
            if (map == null) throw new Error(`sequence ${si} position ${p}: llama.cpp returned no logits`);
            if (nVocab < 0) nVocab = map.size;
            if (map.size !== nVocab) throw new Error(`sequence ${si} position ${p}: ${map.size} logits, expected ${nVocab}`);
            const row = new Float32Array(nVocab);
            for (const [token, logit] of map) {
                if (token < 0 || token >= nVocab) throw new Error(`token id ${token} outside the vocabulary of ${nVocab}`);
                row[token] = logit;
            }
            rows.push(row);
        }
        perSequence.push(rows);
    }
    const meta = {
        n_vocab: nVocab,
        sequence_lengths: seqs.map((s) => s.length),
        kv_cache_type: opts.kvType,
        threads: opts.threads,
        model: path.resolve(modelPath),
    };
    if (outFile.endsWith(".f32")) {
        const fd = fs.openSync(outFile, "w");
        for (const rows of perSequence) {
            for (const row of rows) fs.writeSync(fd, Buffer.from(row.buffer, row.byteOffset, row.byteLength));
        }
        fs.closeSync(fd);
        fs.writeFileSync(outFile + ".json", JSON.stringify({...meta, layout: "[sequence][position][vocab] little-endian float32"}) + "\n");
    } else {
        // Float32 values widened to double print exactly (shortest round trip).
        const logits = perSequence.map((rows) => rows.map((row) => Array.from(row)));
        fs.writeFileSync(outFile, JSON.stringify({...meta, logits}) + "\n");
    }
    process.stdout.write(JSON.stringify({...meta, out: path.resolve(outFile)}) + "\n");
    await context.dispose();
    await model.dispose();
    await llama.dispose();
}

async function main() {
    const opts = parseArgs(process.argv.slice(2));
    const modelPath = opts.positional[0];
    if (!fs.existsSync(modelPath)) usage(`${modelPath}: no such file`);
    if (opts.tokenize != null) await tokenizeMode(modelPath, opts);
    else await logitsMode(modelPath, opts.positional[1], opts.positional[2], opts);
}

main().catch((e) => {
    process.stderr.write(`llama_logits: ${e?.stack ?? e}\n`);
    process.exit(1);
});
