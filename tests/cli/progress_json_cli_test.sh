#!/usr/bin/env bash
# --progress: json lines that a CI log parser can read, each stage counting
# up to its total, for a GPTQ conversion (calibration passes, GPTQ layer by
# layer, files written), AWQ (its inputs layer by layer, its search group
# by group), the size planner and `report` (compared runs,
# sensitivity layers) and `calibrate` (runs, Hessian layers); nothing from
# auto off a terminal or from none; an unknown mode refused.
#   progress_json_cli_test.sh SLIMPACK ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
LLAMA="$ROOT/examples/tiny-llama"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0

args=(convert "$LLAMA" --quant int4 --algo gptq --calib "$LLAMA/calib_tokens.npy" --calib-samples 1)
"$SLIMPACK" "${args[@]}" -o "$TMP/json" --progress json 2>"$TMP/json.err" >/dev/null ||
  { echo "FAIL: convert --progress json exited $?"; cat "$TMP/json.err"; fail=1; }
/usr/bin/python3 - "$TMP/json.err" <<'PY' || fail=1
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by_stage = {}
for e in events:
    for key in ("stage", "done", "total", "unit", "elapsed_s"):
        assert key in e, f"event without {key}: {e}"
    by_stage.setdefault(e["stage"], []).append(e)
assert set(by_stage) == {"calibration", "gptq", "write"}, sorted(by_stage)
gptq = by_stage["gptq"]
# 4 decoder layers and lm_head: 5 groups, reported 0..5 in order.
assert [e["done"] for e in gptq] == [0, 1, 2, 3, 4, 5], [e["done"] for e in gptq]
assert all(e["total"] == 5 and e["unit"] == "layers" for e in gptq)
assert "eta_s" in gptq[1] and gptq[-1]["eta_s"] == 0, gptq[-1]
# One calibration pass per group, each 0 then 1 of 1 run, named for its layer.
calib = by_stage["calibration"]
assert len(calib) == 10, len(calib)
contexts = [e["context"] for e in calib[::2]]
assert contexts == ["gptq layer 0", "gptq layer 1", "gptq layer 2", "gptq layer 3", "gptq"], contexts
assert [e["done"] for e in calib] == [0, 1] * 5
write = by_stage["write"]
assert write[0]["done"] == 0 and write[-1]["done"] == write[-1]["total"] >= 1, write
print(f"progress json: {len(events)} events, stages {sorted(by_stage)}")
PY

# The size planner's measured tensors, then the report's compared runs and
# sensitivity layers, on the digits CNN.
DIGITS="$ROOT/examples/digits-cnn"
"$SLIMPACK" convert "$DIGITS/model.onnx" -o "$TMP/d8" --quant int8 --target-bpw 6 \
  --calib "$DIGITS/calib.npz" --calib-samples 1 --progress json 2>"$TMP/plan.err" >/dev/null ||
  { echo "FAIL: planner convert exited $?"; cat "$TMP/plan.err"; fail=1; }
"$SLIMPACK" report --reference "$DIGITS/model.onnx" --candidate "$TMP/d8" \
  --data "$DIGITS/eval.safetensors" --input-map input=inputs -o "$TMP/report" --max-runs 2 \
  --sensitivity-runs 1 --progress json 2>"$TMP/report.err" >/dev/null ||
  { echo "FAIL: report exited $?"; cat "$TMP/report.err"; fail=1; }
/usr/bin/python3 - "$TMP/plan.err" "$TMP/report.err" <<'PY' || fail=1
import json, sys
def stages(path):
    out = {}
    for line in open(path):
        if line.startswith("{"):
            e = json.loads(line)
            out.setdefault(e["stage"], []).append((e["done"], e["total"], e["unit"]))
    return out
plan, report = stages(sys.argv[1]), stages(sys.argv[2])
# One Gemm left after fusion: the planner measures it.
assert plan["planner"] == [(0, 1, "tensors"), (1, 1, "tensors")], plan.get("planner")
assert report["report"] == [(0, 2, "runs"), (1, 2, "runs"), (2, 2, "runs")], report.get("report")
assert report["sensitivity"] == [(0, 1, "layers"), (1, 1, "layers")], report.get("sensitivity")
print("progress json: planner, report and sensitivity stages counted")
PY

# AWQ: its inputs captured layer by layer, then the scale search group by
# group (12: q/k/v, gate/up and down of 4 layers; o_proj is not scaled
# under GQA), then the files.
"$SLIMPACK" convert "$LLAMA" --quant int4 --algo awq --calib "$LLAMA/calib_tokens.npy" \
  --calib-samples 1 -o "$TMP/awq" --progress json 2>"$TMP/awq.err" >/dev/null ||
  { echo "FAIL: convert --algo awq --progress json exited $?"; cat "$TMP/awq.err"; fail=1; }
/usr/bin/python3 - "$TMP/awq.err" <<'PY' || fail=1
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
stages = [e["stage"] for e in events]
assert set(stages) == {"awq-inputs", "calibration", "awq", "write"}, sorted(set(stages))
awq = [e for e in events if e["stage"] == "awq"]
assert [(e["done"], e["total"], e["unit"]) for e in awq] == [(i, 12, "groups") for i in range(13)], awq
assert awq[1]["context"] == "layer 0 q/k/v", awq[1]
# The search comes after the capture and before the writing.
first = {s: stages.index(s) for s in set(stages)}
last = {s: len(stages) - 1 - stages[::-1].index(s) for s in set(stages)}
assert last["awq-inputs"] < first["awq"] and last["awq"] < first["write"], stages
print("progress json: AWQ's capture layers, search groups and files counted")
PY

