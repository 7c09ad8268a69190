// The reference tokenization for the GGUF tokenizer test: a Hugging Face
// tokenizer.json (+ tokenizer_config.json) applied to a text file by
// @huggingface/tokenizers (a JS implementation of the `tokenizers` crate,
// pinned in package-lock.json), special tokens in the text matched, none
// added. Prints the ids as a JSON array.
//   node tokenize_hf.mjs TOKENIZER_DIR TEXT_FILE
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath, pathToFileURL} from "node:url";

const [dir, textFile] = process.argv.slice(2);
if (!dir || !textFile) {
    console.error("usage: node tokenize_hf.mjs TOKENIZER_DIR TEXT_FILE");
    process.exit(2);
}
// From the oracle install ($SLIMPACK_ORACLE_DIR, else beside this file), as
// llama_logits.mjs loads node-llama-cpp.
const base = process.env.SLIMPACK_ORACLE_DIR || path.dirname(fileURLToPath(import.meta.url));
const entry = path.join(base, "node_modules", "@huggingface", "tokenizers", "dist", "tokenizers.mjs");
if (!fs.existsSync(entry)) {
    console.error(`tokenize_hf.mjs: ${entry} not found: run \`npm ci --ignore-scripts ` +
                  `--omit=optional\` in ${base} (copy package.json and package-lock.json there first)`);
    process.exit(1);
}
const {Tokenizer} = await import(pathToFileURL(entry).href);
const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
const configPath = path.join(dir, "tokenizer_config.json");
const config = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
const tokenizer = new Tokenizer(json, config);
const text = fs.readFileSync(textFile, "utf8");
const {ids} = tokenizer.encode(text, {add_special_tokens: false});
process.stdout.write(JSON.stringify(ids.map(Number)) + "\n");
