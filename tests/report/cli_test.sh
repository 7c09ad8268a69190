#!/usr/bin/env bash
# `slimpack report` end to end: the exit code and message of every bad
# input, a failing gate (exit 3, naming the rule and the broken layer), a
# passing gate (exit 0) and the files written.
# Usage: cli_test.sh SLIMPACK REPORT_FIXTURE SOURCE_DIR
set -uo pipefail
slimpack=$1 fixture=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
digits=$src/examples/digits-cnn
failures=0

# expect CODE NEEDLE ARGS...: runs `slimpack report ARGS`, checks the exit
# code and that stderr contains NEEDLE.
expect() {
  local code=$1 needle=$2
  shift 2
  "$slimpack" report "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$needle" "$work/err"; then
    echo "FAIL: slimpack report $* -> exit $rc (want $code), stderr:" >&2
    cat "$work/err" >&2
    echo "  (wanted stderr to contain: $needle)" >&2
    failures=$((failures + 1))
  else
    echo "ok: exit $rc: $needle"
  fi
}

mkdir -p "$work/fx" && "$fixture" "$work/fx" || { echo "FAIL: fixture" >&2; exit 1; }
broken=$work/fx/broken.onnx
common=(--data "$digits/eval.safetensors" --input-map input=inputs --max-runs 4 --sensitivity-runs 1)

# Bad inputs: exit 1.
expect 1 "$work/missing.onnx" --reference "$work/missing.onnx" --candidate "$broken" "${common[@]}" -o "$work/r"
expect 1 "$work/none.safetensors" --reference "$digits/model.onnx" --candidate "$broken" \
  --data "$work/none.safetensors" -o "$work/r"
expect 1 "mismatched models: reference inputs [input] vs candidate inputs [input_ids]" \
  --reference "$digits/model.onnx" --candidate "$src/examples/tiny-llama" "${common[@]}" -o "$work/r"
expect 1 "kld needs a language model" --reference "$digits/model.onnx" --candidate "$broken" \
  "${common[@]}" -o "$work/r" --gate 'e2e.kld<=0.03'
expect 1 "no array 'nolabels'" --reference "$digits/model.onnx" --candidate "$broken" \
  "${common[@]}" -o "$work/r" --labels nolabels
# Usage errors: exit 2.
expect 2 "unknown metric 'layer.snr'" --reference "$digits/model.onnx" --candidate "$broken" \
  "${common[@]}" -o "$work/r" --gate 'layer.snr>=20'
expect 2 "'top1 0.99': no comparison" --reference "$digits/model.onnx" --candidate "$broken" \
  "${common[@]}" -o "$work/r" --gate 'e2e.kld<=0.1,top1 0.99'
expect 2 "'x' is not a finite number" --reference "$digits/model.onnx" --candidate "$broken" \
  "${common[@]}" -o "$work/r" --gate 'top1>=x'
expect 2 "--input-map: model has no input 'image'" --reference "$digits/model.onnx" \
  --candidate "$broken" --data "$digits/eval.safetensors" --input-map image=inputs -o "$work/r"
expect 2 "--data is required" --reference "$digits/model.onnx" --candidate "$broken" -o "$work/r"

# A failing gate names the rule and the broken layer first; files are written.
expect 3 "gate FAILED layer.quant_sqnr>=20: 1 of 7 layers fail (worst first: /conv2/Conv" \
  --reference "$digits/model.onnx" --candidate "$broken" "${common[@]}" -o "$work/r" \
  --gate 'layer.quant_sqnr>=20,top1>=0.5'
for f in report.json report.md report.html; do
  [ -s "$work/r/$f" ] || { echo "FAIL: $f not written" >&2; failures=$((failures + 1)); }
done
/usr/bin/python3 - "$work/r/report.json" <<'PY' || failures=$((failures + 1))
import json, sys
r = json.load(open(sys.argv[1]))
assert r["format"] == "slimpack-report" and r["version"] == 1, r["format"]
assert r["end_to_end"]["task"] == "classifier"
assert r["end_to_end"]["classifier"]["accuracy_reference"] > 0.9  # labels found by default
assert [l["node"] for l in r["layers"] if l["sensitivity_rank"] == 1] == ["/conv2/Conv"]
assert r["gate"]["passed"] is False and r["gate"]["rules"][0]["offenders"][0]["name"] == "/conv2/Conv"
assert r["fallback"]["recipe"]["rules"][0]["match"] == "^conv2\\.weight$"
assert all(len(f["sha256"]) == 64 for f in r["inputs"])
print("ok: report.json")
PY

# Same model as candidate: the gate passes, exit 0; --json prints the report.
"$slimpack" report --reference "$digits/model.onnx" --candidate "$digits/model.onnx" "${common[@]}" \
  -o "$work/same" --gate 'top1>=0.99,layer.sqnr>=60' --json >"$work/same.json" 2>"$work/err"
rc=$?
if [ $rc -ne 0 ] || ! /usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["gate"]["passed"]' "$work/same.json"; then
  echo "FAIL: identical candidate -> exit $rc" >&2; cat "$work/err" >&2; failures=$((failures + 1))
else
  echo "ok: identical candidate passes the gate"
fi

[ $failures -eq 0 ] && echo PASS || { echo "$failures failure(s)" >&2; exit 1; }
