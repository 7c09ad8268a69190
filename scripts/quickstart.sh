#!/usr/bin/env bash
# The main job on the bundled examples: install what is missing, build, then
# for each example: inspect it, convert it to a sharded artifact (FP, then
# compressed: the LM to INT4 GPTQ, the CNN to static W8A8), verify the
# artifacts, load one back through the standalone loader, evaluate, and write
# the FP32-vs-compressed accuracy reports (JSON, Markdown, HTML). Outputs land
# in out/.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/install_deps.sh"
"$ROOT/scripts/build.sh" "$ROOT/build"
SLIMPACK="$ROOT/build/cli/slimpack"
LOADER_EXAMPLE="$ROOT/build/formats/shard/loader/loader_example_cpp"
OUT="$ROOT/out"
mkdir -p "$OUT"
step() { printf '\n== %s\n' "$*"; }

step "inspect examples/digits-cnn/model.onnx"
"$SLIMPACK" inspect "$ROOT/examples/digits-cnn/model.onnx"
step "inspect examples/tiny-llama"
"$SLIMPACK" inspect "$ROOT/examples/tiny-llama"

step "convert digits-cnn (f32) and tiny-llama (f16, 1 MiB shards, one decoder layer per shard)"
"$SLIMPACK" convert "$ROOT/examples/digits-cnn/model.onnx" -o "$OUT/digits-cnn" --force
"$SLIMPACK" convert "$ROOT/examples/tiny-llama" -o "$OUT/tiny-llama" --dtype f16 \
  --shard-size 1M --force

step "verify both artifacts (manifest, sizes, SHA-256 of every file)"
"$SLIMPACK" verify "$OUT/digits-cnn"
"$SLIMPACK" verify "$OUT/tiny-llama"
"$SLIMPACK" inspect "$OUT/tiny-llama"

step "load back through the standalone loader (examples/loader/print_tensors.cc)"
# (into a file first: `| head` would end the loader with SIGPIPE under pipefail)
"$LOADER_EXAMPLE" "$OUT/tiny-llama" --verify > "$OUT/tiny-llama.loader.txt"
head -n 12 "$OUT/tiny-llama.loader.txt"

step "report: FP32 perplexity of tiny-llama on its held-out eval set (PyTorch: 3.104962)"
"$SLIMPACK" eval "$ROOT/examples/tiny-llama" --tokens "$ROOT/examples/tiny-llama/eval_tokens.npy" \
  --window 64 --threads 2 --json | tee "$OUT/tiny-llama.eval.json"

step "compress tiny-llama: INT4 group 128, GPTQ on 64 calibration windows from the training split"
"$SLIMPACK" convert "$ROOT/examples/tiny-llama" -o "$OUT/tiny-llama-int4" --quant int4 --group 128 \
  --algo gptq --calib "$ROOT/examples/tiny-llama/calib_tokens.npy" --threads 2 --force
"$SLIMPACK" verify "$OUT/tiny-llama-int4"
"$SLIMPACK" inspect "$OUT/tiny-llama-int4" | tail -n 8
"$SLIMPACK" eval "$OUT/tiny-llama-int4" --tokens "$ROOT/examples/tiny-llama/eval_tokens.npy" \
  --window 64 --threads 2 --json | tee "$OUT/tiny-llama-int4.eval.json"

step "compress digits-cnn: static W8A8 (fusion passes, then uint8 activations from 128 training images)"
"$SLIMPACK" convert "$ROOT/examples/digits-cnn/model.onnx" -o "$OUT/digits-cnn-w8a8" --quant w8a8 \
  --calib "$ROOT/examples/digits-cnn/calib.npz" --force -v 2>&1 | grep -E '^(passes|w8a8|quantize)'
"$SLIMPACK" verify "$OUT/digits-cnn-w8a8"

step "accuracy report: tiny-llama FP32 vs INT4 GPTQ (KLD, top-1, perplexity, per layer)"
"$SLIMPACK" report --reference "$ROOT/examples/tiny-llama" --candidate "$OUT/tiny-llama-int4" \
  --data "$ROOT/examples/tiny-llama/eval_tokens.npy" --max-batch 8 -o "$OUT/report-tiny-llama" \
  --gate 'e2e.kld<=0.05,top1>=0.85'
sed -n 1,25p "$OUT/report-tiny-llama/report.md"

step "accuracy report: digits-cnn FP32 vs W8A8 (top-1, accuracy delta, per layer)"
"$SLIMPACK" report --reference "$ROOT/examples/digits-cnn/model.onnx" --candidate "$OUT/digits-cnn-w8a8" \
  --data "$ROOT/examples/digits-cnn/eval.safetensors" --input-map input=inputs -o "$OUT/report-digits-cnn" \
  --gate 'top1>=0.98'
sed -n 1,25p "$OUT/report-digits-cnn/report.md"

step "report: calibration ranges of digits-cnn on its eval set (entropy)"
"$SLIMPACK" calibrate "$ROOT/examples/digits-cnn/model.onnx" \
  --data "$ROOT/examples/digits-cnn/eval.safetensors" --input-map input=inputs \
  --method entropy -o "$OUT/digits-cnn.calib.json"

"$SLIMPACK" inspect --json "$ROOT/examples/tiny-llama" > "$OUT/tiny-llama.inspect.json"
"$SLIMPACK" inspect --json "$ROOT/examples/digits-cnn/model.onnx" > "$OUT/digits-cnn.inspect.json"
printf '\nquickstart: OK (artifacts and reports in out/; open out/report-*/report.html)\n'
