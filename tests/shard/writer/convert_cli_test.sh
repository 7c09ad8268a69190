#!/usr/bin/env bash
# `slimpack convert` / `verify` / `inspect ARTIFACT` end to end: exit codes
# 0/1/2, messages naming file/key/value, --force, recipes, determinism
# across thread counts, corruption and a SIGKILLed conversion.
# usage: convert_cli_test.sh SLIMPACK MAKE_WRITER_FIXTURES
set -u
SLIMPACK="$1"
MAKE_FIXTURES="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
OUT="$TMP/out.txt"
fail=0
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../../testing/cli_lib.sh"
recipe_of() {
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["producer"]["recipe"], sort_keys=True))' "$1/manifest.json"
}

"$MAKE_FIXTURES" "$TMP/fx" || { echo "FAIL: fixtures"; exit 1; }
LLAMA="$TMP/fx/llama"
ONNX="$TMP/fx/model.onnx"
A="$TMP/a"

expect 0 "convert llama f16" -- convert "$LLAMA" -o "$A" --dtype f16 --shard-size 1M
shards=$(ls "$A" | grep -c '^shard-.*\.bin$')
[ "$shards" -ge 2 ] || bad "expected several shards under a 1M cap, got $shards"
says "$shards shards" "summary names the shard count"
expect 0 "verify" -- verify "$A"
says "OK" "verify says OK"
expect 0 "inspect artifact" -- inspect "$A"
says "f16" "inspect shows dtypes"
says "layouts: plain=" "inspect shows layout kinds"
says "shard-0000$((shards - 1)).bin" "inspect lists shards"
says "llama" "inspect shows the model kind"
expect 0 "inspect artifact json" -- inspect --json "$A"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["tensor_count"] > 30 and j["by_dtype"]["f16"]["tensors"] > 0, j' "$OUT" \
  || bad "inspect --json is not the artifact summary"

expect 1 "existing output without --force" -- convert "$LLAMA" -o "$A"
says "--force" "refusal mentions --force"
expect 0 "replace with --force" -- convert "$LLAMA" -o "$A" --force --dtype bf16
says "replaced" "summary says replaced"
[ "$(recipe_of "$A")" = '{"dtype": "bf16", "passes": [], "shard_size": 268435456}' ] \
  || bad "recorded recipe: $(recipe_of "$A")"
expect 0 "convert onnx" -- convert "$ONNX" -o "$TMP/o" --dtype bf16 --threads 1
expect 0 "verify onnx artifact" -- verify "$TMP/o"
expect 0 "inspect onnx artifact" -- inspect "$TMP/o"
says "model: onnx" "inspect shows an onnx model"

# Usage errors: 2.
expect 2 "convert without -o" -- convert "$LLAMA"
expect 2 "convert without input" -- convert -o "$TMP/b"
expect 2 "bad --dtype" -- convert "$LLAMA" -o "$TMP/b" --dtype f8
expect 2 "bad --shard-size suffix" -- convert "$LLAMA" -o "$TMP/b" --shard-size 12X
says "--shard-size" "shard size error names the flag"
says "12X" "shard size error names the value"
expect 2 "--shard-size below 1M" -- convert "$LLAMA" -o "$TMP/b" --shard-size 1000
says "1048576" "shard size error gives the minimum"
expect 2 "--threads 0" -- convert "$LLAMA" -o "$TMP/b" --threads 0
expect 2 "verify without path" -- verify

# Recipes.
printf '{"dtyp": "f16"}' > "$TMP/unknown.json"
printf '{"dtype": "f8"}' > "$TMP/baddtype.json"
printf '{"shard_size": "lots"}' > "$TMP/badsize.json"
printf '{"dtype": "bf16", "shard_size": "2M"}' > "$TMP/good.json"
expect 1 "recipe with unknown key" -- convert "$LLAMA" -o "$TMP/b" --recipe "$TMP/unknown.json"
says "unknown.json" "names the recipe file"
says "unknown key 'dtyp'" "names the key"
expect 1 "recipe with bad dtype" -- convert "$LLAMA" -o "$TMP/b" --recipe "$TMP/baddtype.json"
says "'dtype'" "names the key"
says '"f8"' "names the value"
expect 1 "recipe with bad shard size" -- convert "$LLAMA" -o "$TMP/b" --recipe "$TMP/badsize.json"
says "'shard_size'" "names the key"
says '"lots"' "names the value"
expect 1 "missing recipe" -- convert "$LLAMA" -o "$TMP/b" --recipe "$TMP/nope.json"
says "nope.json" "names the missing recipe"
expect 0 "good recipe" -- convert "$LLAMA" -o "$TMP/r" --recipe "$TMP/good.json"
[ "$(recipe_of "$TMP/r")" = '{"dtype": "bf16", "passes": [], "shard_size": 2097152}' ] \
  || bad "recipe not recorded: $(recipe_of "$TMP/r")"
