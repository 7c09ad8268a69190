#!/usr/bin/env bash
# Provenance (issue 19): an artifact's manifest records the recipe after
# flag merging, the calibration files (name, size, SHA-256) and the source
# commit, and `convert --recipe-from ARTIFACT` rebuilds the same bytes from
# the same inputs; other calibration data is refused, naming the file.
#   recipe_from_cli_test.sh SLIMPACK ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
CNN="$ROOT/examples/digits-cnn/model.onnx"
CNN_CALIB="$ROOT/examples/digits-cnn/calib.npz"
LLAMA="$ROOT/examples/tiny-llama"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0
run() {  # run CODE DESCRIPTION -- ARGS...
  local want="$1" what="$2"
  shift 3
  "$SLIMPACK" "$@" >"$TMP/out" 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exited $got, expected $want"; cat "$TMP/out"; fail=1; return 1
  fi
  echo "ok: $what (exit $got)"
}
same_tree() {  # same_tree A B DESCRIPTION
  if diff -r "$1" "$2" >/dev/null; then echo "ok: $3: identical bytes"
  else echo "FAIL: $3: artifacts differ"; diff -r "$1" "$2" | head; fail=1; fi
}

# W8A8 with flags only, then rebuilt from the artifact alone.
run 0 "w8a8 from flags" -- convert "$CNN" -o "$TMP/a" --quant w8a8 --calib "$CNN_CALIB" --shard-size 1M
/usr/bin/python3 - "$TMP/a/manifest.json" "$CNN_CALIB" <<'PY' || fail=1
import hashlib, json, os, sys
m = json.load(open(sys.argv[1]))["producer"]
calib = sys.argv[2]
want = [{"file": "calib.npz", "size": os.path.getsize(calib),
         "sha256": hashlib.sha256(open(calib, "rb").read()).hexdigest()}]
assert m["calibration"] == want, m.get("calibration")
assert m["commit"] == "unknown" or len(m["commit"].split("-")[0]) == 40, m["commit"]
assert m["recipe"]["quant"], m["recipe"]
print("ok: manifest records calibration", want[0]["sha256"][:12], "and commit", m["commit"][:12])
PY
run 0 "w8a8 --recipe-from" -- convert "$CNN" -o "$TMP/b" --recipe-from "$TMP/a" --calib "$CNN_CALIB"
same_tree "$TMP/a" "$TMP/b" "w8a8 rebuilt from its manifest"

# imatrix INT4 on the tiny llama, the recipe given as flags.
run 0 "imatrix int4" -- convert "$LLAMA" -o "$TMP/c" --quant int4 --algo imatrix \
  --calib "$LLAMA/calib_tokens.npy" --calib-samples 8
run 0 "imatrix --recipe-from" -- convert "$LLAMA" -o "$TMP/d" --recipe-from "$TMP/c" \
  --calib "$LLAMA/calib_tokens.npy"
same_tree "$TMP/c" "$TMP/d" "imatrix int4 rebuilt from its manifest"

# Other data than recorded: refused before any work, naming both files.
/usr/bin/python3 -c "
import numpy as np, sys
d = np.load('$CNN_CALIB'); np.savez('$TMP/other.npz', input=d['input'][:64])"
run 1 "--recipe-from with other calibration data" -- convert "$CNN" -o "$TMP/e" \
  --recipe-from "$TMP/a" --calib "$TMP/other.npz"
grep -q "calib file 1 is 'other.npz'" "$TMP/out" && grep -q "was calibrated on 'calib.npz'" "$TMP/out" \
  || { echo "FAIL: mismatch message"; cat "$TMP/out"; fail=1; }
run 1 "--recipe-from without the calibration data" -- convert "$CNN" -o "$TMP/e" --recipe-from "$TMP/a"
grep -q "gives 0 data files, but" "$TMP/out" || { echo "FAIL: count message"; cat "$TMP/out"; fail=1; }
[ -e "$TMP/e" ] && { echo "FAIL: output written on refusal"; fail=1; }
run 2 "--recipe and --recipe-from" -- convert "$CNN" -o "$TMP/e" --recipe-from "$TMP/a" \
  --recipe "$ROOT/examples/recipes/int8-static.json"
# A damaged manifest is refused by the loader's checks.
cp -r "$TMP/a" "$TMP/broken"
sed -i 's/"calib.npz"/"calib.npy"/' "$TMP/broken/manifest.json"
run 1 "--recipe-from a damaged manifest" -- convert "$CNN" -o "$TMP/e" --recipe-from "$TMP/broken" \
  --calib "$CNN_CALIB"

if [ $fail -ne 0 ]; then echo "recipe-from: FAILED"; exit 1; fi
echo "recipe-from: all passed"
