#!/usr/bin/env bash
# `slimpack convert` with passes and quantization flags, end to end on the
# bundled examples: exit codes 0/1/2/3, messages naming the flag, key, pass or
# tensor, manifest records (quant layouts, producer.passes, recipe), nothing
# written on failure, byte-identical artifacts across thread counts.
# usage: convert_quant_cli_test.sh SLIMPACK REPO_ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
LLAMA="$ROOT/examples/tiny-llama"
CALIB="$LLAMA/calib_tokens.npy"
CNN="$ROOT/examples/digits-cnn/model.onnx"
CNN_CALIB="$ROOT/examples/digits-cnn/calib.npz"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
OUT="$TMP/out.txt"
fail=0
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"
py() { /usr/bin/python3 -c "$@"; }

# Usage errors (2) name the flag and the value; nothing is written.
expect 2 "unknown scheme" -- convert "$LLAMA" -o "$TMP/x" --quant int9
says "--quant" "names the flag"; says "int9" "names the value"
expect 2 "group without quant" -- convert "$LLAMA" -o "$TMP/x" --group 32
says "--quant" "says --group refines --quant"
expect 2 "unknown algorithm" -- convert "$LLAMA" -o "$TMP/x" --quant int4 --algo gtpq
expect 2 "unknown pass" -- convert "$CNN" -o "$TMP/x" --passes fuse-bn-into-conv,fuse-everything
says "fuse-everything" "names the unknown pass"
expect 2 "w8a8 with --algo" -- convert "$CNN" -o "$TMP/x" --quant w8a8 --algo gptq
expect 2 "report without data" -- convert "$CNN" -o "$TMP/x" --report "$TMP/r"
expect 2 "both size targets" -- convert "$LLAMA" -o "$TMP/x" --target-size 1MB --target-bpw 4
expect 2 "bad target size" -- convert "$LLAMA" -o "$TMP/x" --target-size 3.8XB
says "3.8XB" "names the size"
# Input errors (1).
expect 1 "gptq without calibration" -- convert "$LLAMA" -o "$TMP/x" --quant int4 --algo gptq
says "--calib" "tells which flag is missing"
expect 1 "w8a8 on a checkpoint" -- convert "$LLAMA" -o "$TMP/x" --quant w8a8 --calib "$CALIB"
says "weight-only" "suggests a weight-only scheme"
expect 1 "impossible size target" -- convert "$LLAMA" -o "$TMP/x" --target-bpw 1.5
says "below the smallest plan" "says the target is too small"
printf '{"quant": {"scheme": "int4", "rulez": []}}' > "$TMP/badkey.json"
expect 1 "recipe with unknown quant key" -- convert "$LLAMA" -o "$TMP/x" --recipe "$TMP/badkey.json"
says "badkey.json" "names the recipe"; says "quant.rulez" "names the key"
printf '{"quant": {"rules": [{"match": "(", "scheme": "int8"}]}}' > "$TMP/badre.json"
expect 1 "recipe with a bad regex" -- convert "$LLAMA" -o "$TMP/x" --recipe "$TMP/badre.json"
says "quant.rules[0].match" "names the rule"
[ ! -e "$TMP/x" ] || bad "a failed conversion left $TMP/x"

# INT8 weights: quant layouts and records in the manifest, eval works.
expect 0 "int8 convert" -- convert "$LLAMA" -o "$TMP/i8" --quant int8 --threads 1
expect 0 "verify int8" -- verify "$TMP/i8"
py 'import json,sys
m = json.load(open(sys.argv[1]))
q = [t for t in m["tensors"] if t["layout"]["kind"] == "int8_per_channel"]
assert len(q) == 30, len(q)
assert all(t["dtype"] == "i8" and t["quant"]["bits"] == 8 for t in q), q[0]
names = {t["name"] for t in m["tensors"]}
assert all(t["layout"]["scale"] in names for t in q)
p = m["producer"]["passes"]
assert [x["name"] for x in p] == ["quantize-weights"], p
assert m["producer"]["recipe"]["quant"]["scheme"] == "int8", m["producer"]["recipe"]
' "$TMP/i8/manifest.json" || bad "int8 manifest records"
expect 0 "inspect int8 artifact" -- inspect "$TMP/i8"
says "int8_per_channel" "inspect lists the layout"

