#!/usr/bin/env bash
# Whole-model GPTQ convert of the speed issue's model: a 3 M-parameter
# Llama (4 layers, hidden 256, intermediate 672, 4 heads, vocab 512; F16
# weights N(0, 0.02) with 1 % outlier columns, made by
# scripts/fixtures/make_peer_synthetic.py in a scratch directory, never
# committed) calibrated on WINDOWS random windows of TOKENS token ids,
# int4 GPTQ. Prints the wall time, peak RSS and the seconds of each stage
# (calibration forward passes, GPTQ, write) from `--progress json`.
#
#   bench/quant/gptq_convert.sh BUILD [THREADS] [WINDOWS] [TOKENS]
#   bench/quant/gptq_convert.sh build 2 128 256    # the issue's figure
set -euo pipefail
BUILD="${1:?usage: gptq_convert.sh BUILD [THREADS] [WINDOWS] [TOKENS]}"
THREADS="${2:-2}"
WINDOWS="${3:-128}"
TOKENS="${4:-256}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SLIMPACK="$(cd "$BUILD" && pwd)/cli/slimpack"
[ -x "$SLIMPACK" ] || { echo "gptq_convert.sh: no $SLIMPACK (build first)" >&2; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/slimpack-gptq-bench.XXXXXX")"
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

/usr/bin/python3 "$ROOT/scripts/fixtures/make_peer_synthetic.py" "$WORK/model" 7 \
  --layers 4 --hidden 256 --intermediate 672 --heads 4 --vocab 512 >/dev/null
/usr/bin/python3 - "$WORK/calib.npy" "$WINDOWS" "$TOKENS" <<'EOF'
import sys
import numpy as np
rng = np.random.default_rng(3)
np.save(sys.argv[1], rng.integers(0, 512, size=(int(sys.argv[2]), int(sys.argv[3])), dtype=np.int64))
EOF

/usr/bin/time -f "%e %M" -o "$WORK/time" \
  "$SLIMPACK" convert "$WORK/model" -o "$WORK/out" --quant int4 --algo gptq \
  --calib "$WORK/calib.npy" --calib-samples "$WINDOWS" --threads "$THREADS" \
  --progress json >"$WORK/progress.jsonl" 2>&1
read -r wall rss_kb <"$WORK/time"
echo "GPTQ convert, 4x256 Llama (672 intermediate), $WINDOWS x $TOKENS tokens, $THREADS threads:" \
  "${wall} s, peak RSS $((rss_kb / 1024)) MiB"
/usr/bin/python3 - "$WORK/progress.jsonl" <<'EOF'
import json, sys
last = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        e = json.loads(line)
        last[e["stage"]] = e
for stage, e in last.items():
    print(f"  {stage}: {e.get('elapsed_s', 0):.2f} s ({e.get('done')}/{e.get('total')})")
EOF
