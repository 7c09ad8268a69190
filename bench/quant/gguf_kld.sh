#!/bin/sh
# GGUF exports of the bundled tiny-llama at llama.cpp's types, ggml's
# imatrix-weighted encoder (what llama-quantize --imatrix writes: for q4_k_m
# and q5_k_m byte for byte, tests/gguf/imatrix_reference_test.cc) against
# GPTQ on the same ggml grids (--algo gptq), both from the same calibration
# windows. Each file is scored by `slimpack report` against the FP32
# checkpoint on the eval windows: mean KLD (nats/token), top-1 agreement,
# perplexity. Same types tensor for tensor, so the same file size.
#
# Usage: bench/quant/gguf_kld.sh BUILD_DIR [OUT_DIR] [PRESETS...]
set -eu
BUILD=${1:?usage: gguf_kld.sh BUILD_DIR [OUT_DIR] [PRESETS...]}
OUT=${2:-$(mktemp -d)}
[ $# -ge 2 ] && shift 2 || shift $#
PRESETS=${*:-q4_0 q4_1 q5_0 q4_k_m q5_k_m q8_0}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
SP="$BUILD/cli/slimpack"
EX=examples/tiny-llama
CALIB=$EX/calib_tokens.npy
TOK=$EX/eval_tokens.npy
score() {  # GGUF -> "kld top1 ppl"
  "$SP" report --reference "$EX" --candidate "$1" --data "$TOK" -o "$OUT/report" --force --json |
    /usr/bin/python3 -c '
import json, sys
lm = json.load(sys.stdin)["end_to_end"]["lm"]
print("%.5f %.4f %.4f" % (lm["mean_kld"], lm["top1_agreement"], lm["ppl_candidate"]))'
}
echo "| preset | bytes | imatrix KLD | gptq KLD | gptq / imatrix | imatrix top-1 | gptq top-1 | imatrix ppl | gptq ppl |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in $PRESETS; do
  "$SP" convert "$EX" -o "$OUT/$p-imatrix.gguf" --format gguf --quant "$p" --algo imatrix \
    --calib "$CALIB" --force > /dev/null 2>&1
  "$SP" convert "$EX" -o "$OUT/$p-gptq.gguf" --format gguf --quant "$p" --algo gptq \
    --calib "$CALIB" --force > /dev/null 2>&1
  set -- $(score "$OUT/$p-imatrix.gguf") $(score "$OUT/$p-gptq.gguf")
  bytes=$(stat -c %s "$OUT/$p-gptq.gguf")
  ratio=$(/usr/bin/python3 -c "print('%.2f' % ($4 / $1))")
  echo "| $p | $bytes | $1 | $4 | $ratio | $2 | $5 | $3 | $6 |"
done
