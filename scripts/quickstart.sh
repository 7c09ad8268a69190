#!/usr/bin/env bash
# The main job on the bundled examples: install what is missing, build, then
# inspect the bundled trained models (later stages extend this to convert,
# load back and report).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/install_deps.sh"
"$ROOT/scripts/build.sh" "$ROOT/build"
SLIMPACK="$ROOT/build/cli/slimpack"
OUT="$ROOT/out"
mkdir -p "$OUT"
echo "== slimpack inspect examples/digits-cnn/model.onnx"
"$SLIMPACK" inspect "$ROOT/examples/digits-cnn/model.onnx"
echo
echo "== slimpack inspect examples/tiny-llama"
"$SLIMPACK" inspect "$ROOT/examples/tiny-llama"
"$SLIMPACK" inspect --json "$ROOT/examples/tiny-llama" > "$OUT/tiny-llama.inspect.json"
"$SLIMPACK" inspect --json "$ROOT/examples/digits-cnn/model.onnx" > "$OUT/digits-cnn.inspect.json"
echo
echo "quickstart: OK (JSON summaries in out/)"