# Determinism: same flags, 1 vs 2 threads -> identical manifest and shards.
expect 0 "int4 gptq, 1 thread" -- convert "$LLAMA" -o "$TMP/g1" --quant int4-g32-asym --algo gptq --calib "$CALIB" --calib-samples 2 --threads 1
# GPTQ takes the linears; only the embedding is left to RTN as the shard
# is written, and the summary counts it instead of calling all 30 RTN.
says "(1 of them quantized as the shards are written)" \
  "the summary counts the weights quantized as the shards are written"
expect 0 "int4 gptq, 2 threads" -- convert "$LLAMA" -o "$TMP/g2" --quant int4-g32-asym --algo gptq --calib "$CALIB" --calib-samples 2 --threads 2
cmp -s "$TMP/g1/manifest.json" "$TMP/g2/manifest.json" || bad "manifests differ across thread counts"
cmp -s "$TMP/g1/shard-00000.bin" "$TMP/g2/shard-00000.bin" || bad "shards differ across thread counts"

# Passes on the CNN: -v statistics, IR printed after a named pass, records.
expect 0 "cnn passes" -- convert "$CNN" -o "$TMP/cnn" -v --verify-each --print-ir-after fuse-bn-into-conv
says "pass fuse-bn-into-conv" "-v shows the pass"
says "nodes 12 -> 6" "-v shows node counts"
says "IR after fuse-bn-into-conv" "prints the IR after the named pass"
says "= Conv(%input, %conv1.weight, %conv1.bias)" "printed IR has the BN folded into conv1"
grep -q "= BatchNormalization(" "$OUT" && bad "BatchNormalization left after fuse-bn-into-conv"
py 'import json,sys
m = json.load(open(sys.argv[1]))
names = [p["name"] for p in m["producer"]["passes"]]
assert "fuse-bn-into-conv" in names and "fuse-conv-activation" in names, names
assert not any("time" in json.dumps(p) for p in m["producer"]["passes"]), "timings in the manifest"
assert m["producer"]["recipe"]["passes"] == names, m["producer"]["recipe"]
' "$TMP/cnn/manifest.json" || bad "pass records"
expect 0 "no passes" -- convert "$CNN" -o "$TMP/cnn0" --passes none
py 'import json,sys; m=json.load(open(sys.argv[1])); assert m["producer"]["passes"] == [], m["producer"]["passes"]' \
  "$TMP/cnn0/manifest.json" || bad "--passes none still ran passes"

# W8A8 with a report and a gate: passes (0) and fails (3).
expect 0 "w8a8 + report" -- convert "$CNN" -o "$TMP/w8" --quant w8a8 --calib "$CNN_CALIB" \
  --report "$TMP/rep" --report-data "$CNN_CALIB" --gate 'top1>=0.95'
[ -s "$TMP/rep/report.html" ] || bad "no report.html"
# Integer layers are compared in real values against the float value they
# stand for (their outputs are named "<value>_quantized").
py 'import json,sys
r = json.load(open(sys.argv[1]))
q = [l for l in r["layers"] if l["op_type"] == "QLinearConv"]
assert len(q) == 3, [l["node"] for l in r["layers"]]
for l in q:
    assert l["reference_output"] + "_quantized" == l["output"], l
    assert l["propagated"]["sqnr_db"] > 25, l
# conv3 runs alone on the reference activation quantized as the candidate
# does: the error it introduces is smaller than the error it has in total.
c3 = [l for l in q if l["node"] == "/conv3/Conv"][0]
assert c3["quant_only"]["sqnr_db"] > c3["propagated"]["sqnr_db"] + 1, c3
assert not c3.get("inputs_from_candidate"), c3
' "$TMP/rep/report.json" || bad "integer layers missing from the W8A8 report"
says "4 integer node(s)" "summary counts the integer nodes"
says "Gate: PASSED" "report says the gate passed"
expect 3 "w8a8 + failing gate" -- convert "$CNN" -o "$TMP/w8" --force --quant w8a8 --calib "$CNN_CALIB" \
  --report "$TMP/rep2" --report-data "$CNN_CALIB" --gate 'layer.sqnr>=200'
says "layer.sqnr" "names the failed rule"

exit $fail