expect 0 "flags override the recipe" -- convert "$LLAMA" -o "$TMP/r2" --recipe "$TMP/good.json" --dtype f16
[ "$(recipe_of "$TMP/r2")" = '{"dtype": "f16", "passes": [], "shard_size": 2097152}' ] \
  || bad "flag did not override: $(recipe_of "$TMP/r2")"
[ ! -e "$TMP/b" ] || bad "a failed conversion left $TMP/b"

# Input and output errors: 1.
expect 1 "missing input" -- convert "$TMP/nothing.onnx" -o "$TMP/b"
says "nothing.onnx" "names the missing input"
expect 1 "missing output parent" -- convert "$LLAMA" -o "$TMP/no/such/dir"
says "does not exist" "explains the missing parent"

# Determinism across thread counts.
expect 0 "1 thread" -- convert "$LLAMA" -o "$TMP/t1" --dtype f16 --shard-size 1M --threads 1
expect 0 "4 threads" -- convert "$LLAMA" -o "$TMP/t4" --dtype f16 --shard-size 1M --threads 4
(cd "$TMP/t1" && sha256sum ./*) > "$TMP/t1.sums"
(cd "$TMP/t4" && sha256sum ./*) > "$TMP/t4.sums"
diff "$TMP/t1.sums" "$TMP/t4.sums" >/dev/null || bad "artifacts differ between 1 and 4 threads"
[ "$(wc -l < "$TMP/t1.sums")" -ge 5 ] || bad "expected shards, manifest and carried files"

# -v without a terminal prints one line per file.
"$SLIMPACK" convert "$LLAMA" -o "$TMP/v" -v --shard-size 1M 2>"$OUT" >/dev/null
grep -q "convert: wrote shard-00000.bin" "$OUT" || { bad "-v prints no per-file lines"; cat "$OUT"; }
"$SLIMPACK" convert "$LLAMA" -o "$TMP/q" 2>"$OUT" >/dev/null
[ ! -s "$OUT" ] || { bad "without -v and a terminal, stderr should be quiet"; cat "$OUT"; }

# Corruption is caught by verify, naming the file.
cp -r "$TMP/t1" "$TMP/c"
python3 - "$TMP/c/shard-00001.bin" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[20000] ^= 0x40
open(p, 'wb').write(b)
PY
expect 1 "verify corrupted shard" -- verify "$TMP/c"
says "shard-00001.bin" "names the corrupted shard"
says "SHA-256" "says it is a checksum mismatch"
cp -r "$TMP/t1" "$TMP/d"
truncate -s -64 "$TMP/d/shard-00000.bin"
expect 1 "verify truncated shard" -- verify "$TMP/d"
says "shard-00000.bin" "names the truncated shard"
expect 1 "verify a non-artifact" -- verify "$LLAMA"

# A conversion killed just before the swap leaves only a staging directory,
# which verify rejects; the next run cleans it up.
SLIMPACK_FAULT_INJECT=before-swap "$SLIMPACK" convert "$LLAMA" -o "$TMP/k" >/dev/null 2>&1
code=$?
[ $code -eq 137 ] || bad "fault injection: expected SIGKILL (137), got $code"
[ ! -e "$TMP/k" ] || bad "killed conversion left an output"
staging=$(ls -d "$TMP"/k.*.tmp 2>/dev/null | head -1)
if [ -z "$staging" ]; then
  bad "no staging directory after the kill"
else
  expect 1 "verify leftover staging" -- verify "$staging"
  says "staging directory" "explains the staging directory"
fi
expect 0 "convert after a killed run" -- convert "$LLAMA" -o "$TMP/k"
[ -z "$(ls -d "$TMP"/k.*.tmp 2>/dev/null)" ] || bad "stale staging not removed"

# --help shows an example.
for sub in convert verify; do
  "$SLIMPACK" "$sub" --help | grep -q "Example" || bad "'$sub --help' shows no example"
done

if [ $fail -ne 0 ]; then echo "convert cli: FAILED"; exit 1; fi
echo "convert cli: all passed"
