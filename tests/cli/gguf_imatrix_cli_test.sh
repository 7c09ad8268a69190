#!/usr/bin/env bash
# convert --format gguf with an importance matrix, from the command line:
# llama.cpp's file (--imatrix) or ours (--algo imatrix --calib), the same
# bytes at any thread count, and every wrong combination or file refused
# with the flag, file or entry named and nothing written.
#   gguf_imatrix_cli_test.sh SLIMPACK ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
LLAMA="$ROOT/examples/tiny-llama"
DATA="$ROOT/tests/testdata/gguf/imatrix"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0

OUT="$TMP/out"
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"

# expect_says CODE "description" "message substring" -- ARGS...
expect_says() {
  local code="$1" what="$2" msg="$3"
  shift 3
  expect "$code" "$what" "$@"
  says "$msg" "$what"
}

expect_says 0 "llama.cpp's imatrix" "imatrix: 29 matrices from $DATA/tiny_llama.imatrix (62 chunks of calib.txt)" -- \
  convert "$LLAMA" -o "$TMP/a.gguf" --format gguf --quant q4_k_m --imatrix "$DATA/tiny_llama.imatrix"
expect_says 0 "our imatrix, 1 thread" "imatrix: 29 matrices from slimpack --calib (62 chunks of $DATA/windows.npy)" -- \
  convert "$LLAMA" -o "$TMP/b1.gguf" --format gguf --quant q4_k_m --algo imatrix \
  --calib "$DATA/windows.npy" --threads 1
expect_says 0 "our imatrix, 2 threads" "imatrix: 29 matrices" -- \
  convert "$LLAMA" -o "$TMP/b2.gguf" --format gguf --quant q4_k_m --algo imatrix \
  --calib "$DATA/windows.npy" --threads 2
cmp -s "$TMP/b1.gguf" "$TMP/b2.gguf" || { echo "FAIL: our imatrix GGUF differs between 1 and 2 threads"; fail=1; }
# --progress json reports the calibration layer by layer (quantize/float_walk.h):
# 8 runs of 8 windows for each of the 4 layers and lm_head, then the 5 groups.
"$SLIMPACK" convert "$LLAMA" -o "$TMP/b3.gguf" --format gguf --quant q4_k_m --algo imatrix \
  --calib "$DATA/windows.npy" --progress json 2>"$TMP/progress.err" >/dev/null
for context in "imatrix layer 0" "imatrix layer 3" "imatrix"; do
  grep '"stage":"calibration"' "$TMP/progress.err" | grep -c "\"context\":\"$context\"" | grep -qx 9 ||
    { echo "FAIL: expected 9 calibration events (0..8 of 8 runs) for $context:"; cat "$TMP/progress.err"; fail=1; }
done
grep '"stage":"imatrix"' "$TMP/progress.err" | grep -q '"done":5,.*"total":5' ||
  { echo "FAIL: expected the imatrix stage to count 5 of 5 layers:"; cat "$TMP/progress.err"; fail=1; }
cmp -s "$TMP/b1.gguf" "$TMP/b3.gguf" || { echo "FAIL: --progress json changed the GGUF"; fail=1; }
expect_says 0 "plain q4_k_m" "" -- convert "$LLAMA" -o "$TMP/c.gguf" --format gguf --quant q4_k_m
cmp -s "$TMP/a.gguf" "$TMP/c.gguf" && { echo "FAIL: the imatrix changed nothing"; fail=1; }
cmp -s "$TMP/b1.gguf" "$TMP/c.gguf" && { echo "FAIL: our imatrix changed nothing"; fail=1; }
# llama-quantize's keys record where the imatrix came from.
for key in quantize.imatrix.file quantize.imatrix.dataset quantize.imatrix.entries_count \
           quantize.imatrix.chunks_count; do
  grep -qaF "$key" "$TMP/a.gguf" || { echo "FAIL: $key missing from the GGUF"; fail=1; }
done

# Imatrix files made for another model, or not imatrix files at all.
/usr/bin/python3 - "$TMP" <<'PY' || { echo "FAIL: fixture generation"; exit 1; }
import struct, sys
tmp = sys.argv[1]
def write(path, entries):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", len(entries)))
        for name, n in entries:
            b = name.encode()
            f.write(struct.pack("<i", len(b)) + b + struct.pack("<ii", 1, n))
            f.write(struct.pack(f"<{n}f", *([1.0] * n)))
write(tmp + "/narrow.imatrix", [("blk.0.attn_q.weight", 64)])
write(tmp + "/deeper.imatrix", [("blk.9.attn_q.weight", 128)])
PY
expect_says 1 "entry of the wrong width" "narrow.imatrix: imatrix entry 'blk.0.attn_q.weight' has 64 values; the matrix has rows of 128" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --imatrix "$TMP/narrow.imatrix"
expect_says 1 "entry for a layer the model lacks" "deeper.imatrix: imatrix entry 'blk.9.attn_q.weight' names no matrix of" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --imatrix "$TMP/deeper.imatrix"
expect_says 1 "not an imatrix" "imatrix file: entry count" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --imatrix "$LLAMA/config.json"
expect_says 1 "missing imatrix" "nope.imatrix" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --imatrix "$TMP/nope.imatrix"

# Flags that do not go together.
expect_says 2 "rtn-mse into gguf" "--algo: 'rtn-mse' is not supported with --format gguf yet" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo rtn-mse
expect_says 2 "awq without data" "--algo: awq needs --calib FILES (token windows)" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo awq
expect_says 2 "awq with an imatrix" "--imatrix: --algo awq rescales the weights an imatrix was measured for" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo awq --calib "$DATA/windows.npy" \
  --imatrix "$DATA/tiny_llama.imatrix"
expect_says 2 "gptq without data" "--algo: gptq needs --calib FILES (token windows)" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo gptq
expect_says 2 "gptq with an imatrix" "--imatrix: --algo gptq computes its importance from --calib" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo gptq --calib "$DATA/windows.npy" \
  --imatrix "$DATA/tiny_llama.imatrix"
expect_says 2 "imatrix without data" "--algo: imatrix needs --calib FILES (token windows) or --imatrix FILE" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo imatrix
expect_says 2 "calib without imatrix" "--calib: with --format gguf, calibration data feeds --algo imatrix, gptq or awq only" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --calib "$DATA/windows.npy"
expect_says 2 "both sources" "give --imatrix (llama.cpp's file) or --calib (computed here), not both" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo imatrix \
  --imatrix "$DATA/tiny_llama.imatrix" --calib "$DATA/windows.npy"
expect_says 2 "rtn with an imatrix" "--imatrix: --algo rtn ignores importance" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --algo rtn --imatrix "$DATA/tiny_llama.imatrix"
expect_says 2 "calib-samples alone" "--calib-samples: needs --calib" -- \
  convert "$LLAMA" -o "$TMP/x.gguf" --format gguf --quant q4_k_m --calib-samples 4
[ -e "$TMP/x.gguf" ] && { echo "FAIL: output written on refusal"; fail=1; }
# llama-imatrix's own file also drives an artifact's --algo imatrix (issue 17;
# tests/cli/imatrix_stats_cli_test.sh checks it against --calib).
expect_says 0 "llama-imatrix's file into an artifact" "quantize: imatrix: 29 entries from" -- \
  convert "$LLAMA" -o "$TMP/x" --quant int4 --imatrix "$DATA/tiny_llama.imatrix" -v

if [ $fail -ne 0 ]; then echo "gguf imatrix: FAILED"; exit 1; fi
echo "gguf imatrix: all cases passed"
