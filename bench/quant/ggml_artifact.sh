#!/bin/sh
# `slimpack convert --quant <llama-quantize type>` into an artifact of ggml
# blocks, on the input llama.cpp's quantizer was measured on
# (../shared/docs/peer-llamacpp.md; bench/quant/peer_compare.sh makes it):
# wall seconds, input GB/s and peak RSS of the whole conversion (read,
# encode with ggml's reference quantizers, hash, write, fsync), and the
# artifact's bytes, to put beside llama-quantize's figures for the type.
#
# Usage: bench/quant/ggml_artifact.sh BUILD_RELEASE [THREADS] [WORK_DIR] [TYPES...]
set -eu
BUILD=${1:?usage: ggml_artifact.sh BUILD_RELEASE [THREADS] [WORK_DIR] [TYPES...]}
THREADS=${2:-2}
WORK=${3:-/tmp/slimpack-peer}
shift $(( $# < 3 ? $# : 3 ))
TYPES=${*:-q8_0 q4_0 q4_k_m}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC="$WORK/synth"
if [ ! -f "$SRC/model.safetensors" ]; then
  echo "== generating the synthetic checkpoint into $SRC (1.33 GB)" >&2
  /usr/bin/python3 "$ROOT/scripts/fixtures/make_peer_synthetic.py" "$SRC" >&2
fi
IN_BYTES=$(stat -c %s "$SRC/model.safetensors")
echo "| --quant | wall s | input GB/s | peak RSS MiB | artifact MB |"
echo "|---|---|---|---|---|"
for t in $TYPES; do
  out="$WORK/out-ggml-$t"
  /usr/bin/time -f "%e %M" -o "$WORK/time.txt" \
    "$BUILD/cli/slimpack" convert "$SRC" -o "$out" --quant "$t" --threads "$THREADS" --force >/dev/null
  read -r wall rss < "$WORK/time.txt"
  bytes=$(du -sb "$out" | cut -f1)
  awk -v t="$t" -v w="$wall" -v r="$rss" -v i="$IN_BYTES" -v b="$bytes" \
    'BEGIN { printf "| %s | %.2f | %.3f | %.0f | %.1f |\n", t, w, i / w / 1e9, r / 1024, b / 1e6 }'
  rm -rf "$out"
done
