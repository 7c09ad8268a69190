#!/usr/bin/env bash
# Calibration peak RSS must not grow with the sample count: calibrates the
# digits CNN (per-channel, X^T X on) on 16..512 one-sample .npz files and
# fails if the 512-sample peak exceeds the 16-sample peak by more than
# MAX_GROWTH_KB (default 2048).
# usage: bench/calibration_rss.sh BUILD_DIR [METHOD] [MAX_GROWTH_KB]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [METHOD] [MAX_GROWTH_KB]}
method=${2:-entropy}
max_growth=${3:-2048}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/calibration_rss
[[ -x $bin ]] || { echo "missing $bin: make -C $build calibration_rss" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/slimpack_calib_rss.XXXXXX")
trap 'rm -rf "$work"' EXIT
first=""
for n in 16 64 256 512; do
  mkdir "$work/$n"
  "$bin" make "$work/$n" "$n"
  line=$("$bin" run "$root/examples/digits-cnn/model.onnx" "$work/$n" "$method")
  echo "$line"
  rss=$(sed -n 's/.*peak_rss_kb=\([0-9]*\).*/\1/p' <<<"$line")
  [[ -n $first ]] || first=$rss
  last=$rss
done
growth=$((last - first))
echo "peak RSS growth 16 -> 512 samples: ${growth} kB (limit ${max_growth} kB)"
(( growth <= max_growth ))
