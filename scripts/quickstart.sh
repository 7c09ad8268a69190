#!/usr/bin/env bash
# The main job on the bundled examples: install what is missing, build, then
# for each example: inspect it, convert it to a sharded artifact, verify the
# artifact, load it back through the standalone loader, and report (FP32
# perplexity of the tiny LM against PyTorch's figure; calibration ranges of
# the CNN). Outputs land in out/.
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
"$LOADER_EXAMPLE" "$OUT/tiny-llama" --verify | head -n 12

step "report: FP32 perplexity of tiny-llama on its held-out eval set (PyTorch: 3.104962)"
"$SLIMPACK" eval "$ROOT/examples/tiny-llama" --tokens "$ROOT/examples/tiny-llama/eval_tokens.npy" \
  --window 64 --threads 2 --json | tee "$OUT/tiny-llama.eval.json"

step "report: calibration ranges of digits-cnn on its eval set (entropy)"
"$SLIMPACK" calibrate "$ROOT/examples/digits-cnn/model.onnx" \
  --data "$ROOT/examples/digits-cnn/eval.safetensors" --input-map input=inputs \
  --method entropy -o "$OUT/digits-cnn.calib.json"

"$SLIMPACK" inspect --json "$ROOT/examples/tiny-llama" > "$OUT/tiny-llama.inspect.json"
"$SLIMPACK" inspect --json "$ROOT/examples/digits-cnn/model.onnx" > "$OUT/digits-cnn.inspect.json"
printf '\nquickstart: OK (artifacts and reports in out/)\n'
