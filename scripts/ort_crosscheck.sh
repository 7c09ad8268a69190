#!/usr/bin/env bash
# Cross-checks slimpack's interpreter against ONNX Runtime (npm package
# onnxruntime-node, bench/ort/) on the bundled digits CNN: runs all 450
# eval images through `slimpack run` (at 1 and 2 threads) and through ORT,
# and fails unless every output agrees within TOL (default 1e-4, max abs
# diff) and the interpreter's outputs are byte-identical across thread
# counts. Also prints both runtimes' accuracy and their distance to the
# torch reference logits stored with the example.
# ORT is for this check only: never part of the build or the test command.
#
# usage: scripts/ort_crosscheck.sh [SLIMPACK_BIN] [TOL]
#   SLIMPACK_BIN defaults to build/cli/slimpack (any build type).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/cli/slimpack}
tol=${2:-1e-4}
py=/usr/bin/python3
ex=$root/examples/digits-cnn
[[ -x $bin ]] || { echo "missing $bin: make -C $root/build slimpack" >&2; exit 1; }
command -v node >/dev/null || { echo "node (>= 18) is required for onnxruntime-node" >&2; exit 1; }
if [[ ! -d $root/bench/ort/node_modules/onnxruntime-node ]]; then
  echo "== installing onnxruntime-node (bench/ort, npm ci --ignore-scripts)"
  (cd "$root/bench/ort" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/slimpack_ort_check.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Inputs: the whole eval set as one batch (the model's batch dim is symbolic).
"$py" -c "
import sys
sys.path.insert(0, '$root/scripts/fixtures')
import numpy as np
from safetensors_lite import read_safetensors
t = read_safetensors('$ex/eval.safetensors')
t = t[0] if isinstance(t, tuple) else t
np.savez('$work/inputs.npz', input=t['inputs'])
"
for threads in 1 2; do
  "$bin" run "$ex/model.onnx" --inputs "$work/inputs.npz" -o "$work/slimpack_t$threads.npz" \
    --threads "$threads"
done
node "$root/bench/ort/ort_run.mjs" "$ex/model.onnx" --inputs "$work/inputs.npz" \
  --out-dir "$work/ort" --threads 1 >/dev/null
ort_version=$(node -p "require('$root/bench/ort/node_modules/onnxruntime-node/package.json').version")

"$py" - "$work" "$ex/eval.safetensors" "$tol" "$ort_version" "$root/scripts/fixtures" <<'PY'
import os
import sys

work, eval_path, tol, ort_version, fixtures = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
sys.path.insert(0, fixtures)
import numpy as np  # noqa: E402
from safetensors_lite import read_safetensors  # noqa: E402

ev = read_safetensors(eval_path)
ev = ev[0] if isinstance(ev, tuple) else ev
s1 = np.load(os.path.join(work, "slimpack_t1.npz"))
s2 = np.load(os.path.join(work, "slimpack_t2.npz"))
ok = True
print(f"digits-cnn, {ev['inputs'].shape[0]} images, onnxruntime-node {ort_version}, tolerance {tol:g}")
for name in s1.files:
    ort_file = os.path.join(work, "ort", name.replace("/", "_") + ".npy")
    if not os.path.exists(ort_file):
        print(f"  {name}: ORT produced no output of that name"); ok = False; continue
    a, o = s1[name], np.load(ort_file)
    if a.shape != o.shape:
        print(f"  {name}: shape {a.shape} (slimpack) vs {o.shape} (ORT)"); ok = False; continue
    diff = float(np.abs(a.astype(np.float64) - o).max())
    rel = diff / max(float(np.abs(o).max()), 1e-30)
    same_threads = s2[name].tobytes() == a.tobytes()
    print(f"  {name} {list(a.shape)}: max |slimpack - ORT| = {diff:.3g} ({rel:.3g} of max |ORT|); "
          f"slimpack 1 vs 2 threads byte-identical: {same_threads}")
    ok = ok and diff <= tol and same_threads
    if name == "logits":
        ref = ev["reference_logits"]
        labels = ev["labels"]
        for who, x in (("slimpack", a), ("ORT", o)):
            acc = float((x.argmax(1) == labels).mean())
            tdiff = float(np.abs(x[: len(ref)] - ref).max())
            print(f"  {who:8s} accuracy {acc:.6f} ({int((x.argmax(1) == labels).sum())}/{len(labels)}), "
                  f"max |{who} - torch| on the {len(ref)} reference rows = {tdiff:.3g}")
        agree = int((a.argmax(1) == o.argmax(1)).sum())
        print(f"  argmax agreement slimpack vs ORT: {agree}/{len(labels)}")
print("ort_crosscheck: PASS" if ok else "ort_crosscheck: FAIL")
sys.exit(0 if ok else 1)
PY
