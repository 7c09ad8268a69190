#!/usr/bin/env bash
# ONNX Runtime on slimpack's ONNX exports of the bundled examples: file size,
# latency of session.run (ort_bench.mjs: CPU EP, graph optimisation 'all',
# warm-up then median of ITERS runs) and, for the digits CNN, top-1 accuracy
# on the 450 held-out images in ORT and in slimpack (same artifact), for
#   FP32 (convert --format onnx), W8A8 QDQ and W8A8 QOperator
#   (convert --quant w8a8 --calib, then --onnx-quant-format qdq|qoperator);
# the tiny-llama in FP32, weight-only int8 (DequantizeLinear) and int4 g32
# (MatMulNBits, --onnx-profile ort): its full-sequence graph on 4 x 32
# tokens, with top-1 agreement of ORT's logits with slimpack's (a checkpoint
# has no graph for W8A8).
# The conversions may use any build (a sanitized one is fine: only ORT is
# timed). ORT comes from $ORT_ORACLE (a directory holding
# node_modules/onnxruntime-node, e.g. BUILD/ort-oracle that scripts/test.sh
# installs), else bench/ort (npm ci --ignore-scripts there).
# usage: [ORT_ORACLE=DIR] bench/ort/onnx_export_bench.sh SLIMPACK [THREADS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
slimpack=${1:?usage: $0 SLIMPACK [THREADS]}
threads=${2:-1}
iters=${ITERS:-50}
py=/usr/bin/python3
oracle=${ORT_ORACLE:-$root/bench/ort}
if [[ ! -d $oracle/node_modules/onnxruntime-node ]]; then
  echo "== installing onnxruntime-node ($oracle, npm ci --ignore-scripts)"
  (cd "$oracle" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
fi
oracle=$(cd "$oracle" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The ORT scripts resolve onnxruntime-node beside themselves.
mkdir "$work/ort"
cp "$root"/bench/ort/ort_run.mjs "$root"/bench/ort/ort_bench.mjs "$root"/bench/ort/common.mjs \
  "$root"/bench/ort/npy.mjs "$work/ort/"
ln -s "$oracle/node_modules" "$work/ort/node_modules"
"$py" "$root/tests/export/make_ort_inputs.py" "$root" "$work"
digits=$root/examples/digits-cnn
q() { "$slimpack" "$@" >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }; }
q convert "$digits/model.onnx" -o "$work/fp32"
q convert "$digits/model.onnx" -o "$work/w8a8" --quant w8a8 --calib "$digits/calib.npz"
q convert "$work/fp32" -o "$work/digits-fp32.onnx" --format onnx
q convert "$work/w8a8" -o "$work/digits-qdq.onnx" --format onnx --onnx-quant-format qdq
q convert "$work/w8a8" -o "$work/digits-qoperator.onnx" --format onnx --onnx-quant-format qoperator
tiny=$root/examples/tiny-llama
q convert "$tiny" -o "$work/tiny-fp32"
q convert "$tiny" -o "$work/tiny-int8" --quant int8
q convert "$tiny" -o "$work/tiny-int4" --quant int4 --group 32
q convert "$work/tiny-fp32" -o "$work/tiny-fp32.onnx" --format onnx
q convert "$work/tiny-int8" -o "$work/tiny-int8.onnx" --format onnx
q convert "$work/tiny-int4" -o "$work/tiny-int4.onnx" --format onnx --onnx-profile ort

accuracy() {  # accuracy OURS.npz ORT_DIR -> "slimpack ORT"
  "$py" - "$1" "$2/logits.npy" "$work/digits_labels.npy" <<'PYEOF'
import sys, numpy as np
ours = np.load(sys.argv[1])["logits"]; ort = np.load(sys.argv[2]); y = np.load(sys.argv[3])
print(f"{np.mean(ours.argmax(1) == y):.4f} {np.mean(ort.argmax(1) == y):.4f}")
PYEOF
}
bench() {  # bench MODEL INPUTS -> median ms
  node "$work/ort/ort_bench.mjs" "$1" --inputs "$2" --threads "$threads" --warmup 5 \
    --iters "$iters" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])'
}
ort_version=$(node -p "require('$oracle/node_modules/onnxruntime-node/package.json').version")
echo "onnxruntime-node $ort_version, $threads thread(s), median of $iters runs"
printf '%-28s %10s %12s %14s %10s\n' model bytes "ORT ms" "top-1 slimpack" "top-1 ORT"
for kind in fp32 qdq qoperator; do
  m=$work/digits-$kind.onnx
  art=$work/fp32; [[ $kind == fp32 ]] || art=$work/w8a8
  q run "$art" --inputs "$work/digits_eval.npz" -o "$work/ours.npz" --force
  node "$work/ort/ort_run.mjs" "$m" --inputs "$work/digits_eval.npz" --out-dir "$work/ort-$kind" >/dev/null
  read -r acc_ours acc_ort < <(accuracy "$work/ours.npz" "$work/ort-$kind")
  printf '%-28s %10d %12s %14s %10s\n' "digits-cnn $kind (b=450)" "$(stat -c %s "$m")" \
    "$(bench "$m" "$work/digits_eval.npz")" "$acc_ours" "$acc_ort"
done
for kind in fp32 int8 int4; do
  m=$work/tiny-$kind.onnx
  q run "$work/tiny-$kind" --inputs "$work/llama_tokens.npz" -o "$work/ours.npz" --force
  node "$work/ort/ort_run.mjs" "$m" --inputs "$work/llama_tokens.npz" --out-dir "$work/ort-tiny-$kind" >/dev/null
  agree=$("$py" - "$work/ours.npz" "$work/ort-tiny-$kind/logits.npy" <<'PYEOF'
import sys, numpy as np
a = np.load(sys.argv[1])["logits"].argmax(-1); b = np.load(sys.argv[2]).argmax(-1)
print(f"{np.mean(a == b):.4f}")
PYEOF
)
  printf '%-28s %10d %12s %25s\n' "tiny-llama $kind (4x32)" "$(stat -c %s "$m")" \
    "$(bench "$m" "$work/llama_tokens.npz")" "top-1 = slimpack's: $agree"
done