# calibrate: the range table's runs (their number known at the end), the
# imatrix, the Hessians and AWQ's inputs layer by layer; -v lines still
# printed beside the events.
for kind in ranges imatrix hessians awq-inputs; do
  flag=(); [ "$kind" = ranges ] || flag=(--"$kind")
  "$SLIMPACK" calibrate "$LLAMA" --data "$LLAMA/calib_tokens.npy" "${flag[@]}" --calib-samples 2 \
    --max-batch 8 -o "$TMP/calib-$kind" --progress json -v 2>"$TMP/calib-$kind.err" >/dev/null ||
    { echo "FAIL: calibrate $kind --progress json exited $?"; cat "$TMP/calib-$kind.err"; fail=1; }
done
/usr/bin/python3 - "$TMP" <<'PY' || fail=1
import json, sys
def events(kind):
    lines = open(f"{sys.argv[1]}/calib-{kind}.err").read().splitlines()
    ev = [json.loads(l) for l in lines if l.startswith("{")]
    return ev, [l for l in lines if not l.startswith("{")]
def steps(ev, stage):
    return [(e["done"], e["total"], e.get("context", "")) for e in ev if e["stage"] == stage]
ev, text = events("ranges")
# The bundled calibration file holds 64 windows: --max-batch 8 makes 8 runs.
assert steps(ev, "calibration") == [(0, 0, "ranges")] + [(i, 0, "ranges") for i in range(1, 9)] + [(8, 8, "ranges")], steps(ev, "calibration")
assert "run 8" in text, text
# imatrix, the Hessians and AWQ's inputs walk the float model layer by layer
# (quantize/float_walk.h): the layers counted, each layer's runs counted.
def walked(kind, stage, layers, last, line):
    ev, text = events(kind)
    assert {e["stage"] for e in ev} == {stage, "calibration"}, ev
    contexts = [f"{stage} layer {i}" for i in range(layers)] + ([stage] if last else [])
    n = len(contexts)
    assert steps(ev, stage) == [(0, n, "")] + [(i + 1, n, c) for i, c in enumerate(contexts)], steps(ev, stage)
    assert steps(ev, "calibration") == [(i, 2, c) for c in contexts for i in range(3)], steps(ev, "calibration")
    assert line is None or any(f"{stage}: {line}" in l for l in text), text
# lm_head is a linear of no layer: its input comes last. AWQ's groups read
# only the layers' inputs.
walked("imatrix", "imatrix", 4, True, None)
walked("hessians", "hessians", 4, True, "capturing X^T X")
walked("awq-inputs", "awq-inputs", 4, False, None)
print("progress json: calibrate's ranges, imatrix, Hessians and AWQ inputs counted")
PY
"$SLIMPACK" calibrate "$LLAMA" --data "$LLAMA/calib_tokens.npy" --hessians --calib-samples 1 \
  -o "$TMP/calib-auto" 2>"$TMP/calib-auto.err" >/dev/null || { echo "FAIL: calibrate auto exited $?"; fail=1; }
if [ -s "$TMP/calib-auto.err" ]; then
  echo "FAIL: calibrate --progress auto off a terminal printed:"; cat "$TMP/calib-auto.err"; fail=1
fi
# -v off a terminal: a text line per step instead.
"$SLIMPACK" calibrate "$LLAMA" --data "$LLAMA/calib_tokens.npy" --imatrix --calib-samples 2 \
  -o "$TMP/calib-v" -v 2>"$TMP/calib-v.err" >/dev/null || { echo "FAIL: calibrate -v exited $?"; fail=1; }
grep -qx 'calibration (imatrix layer 3): 2/2 runs' "$TMP/calib-v.err" ||
  { echo "FAIL: calibrate --imatrix -v printed no step lines:"; cat "$TMP/calib-v.err"; fail=1; }
"$SLIMPACK" calibrate "$LLAMA" --data "$LLAMA/calib_tokens.npy" -o "$TMP/calib-bad" --progress loud \
  >"$TMP/calib-bad.out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q -- '--progress' "$TMP/calib-bad.out" || [ -e "$TMP/calib-bad" ]; then
  echo "FAIL: calibrate --progress loud exited $rc with:"; cat "$TMP/calib-bad.out"; fail=1
fi

for mode in auto none; do
  "$SLIMPACK" "${args[@]}" -o "$TMP/$mode" --progress "$mode" 2>"$TMP/$mode.err" >/dev/null ||
    { echo "FAIL: convert --progress $mode exited $?"; fail=1; }
  if grep -q '^{' "$TMP/$mode.err" || grep -q $'\r' "$TMP/$mode.err"; then
    echo "FAIL: --progress $mode off a terminal printed progress:"; cat "$TMP/$mode.err"; fail=1
  fi
done
cmp -s "$TMP/json/shard-00000.bin" "$TMP/none/shard-00000.bin" ||
  { echo "FAIL: --progress changed the artifact"; fail=1; }

"$SLIMPACK" "${args[@]}" -o "$TMP/bad" --progress loud >"$TMP/bad.out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q -- '--progress' "$TMP/bad.out"; then
  echo "FAIL: --progress loud exited $rc with:"; cat "$TMP/bad.out"; fail=1
fi
[ -e "$TMP/bad" ] && { echo "FAIL: output written for a bad flag"; fail=1; }

if [ $fail -ne 0 ]; then echo "progress: FAILED"; exit 1; fi
echo "progress: all cases passed"
