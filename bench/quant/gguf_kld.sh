#!/bin/sh
# GGUF exports of the bundled tiny-llama at llama.cpp's types, ggml's
# imatrix-weighted encoder (what llama-quantize --imatrix writes: for q4_k_m
# and q5_k_m byte for byte, tests/gguf/imatrix_reference_test.cc) against
# GPTQ on the same ggml grids (--algo gptq), both from the same calibration
# windows. Each file is scored by `slimpack report` against the FP32
# checkpoint on the eval windows: mean KLD (nats/token), top-1 agreement,
# perplexity. Same types tensor for tensor, so the same file size.
#
# With A=rtn B=awq in the environment it compares ggml's plain encoder
# (no importance) with AWQ's scales searched on the same grids (--algo awq)
# instead; A and B take rtn, imatrix, gptq or awq.
#
# Usage: [A=imatrix B=gptq] [EX=MODEL_DIR CALIB=NPY TOK=NPY] bench/quant/gguf_kld.sh BUILD_DIR [OUT_DIR] [PRESETS...]
set -eu
A=${A:-imatrix}
B=${B:-gptq}
BUILD=${1:?usage: gguf_kld.sh BUILD_DIR [OUT_DIR] [PRESETS...]}
OUT=${2:-$(mktemp -d)}
[ $# -ge 2 ] && shift 2 || shift $#
PRESETS=${*:-q4_0 q4_1 q5_0 q4_k_m q5_k_m q8_0}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
SP="$BUILD/cli/slimpack"
# Another HF checkpoint directory (with tokenizer.json) and its token files
# may be given as EX, CALIB and TOK.
EX=${EX:-examples/tiny-llama}
CALIB=${CALIB:-$EX/calib_tokens.npy}
TOK=${TOK:-$EX/eval_tokens.npy}
score() {  # GGUF -> "kld top1 ppl"
  "$SP" report --reference "$EX" --candidate "$1" --data "$TOK" -o "$OUT/report" --force --json |
    /usr/bin/python3 -c '
import json, sys
lm = json.load(sys.stdin)["end_to_end"]["lm"]
print("%.5f %.4f %.4f" % (lm["mean_kld"], lm["top1_agreement"], lm["ppl_candidate"]))'
}
flags() {  # ALGO -> convert flags
  if [ "$1" = rtn ]; then echo ""; else echo "--algo $1 --calib $CALIB"; fi
}
echo "| preset | bytes | $A KLD | $B KLD | $B / $A | $A top-1 | $B top-1 | $A ppl | $B ppl |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in $PRESETS; do
  # shellcheck disable=SC2046
  "$SP" convert "$EX" -o "$OUT/$p-$A.gguf" --format gguf --quant "$p" $(flags "$A") \
    --force > /dev/null 2>&1
  # shellcheck disable=SC2046
  "$SP" convert "$EX" -o "$OUT/$p-$B.gguf" --format gguf --quant "$p" $(flags "$B") \
    --force > /dev/null 2>&1
  set -- $(score "$OUT/$p-$A.gguf") $(score "$OUT/$p-$B.gguf")
  bytes=$(stat -c %s "$OUT/$p-$B.gguf")
  ratio=$(/usr/bin/python3 -c "print('%.2f' % ($4 / $1))")
  echo "| $p | $bytes | $1 | $4 | $ratio | $2 | $5 | $3 | $6 |"
done
