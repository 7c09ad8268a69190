#!/usr/bin/env bash
# Precomputed GPTQ statistics (issue 17): `calibrate --hessians` writes every
# linear layer's input X^T X / rows in the float model as safetensors;
# `convert --hessians FILE` runs GPTQ from it without calibration runs, each
# weight as its shard is written, so the parts of a split conversion read one
# file and merge into one run's bytes. The stored values are checked against
# an independent statistic (their diagonals are the imatrix's mean x^2), and
# a file for another model, a damaged or foreign file and conflicting flags
# are refused.
#   hessian_stats_cli_test.sh SLIMPACK ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
LLAMA="$ROOT/examples/tiny-llama"
CALIB="$LLAMA/calib_tokens.npy"
CNN="$ROOT/examples/digits-cnn/model.onnx"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0
OUT="$TMP/out"
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"

expect 0 "calibrate --hessians" -- calibrate "$LLAMA" --data "$CALIB" --hessians -o "$TMP/h.safetensors" --threads 2
says "Hessians of 29 linear layers over 64 samples" "calibrate --hessians"
expect 0 "calibrate --imatrix (to check the diagonals against)" -- calibrate "$LLAMA" --data "$CALIB" --imatrix -o "$TMP/stats.imatrix"
/usr/bin/python3 - "$TMP/h.safetensors" "$TMP/stats.imatrix" <<'PY' || fail=1
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
assert meta == {"format": "slimpack-hessians", "version": "1", "samples": "64",
                "dataset": "calib_tokens.npy"}, meta
data = raw[8 + n:]
# llama.cpp's imatrix .dat: entries of (name, ncall, values), keyed by GGUF names.
imx, f = {}, open(sys.argv[2], "rb")
for _ in range(struct.unpack("<i", f.read(4))[0]):
    name = f.read(struct.unpack("<i", f.read(4))[0]).decode()
    ncall, nval = struct.unpack("<ii", f.read(8))
    imx[name] = np.frombuffer(f.read(4 * nval), dtype="<f4") / ncall
gguf = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down"}
assert len(header) == 29, len(header)
for name, t in header.items():
    assert t["dtype"] == "F32" and len(t["shape"]) == 2 and t["shape"][0] == t["shape"][1], (name, t)
    b, e = t["data_offsets"]
    h = np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"])
    assert np.array_equal(h, h.T), name + ": not symmetric"
    assert np.all(np.linalg.eigvalsh(h.astype(np.float64)) > -1e-4 * np.abs(h).max()), name
    if name == "lm_head.weight":
        key = "output.weight"
    else:
        layer, rest = name[len("model.layers."):].split(".", 1)
        key = "blk.%s.%s.weight" % (layer, gguf[rest[:-len(".weight")]])
    np.testing.assert_allclose(np.diag(h), imx[key], rtol=1e-5, err_msg=name)
print("ok: 29 symmetric F32 [K, K] Hessians; diagonals = the imatrix's mean x^2")
PY

Q=(--quant int4 --group 32 --dtype f16 --shard-size 1M)
expect 0 "GPTQ from the file" -- convert "$LLAMA" -o "$TMP/file" "${Q[@]}" --hessians "$TMP/h.safetensors" --threads 2 -v
says "gptq: Hessians from" "convert --hessians"
says "(quantized as the shards are written)" "every weight deferred to the writer"
grep -q "model.layers.3.mlp.down_proj.weight \[Linear\] int4-g32 gptq" "$OUT" \
  || bad "down_proj is not GPTQ-quantized"
/usr/bin/python3 - "$TMP/file/manifest.json" <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))["producer"]
assert [c["file"] for c in p["calibration"]] == ["h.safetensors"], p.get("calibration")
assert p["recipe"]["quant"]["algorithm"] == "gptq", p["recipe"]["quant"]
print("ok: the manifest records the Hessian file as the calibration data")
PY
# Every part reads the same statistics and quantizes only its own weights.
# The MLPs kept f32 make four layer-grouped shards of 1M, so each part
# gets GPTQ weights of its own.
echo '{"dtype": "f32", "quant": {"scheme": "int4-g32", "algorithm": "gptq",
       "rules": [{"match": "mlp\\.", "scheme": "f32"}]}}' > "$TMP/attn-int4.json"
