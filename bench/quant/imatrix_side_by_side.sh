#!/usr/bin/env bash
# llama-imatrix and `slimpack calibrate --imatrix` doing the same job side by
# side, interleaved, on this machine: the importance matrix (mean x^2 of
# every linear layer's input columns) of the speed issue's model, a 3 M-
# parameter Llama (4 layers, hidden 256, intermediate 672, 4 heads; random
# F16 weights from scripts/fixtures/make_peer_synthetic.py, vocabulary the
# bundled tiny-llama's 256 byte tokens, so text bytes are token ids), over
# WINDOWS windows of TOKENS tokens (printable ASCII, no BOS: llama-imatrix
# would overwrite each chunk's first token with it). Prints both whole
# processes' wall seconds and peak RSS per run, tokens per second of the
# medians, and how far the two matrices differ.
#
# llama-imatrix is built from fetched llama.cpp source outside this
# repository (cmake -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF
# -DGGML_OPENMP=OFF; ninja llama-imatrix); nothing of llama.cpp is part of
# slimpack. Everything is made in a scratch directory and removed.
#
#   bench/quant/imatrix_side_by_side.sh BUILD_RELEASE LLAMA_IMATRIX [THREADS] [WINDOWS] [TOKENS] [RUNS]
#   bench/quant/imatrix_side_by_side.sh build /scratch/llama.cpp/build/bin/llama-imatrix 2 128 256 3
set -euo pipefail
BUILD=${1:?usage: imatrix_side_by_side.sh BUILD_RELEASE LLAMA_IMATRIX [THREADS] [WINDOWS] [TOKENS] [RUNS]}
LI=${2:?the llama-imatrix binary}
THREADS=${3:-2}
WINDOWS=${4:-128}
TOKENS=${5:-256}
RUNS=${6:-3}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SLIMPACK="$(cd "$BUILD" && pwd)/cli/slimpack"
[ -x "$SLIMPACK" ] || { echo "imatrix_side_by_side.sh: no $SLIMPACK (build first)" >&2; exit 1; }
[ -x "$LI" ] || { echo "imatrix_side_by_side.sh: no llama-imatrix at $LI" >&2; exit 1; }
# llama.cpp rounds its context up to a multiple of 32 (its chunks would then
# not be our windows) and wants at least two chunks.
(( TOKENS % 32 == 0 && TOKENS > 0 )) || { echo "imatrix_side_by_side.sh: TOKENS $TOKENS is not a positive multiple of 32" >&2; exit 1; }
(( WINDOWS >= 2 )) || { echo "imatrix_side_by_side.sh: WINDOWS $WINDOWS: llama-imatrix needs at least 2" >&2; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/slimpack-imatrix-bench.XXXXXX")"
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

/usr/bin/python3 "$ROOT/scripts/fixtures/make_peer_synthetic.py" "$WORK/model" 7 \
  --layers 4 --hidden 256 --intermediate 672 --heads 4 --vocab 258 >/dev/null
cp "$ROOT/examples/tiny-llama/tokenizer.json" "$WORK/model/"
echo '{"add_bos_token": false, "add_eos_token": false}' >"$WORK/model/tokenizer_config.json"
/usr/bin/python3 - "$WORK" "$WINDOWS" "$TOKENS" <<'EOF'
import json, sys
import numpy as np
work, windows, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cfg_path = f"{work}/model/config.json"
cfg = json.load(open(cfg_path))
cfg.update(bos_token_id=256, eos_token_id=257, max_position_embeddings=max(tokens, 2048))
json.dump(cfg, open(cfg_path, "w"), indent=1)
ids = np.random.default_rng(3).integers(32, 127, size=(windows, tokens), dtype=np.int64)
np.save(f"{work}/calib.npy", ids)
open(f"{work}/calib.txt", "wb").write(bytes(ids.reshape(-1).astype(np.uint8)))
EOF
"$SLIMPACK" convert "$WORK/model" -o "$WORK/model-f16.gguf" --format gguf --quant f16 >/dev/null

run_llama() {
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$LI" -m "$WORK/model-f16.gguf" -f "$WORK/calib.txt" \
    -o "$WORK/llama.dat" -c "$TOKENS" --chunks "$WINDOWS" -t "$THREADS" -tb "$THREADS" --no-ppl \
    >"$WORK/llama.log" 2>&1 || { tail -20 "$WORK/llama.log" >&2; exit 1; }
  cat "$WORK/time"
}
run_slimpack() {
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$SLIMPACK" calibrate "$WORK/model" \
    --data "$WORK/calib.npy" --imatrix -o "$WORK/slimpack.dat" --threads "$THREADS" \
    --calib-samples "$WINDOWS" --progress none >"$WORK/slimpack.log" 2>&1 ||
    { tail -20 "$WORK/slimpack.log" >&2; exit 1; }
  cat "$WORK/time"
}
: >"$WORK/llama.times"
: >"$WORK/slimpack.times"
for run in $(seq "$RUNS"); do
  run_llama >"$WORK/one" || exit 1
  read -r lw lr <"$WORK/one"
  run_slimpack >"$WORK/one" || exit 1
  read -r sw sr <"$WORK/one"
  echo "run $run: llama-imatrix ${lw} s, $((lr / 1024)) MiB; slimpack calibrate --imatrix ${sw} s, $((sr / 1024)) MiB"
  echo "$lw" >>"$WORK/llama.times"
  echo "$sw" >>"$WORK/slimpack.times"
done
/usr/bin/python3 - "$WORK" "$WINDOWS" "$TOKENS" "$THREADS" <<'EOF'
import statistics, struct, sys
import numpy as np
work, windows, tokens, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def median(name):
    return statistics.median(float(v) for v in open(f"{work}/{name}.times").read().split())
lw, sw = median("llama"), median("slimpack")
n = windows * tokens
print(f"{n} tokens, {threads} threads, medians: llama-imatrix {lw:.2f} s ({n / lw:,.0f} tokens/s), "
      f"slimpack {sw:.2f} s ({n / sw:,.0f} tokens/s); slimpack/llama time {sw / lw:.2f}")
def read_dat(path):
    # llama.cpp's imatrix .dat: count, then per entry name, ncall, nval, values
    b = open(path, "rb").read()
    (count,), at = struct.unpack_from("<i", b), 4
    out = {}
    for _ in range(count):
        (ln,) = struct.unpack_from("<i", b, at); at += 4
        name = b[at:at + ln].decode(); at += ln
        ncall, nval = struct.unpack_from("<ii", b, at); at += 8
        vals = np.frombuffer(b, "<f4", nval, at); at += 4 * nval
        out[name] = vals / max(ncall, 1)
    return out
a, b = read_dat(f"{work}/llama.dat"), read_dat(f"{work}/slimpack.dat")
common = sorted(set(a) & set(b))
if not common:
    sys.exit(f"no tensor name in both matrices: llama {sorted(a)[:3]}, slimpack {sorted(b)[:3]}")
worst = max(float(np.max(np.abs(a[k] - b[k]) / np.maximum(np.abs(a[k]), 1e-30))) for k in common)
print(f"matrices: llama {len(a)}, slimpack {len(b)}, compared {len(common)}; "
      f"largest relative difference of a column {worst:.2e}")
EOF
