#!/bin/sh
# Perplexity of the bundled tiny Llama (examples/tiny-llama) after each weight
# quantization scheme / algorithm, through the real path: slimpack convert ->
# artifact -> slimpack eval (all 256 eval windows of 64 tokens). Prints a
# Markdown table: scheme, algorithm, artifact bytes of quantized tensors,
# bits per weight over them, perplexity and its change vs FP32.
#
# Usage: bench/quant/lm_quality.sh BUILD_DIR [OUT_DIR]
set -eu
BUILD=${1:?usage: lm_quality.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
SP="$BUILD/cli/slimpack"
EX=examples/tiny-llama
CALIB=$EX/calib_tokens.npy
TOK=$EX/eval_tokens.npy
ppl() { "$SP" eval "$1" --tokens "$TOK" --window 64 --json | /usr/bin/python3 -c 'import json,sys; print("%.6f" % json.load(sys.stdin)["perplexity"])'; }
stats() {  # quantized bytes and bits per weight from the manifest's producer record
  /usr/bin/python3 - "$1/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
rec = [p for p in m["producer"]["passes"] if p["name"] == "quantize-weights"][0]["stats"]
params = 792192 - 4 * 2 * 128 - 128  # weights of the planned tensors: all but the 9 norm vectors
print(rec["bytes_after"], "%.3f" % (8.0 * rec["bytes_after"] / params))
PY
}
FP=$(ppl $EX)
echo "| scheme | algorithm | quantized bytes | bits/weight | perplexity | vs FP32 |"
echo "|---|---|---|---|---|---|"
echo "| f32 | - | 3164160 | 32.000 | $FP | - |"
run() {  # name, then convert flags
  name=$1; shift
  "$SP" convert $EX -o "$OUT/$name" --force "$@" > /dev/null 2>&1
  p=$(ppl "$OUT/$name")
  set -- $(stats "$OUT/$name")
  echo "| $name | $p $1 $2" | /usr/bin/python3 -c "
import sys
name, rest = sys.stdin.read().split('|')[1:3]
p, b, bpw = rest.split()
scheme, algo = name.strip().split(':')
print(f'| {scheme} | {algo} | {b} | {bpw} | {p} | {100 * (float(p) / $FP - 1):+.2f} % |')"
}
run "int8:rtn" --quant int8
run "int4-g128:rtn" --quant int4 --group 128 --algo rtn
run "int4-g128:rtn-mse" --quant int4 --group 128 --algo rtn-mse
run "int4-g128:imatrix" --quant int4 --group 128 --algo imatrix --calib $CALIB
run "int4-g128:gptq" --quant int4 --group 128 --algo gptq --calib $CALIB
run "int4-g128:awq" --quant int4 --group 128 --algo awq --calib $CALIB
run "int4-g64:imatrix" --quant int4 --group 64 --algo imatrix --calib $CALIB
run "int4-g64:gptq" --quant int4 --group 64 --algo gptq --calib $CALIB
run "planner-4.5bpw:imatrix" --target-bpw 4.5 --algo imatrix --calib $CALIB
run "planner-4.5bpw:gptq" --target-bpw 4.5 --algo gptq --calib $CALIB
run "int4-g32:gptq" --quant int4 --group 32 --algo gptq --calib $CALIB