S=(--recipe "$TMP/attn-int4.json" --hessians "$TMP/h.safetensors" --shard-size 1M -v)
expect 0 "one run, attention GPTQ from the file" -- convert "$LLAMA" -o "$TMP/single" "${S[@]}"
[ "$(grep -c "int4-g32 gptq" "$OUT")" -eq 17 ] || bad "one run: not 17 GPTQ weights (16 attention, lm_head)"
total=0
for i in 1 2 3; do
  expect 0 "part $i/3 with --hessians" -- convert "$LLAMA" -o "$TMP/p$i" "${S[@]}" --part $i/3
  n=$(grep -c "int4-g32 gptq" "$OUT")
  [ "$n" -gt 0 ] || bad "part $i/3 quantized no weight"
  total=$((total + n))
done
[ "$total" -eq 17 ] && echo "ok: the 3 parts quantized 17 weights between them, each its own" \
  || bad "the parts quantized $total weights, not 17"
expect 0 "merge" -- merge "$TMP/p1" "$TMP/p2" "$TMP/p3" -o "$TMP/merged"
if diff -r "$TMP/single" "$TMP/merged" >/dev/null; then echo "ok: 3 parts with --hessians = one run"
else bad "merged parts differ from one run"; fi
expect 0 "the same file again" -- convert "$LLAMA" -o "$TMP/again" "${Q[@]}" --hessians "$TMP/h.safetensors" --threads 1
if diff -r "$TMP/file" "$TMP/again" >/dev/null; then echo "ok: 1 thread = 2 threads"
else bad "1 thread differs from 2"; fi
# Quality at equal bits: closer to FP32 than RTN (perplexity, eval tokens).
expect 0 "RTN" -- convert "$LLAMA" -o "$TMP/rtn" "${Q[@]}"
ppl() { "$SLIMPACK" eval "$1" --tokens "$LLAMA/eval_tokens.npy" --threads 2 --json |
        /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["perplexity"])'; }
/usr/bin/python3 - "$(ppl "$LLAMA")" "$(ppl "$TMP/rtn")" "$(ppl "$TMP/file")" <<'PY' || fail=1
import sys
fp, rtn, gptq = map(float, sys.argv[1:])
print("perplexity fp32 %.5f, int4-g32 rtn %.5f, gptq from Hessians %.5f" % (fp, rtn, gptq))
assert gptq - fp < 0.8 * (rtn - fp), "GPTQ from Hessians is not clearly better than RTN"
print("ok: GPTQ from the file loses less than 0.8x RTN's perplexity")
PY

