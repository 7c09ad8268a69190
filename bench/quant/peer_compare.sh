#!/bin/sh
# slimpack's converter on the input llama.cpp's quantizer was measured on
# (../shared/docs/peer-llamacpp.md): a synthetic 7B-shape, 2-layer Llama
# checkpoint in F16 (16 matrices, 666,894,336 weights, 1 % outlier input
# columns), made by scripts/fixtures/make_peer_synthetic.py. For each scheme:
# wall seconds and peak RSS of the whole `slimpack convert` (read, quantize,
# hash, write, fsync), input GB/s, bits per weight over the 16 matrices
# (artifact bytes of the quantized tensors incl. scales / zero points), and
# the relative RMSE ||w - w_hat|| / ||w|| over all 16 matrices (from the
# per-tensor rel L2 that `convert -v` prints and the matrix norms the
# generator wrote). Wall time and RSS are of a run without -v, as a user
# runs it (a weight's error is measured only for -v to print: that costs
# a dequantization of every weight); the errors come from a second, -v run.
#
# Usage: bench/quant/peer_compare.sh BUILD_RELEASE [THREADS] [WORK_DIR]
set -eu
BUILD=${1:?usage: peer_compare.sh BUILD_RELEASE [THREADS] [WORK_DIR]}
THREADS=${2:-2}
WORK=${3:-/tmp/slimpack-peer}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SP="$BUILD/cli/slimpack"
SRC="$WORK/synth"
if [ ! -f "$SRC/model.safetensors" ]; then
  echo "== generating the synthetic checkpoint into $SRC (1.33 GB)" >&2
  /usr/bin/python3 "$ROOT/scripts/fixtures/make_peer_synthetic.py" "$SRC" >&2
fi
IN_BYTES=$(stat -c %s "$SRC/model.safetensors")
echo "| scheme | wall s | input GB/s | peak RSS MiB | bits/weight | rel. RMSE |"
echo "|---|---|---|---|---|---|"
run() {  # name, then convert flags
  name=$1; shift
  out="$WORK/out-$name"
  rm -rf "$out"
  if ! /usr/bin/time -f "%e %M" -o "$WORK/time.txt" \
      "$SP" convert "$SRC" -o "$out" --threads "$THREADS" "$@" 2> "$WORK/log.txt" > /dev/null; then
    echo "FAIL: $name: slimpack convert $*" >&2; tail -5 "$WORK/log.txt" >&2; exit 1
  fi
  rm -rf "$out"
  "$SP" convert "$SRC" -o "$out" --threads "$THREADS" -v "$@" 2> "$WORK/log.txt" > /dev/null
  /usr/bin/python3 - "$WORK/time.txt" "$WORK/log.txt" "$SRC/norms.json" "$out/manifest.json" \
      "$IN_BYTES" "$name" <<'PY'
import json, re, sys
time_txt, log, norms_path, manifest, in_bytes, name = sys.argv[1:]
wall, rss_kb = open(time_txt).read().split()[-2:]
norms = json.load(open(norms_path))
err = 0.0
seen = set()
for line in open(log):
    m = re.match(r"quantize: (\S+) .* rel L2 ([0-9.eE+-]+)", line)
    if m and m.group(1) in norms:
        err += float(m.group(2)) ** 2 * norms[m.group(1)]
        seen.add(m.group(1))
rec = [p for p in json.load(open(manifest))["producer"]["passes"]
       if p["name"] == "quantize-weights"][0]["stats"]
qbytes = sum(t["bytes_after"] for t in rec["tensors"] if t["tensor"] in norms)
weights = 666894336
kept = sorted(set(norms) - seen)
note = f" ({len(kept)} matrices not quantized)" if kept else ""
print(f"| {name}{note} | {float(wall):.2f} | {int(in_bytes) / float(wall) / 1e9:.2f} | "
      f"{int(rss_kb) / 1024:,.0f} | {8 * qbytes / weights:.3f} | "
      f"{(err / sum(norms[n] for n in seen)) ** 0.5:.4f} |")
PY
  rm -rf "$out"
}
run int8 --quant int8
run int8-g32 --quant int8 --group 32
run int4-g32 --quant int4 --group 32
run int4-g32-asym --quant int4 --group 32 --asym
run int4-g128 --quant int4 --group 128
run int4-g32-rtn-mse --quant int4 --group 32 --algo rtn-mse
run int4-g32-f32scale --quant int4-g32-f32scale
