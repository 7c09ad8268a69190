#!/bin/sh
# Calibration memory against model depth (issue 17: GPTQ/AWQ keep one
# decoder layer's statistics at a time). Makes two F16 Llama checkpoints of
# the same width and vocabulary, 4 and 8 layers (1024 wide, intermediate
# 2816, 8 heads, 32,000 tokens: 117 M and 168 M weights, by
# scripts/fixtures/make_peer_synthetic.py), and 16 random 256-token
# windows, then times each calibration path on both with
# `/usr/bin/time -f '%e %M'`:
#   calibrate --imatrix | --hessians | --awq-inputs   (the float model walked)
#   convert --quant int4 --group 128 --algo gptq --calib-samples 2
# A path that holds one layer at a time peaks at about the same RSS at
# both depths; one that holds the model grows by 4 layers' widened
# weights (~200 MB here). BINARY (default BUILD/cli/slimpack) may be any
# slimpack, e.g. an older build for a side by side.
#
# Usage: bench/quant/calibration_depth.sh BUILD_RELEASE [THREADS] [WORK_DIR] [BINARY]
set -eu
BUILD=${1:?usage: calibration_depth.sh BUILD_RELEASE [THREADS] [WORK_DIR] [BINARY]}
THREADS=${2:-2}
WORK=${3:-/tmp/slimpack-calib-depth}
SP=${4:-$BUILD/cli/slimpack}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$WORK"
for layers in 4 8; do
  if [ ! -f "$WORK/l$layers/model.safetensors" ]; then
    echo "== generating a $layers-layer checkpoint into $WORK/l$layers" >&2
    /usr/bin/python3 "$ROOT/scripts/fixtures/make_peer_synthetic.py" "$WORK/l$layers" \
      --layers "$layers" --hidden 1024 --intermediate 2816 --heads 8 >&2
  fi
done
if [ ! -f "$WORK/windows.npy" ]; then
  /usr/bin/python3 -c "
import numpy as np, sys
np.save(sys.argv[1], np.random.default_rng(1).integers(0, 32000, size=(16, 256)).astype(np.int64))
" "$WORK/windows.npy"
fi
measure() {  # label layers, then the slimpack arguments
  label=$1; layers=$2; shift 2
  rm -rf "$WORK/out"
  if ! /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$SP" "$@" > /dev/null 2> "$WORK/log.txt"; then
    echo "FAIL: $label ($layers layers): slimpack $*" >&2; tail -5 "$WORK/log.txt" >&2; exit 1
  fi
  set -- $(cat "$WORK/time.txt")
  eval "t_$layers=$1; m_$layers=$(($2 / 1024))"
}
echo "| path | 4 layers: s, peak MiB | 8 layers: s, peak MiB | growth MiB |"
echo "|---|---|---|---|"
for path in imatrix hessians awq-inputs gptq; do
  for layers in 4 8; do
    src="$WORK/l$layers"
    if [ "$path" = gptq ]; then
      measure "$path" "$layers" convert "$src" -o "$WORK/out" --quant int4 --group 128 --algo gptq \
        --calib "$WORK/windows.npy" --calib-samples 2 --threads "$THREADS"
    else
      measure "$path" "$layers" calibrate "$src" --data "$WORK/windows.npy" --"$path" \
        -o "$WORK/out" --threads "$THREADS"
    fi
  done
  echo "| $path | $t_4, $m_4 | $t_8, $m_8 | $((m_8 - m_4)) |"
done
rm -rf "$WORK/out"