# Refusals: nothing written.
expect 2 "--hessians with --algo rtn" -- convert "$LLAMA" -o "$TMP/x1" --quant int4 --algo rtn --hessians "$TMP/h.safetensors"
says "feeds --algo gptq" "--algo rtn"
expect 2 "--hessians and --calib" -- convert "$LLAMA" -o "$TMP/x2" --quant int4 --hessians "$TMP/h.safetensors" --calib "$CALIB"
says "not both" "--hessians and --calib"
expect 2 "--hessians without --quant" -- convert "$LLAMA" -o "$TMP/x3" --hessians "$TMP/h.safetensors"
# The same file feeds a GGUF export (GPTQ on ggml's grids, no model run),
# recorded where llama-quantize records its imatrix.
expect 0 "GGUF q4_0 from the Hessian file" -- convert "$LLAMA" -o "$TMP/h.gguf" --format gguf --quant q4_0 --hessians "$TMP/h.safetensors"
says "25 matrices from $TMP/h.safetensors" "the GGUF export reads every block-typed matrix's Hessian"
grep -qaF "h.safetensors" "$TMP/h.gguf" || bad "the GGUF does not record the Hessian file"
expect 2 "--hessians with --format gguf --algo awq" -- convert "$LLAMA" -o "$TMP/x4.gguf" --format gguf --quant q4_0 --algo awq --hessians "$TMP/h.safetensors"
says "feeds --algo gptq, not --algo awq" "the GGUF export names the flag"
expect 0 "the CNN's Hessians" -- calibrate "$CNN" --data "$ROOT/examples/digits-cnn/calib.npz" --hessians -o "$TMP/cnn.safetensors"
# An ONNX graph's linear (the CNN's Gemm) quantized from its file, then verified.
expect 0 "GPTQ of an ONNX Gemm from its file" -- convert "$CNN" -o "$TMP/cnn-gptq" --quant int8 --hessians "$TMP/cnn.safetensors" -v
says "fc.weight [Gemm] int8 gptq" "the Gemm's weight is GPTQ-quantized"
expect 0 "verify the CNN artifact" -- verify "$TMP/cnn-gptq"
expect 1 "Hessians of another model" -- convert "$LLAMA" -o "$TMP/x5" --quant int4 --hessians "$TMP/cnn.safetensors"
says "names no weight of" "another model's Hessians"
head -c 100000 "$TMP/h.safetensors" > "$TMP/cut.safetensors"
expect 1 "a truncated file" -- convert "$LLAMA" -o "$TMP/x6" --quant int4 --hessians "$TMP/cut.safetensors"
says "cut.safetensors" "truncated Hessians"
expect 1 "a checkpoint given as Hessians" -- convert "$LLAMA" -o "$TMP/x7" --quant int4 --hessians "$LLAMA/model.safetensors"
says "not a Hessian file" "a foreign safetensors file"
# A file whose entry for lm_head is the wrong size.
/usr/bin/python3 - "$TMP/h.safetensors" "$TMP/small.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
meta = h.pop("__metadata__")
out = {"__metadata__": meta, "lm_head.weight": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}
js = json.dumps(out).encode()
js += b" " * (-len(js) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(js)) + js + bytes(64))
PY
expect 1 "an entry of the wrong size" -- convert "$LLAMA" -o "$TMP/x8" --quant int4 --hessians "$TMP/small.safetensors"
says "the Hessian of 'lm_head.weight' is 4 x 4; the weight has 128 input columns" "wrong size"
# A non-finite and an asymmetric entry: found when the weight is quantized.
/usr/bin/python3 - "$TMP/h.safetensors" "$TMP" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
b, _ = json.loads(raw[8:8 + n])["lm_head.weight"]["data_offsets"]
at = 8 + n + b
for name, pos, value in (("nan", at, float("nan")), ("asym", at + 4, 12345.0)):
    out = bytearray(raw)
    out[pos:pos + 4] = struct.pack("<f", value)
    open(sys.argv[2] + "/" + name + ".safetensors", "wb").write(out)
PY
expect 1 "a NaN in a Hessian" -- convert "$LLAMA" -o "$TMP/x9" --quant int4 --hessians "$TMP/nan.safetensors"
says "gptq of tensor 'lm_head.weight' (Hessian from $TMP/nan.safetensors): GPTQ: X^T X (128x128) entry (0, 0) = nan" "NaN entry"
expect 1 "an asymmetric Hessian" -- convert "$LLAMA" -o "$TMP/x10" --quant int4 --hessians "$TMP/asym.safetensors"
says "entry (0, 1) = 12345 is non-finite or differs from (1, 0)" "asymmetric entry"
for x in x1 x2 x3 x4.gguf x5 x6 x7 x8 x9 x10; do [ ! -e "$TMP/$x" ] || bad "$x written"; done
echo "not Hessians" > "$TMP/notes.txt"
expect 1 "calibrate --hessians over another file" -- calibrate "$LLAMA" --data "$CALIB" --hessians -o "$TMP/notes.txt"
grep -q "not Hessians" "$TMP/notes.txt" && echo "ok: the other file is untouched" || bad "overwritten"
expect 1 "calibrate --hessians with --calib-random" -- calibrate "$LLAMA" --calib-random 4 --hessians -o "$TMP/r.safetensors"
says "real calibration data only" "--calib-random"
expect 0 "calibrate --hessians replaces its own file" -- calibrate "$LLAMA" --data "$CALIB" --hessians -o "$TMP/h.safetensors" --calib-samples 2
says "over 16 samples" "--calib-samples 2 (runs of 8 windows)"
exit $fail
