#!/usr/bin/env bash
# f16 scales and int8_groupwise in artifacts (issue 14, layouts): grouped
# schemes store f16 scales by default (-f32scale keeps f32), `--quant int8
# --group 32` is int8_groupwise; the manifest declares what it uses
# (required_features), the bytes are what the layouts say, the model runs
# with the expected accuracy, inspect and the loader example read it, the
# GGUF export carries int8 g32 as Q8_0, the ONNX export needs the ort
# profile for it.
#   scale_layouts_cli_test.sh SLIMPACK ROOT [PRINT_TENSORS]
set -u
SLIMPACK="$1"
ROOT="$2"
PRINT_TENSORS="${3:-}"
LLAMA="$ROOT/examples/tiny-llama"
EVAL="$LLAMA/eval_tokens.npy"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0
OUT="$TMP/out"
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"

expect 0 "int4-g32 (f16 scales)" -- convert "$LLAMA" -o "$TMP/g32" --quant int4-g32
expect 0 "int4-g32-f32scale" -- convert "$LLAMA" -o "$TMP/g32f32" --quant int4-g32-f32scale
expect 0 "--quant int8 --group 32" -- convert "$LLAMA" -o "$TMP/i8g32" --quant int8 --group 32
expect 0 "int8 per channel" -- convert "$LLAMA" -o "$TMP/i8" --quant int8
expect 0 "int4-g32-asym" -- convert "$LLAMA" -o "$TMP/g32a" --quant int4-g32-asym
# --asym / --group refine a name that ends in a scale suffix.
expect 0 "--quant int4-g32-f32scale --asym" -- convert "$LLAMA" -o "$TMP/g32af" --quant int4-g32-f32scale --asym
expect 0 "--quant int8-f16scale --group 64" -- convert "$LLAMA" -o "$TMP/i8g64h" --quant int8-f16scale --group 64

# Manifests: features, layouts and scale dtypes; the f16 artifact is smaller
# by exactly two bytes per group (the shard may pad to 64 bytes).
/usr/bin/python3 - "$TMP" <<'PY' || fail=1
import json, os, sys
t = sys.argv[1]
def man(d): return json.load(open(os.path.join(t, d, "manifest.json")))
def tensors(m): return {x["name"]: x for x in m["tensors"]}
q = "model.layers.0.self_attn.q_proj.weight"
want = {"g32": (["f16_scales"], "int4_groupwise", "f16"),
        "g32f32": ([], "int4_groupwise", "f32"),
        "i8g32": (["f16_scales", "int8_groupwise"], "int8_groupwise", "f16"),
        "i8": ([], "int8_per_channel", "f32"),
        "g32a": (["f16_scales"], "int4_groupwise", "f16"),
        "g32af": ([], "int4_groupwise", "f32"),
        "i8g64h": (["f16_scales", "int8_groupwise"], "int8_groupwise", "f16")}
for d, (features, kind, sdt) in want.items():
    m = man(d)
    ts = tensors(m)
    assert m["required_features"] == features, (d, m["required_features"])
    assert ts[q]["layout"]["kind"] == kind, (d, ts[q]["layout"])
    assert ts[ts[q]["layout"]["scale"]]["dtype"] == sdt, d
    if d == "i8g32":
        assert ts[q]["layout"]["group_size"] == 32 and ts[q]["dtype"] == "i8", ts[q]
    if d == "i8g64h":
        assert ts[q]["layout"]["group_size"] == 64, ts[q]
    if d == "g32af":
        assert ts[q]["dtype"] == "u4" and "zero_point" in ts[q]["layout"], ts[q]
a, b = tensors(man("g32")), tensors(man("g32f32"))
groups = sum(x["nbytes"] // 2 for n, x in a.items() if n.endswith(".scale"))
saved = sum(b[n]["nbytes"] - a[n]["nbytes"] for n in a if n.endswith(".scale"))
assert saved == 2 * groups and groups > 0, (saved, groups)
print("ok: manifests (features, layouts, %d f16 scales save %d bytes)" % (groups, saved))
PY

# Accuracy: f16 scales cost nothing measurable; int8 g32 is within 0.1 % of
# the f32 model's perplexity and no worse than per channel.
ppl() { "$SLIMPACK" eval "$1" --tokens "$EVAL" --window 64 --json 2>"$OUT" |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["perplexity"])'; }
P_REF=$(ppl "$LLAMA"); P_G32=$(ppl "$TMP/g32"); P_G32F=$(ppl "$TMP/g32f32")
P_I8G=$(ppl "$TMP/i8g32"); P_I8=$(ppl "$TMP/i8")
echo "perplexity: f32 $P_REF int4-g32 $P_G32 (f32 scales $P_G32F) int8-g32 $P_I8G int8 $P_I8"
/usr/bin/python3 - "$P_REF" "$P_G32" "$P_G32F" "$P_I8G" "$P_I8" <<'PY' || fail=1
import sys
ref, g32, g32f, i8g, i8 = map(float, sys.argv[1:])
assert abs(g32 - g32f) <= 0.001 * g32f, (g32, g32f)
assert i8g <= ref * 1.001, (i8g, ref)
assert i8g <= i8 * 1.0001, (i8g, i8)
print("ok: perplexity bounds")
PY

expect 0 "inspect int8-g32" -- inspect "$TMP/i8g32"
says "required features: f16_scales, int8_groupwise" "inspect lists the features"
says "int8_groupwise           32 f16" "inspect shows group and scale dtype"
expect 0 "inspect --json" -- inspect "$TMP/i8g32" --json
says '"scale_dtype": "f16"' "inspect --json has scale_dtype"
expect 0 "verify" -- verify "$TMP/i8g32"

if [ -n "$PRINT_TENSORS" ]; then
  "$PRINT_TENSORS" "$TMP/i8g32" >"$OUT" 2>&1 || bad "loader example on int8_groupwise: exit $?"
  says "int8_groupwise" "the standalone loader example reads the layout"
fi

# GGUF: int8 g32 symmetric with f16 scales is Q8_0 exactly (carried).
expect 0 "GGUF from the int8-g32 artifact" -- convert "$TMP/i8g32" -o "$TMP/i8g32.gguf" --format gguf -v
says "blk.0.attn_q.weight [128, 128] q8_0 (the artifact's rtn codes as they are)" "int8-g32 goes out as Q8_0, codes carried"
# ONNX: MatMulNBits bits 8 with the ort profile; without it standard ONNX,
# blocked DequantizeLinear at opset 21 (tests/export/onnx_ort_test.sh runs
# both in ORT).
expect 0 "ONNX export of int8_groupwise without the ort profile" -- convert "$TMP/i8g32" -o "$TMP/i8g32.onnx" --format onnx -v
says "onnx: 30 group-wise weights behind blocked DequantizeLinear (model raised from opset 17 to 21)" "standard ONNX for int8_groupwise"

# Refusals: 5..7-bit groups and unknown scale suffixes.
expect 2 "int6-g32 refused" -- convert "$LLAMA" -o "$TMP/x" --quant int6-g32
says "for 5 and 6 bits use llama.cpp's block types (--quant q5_0, q5_1, q5_k_m, q6_k)" "int6-g32 message"
expect 2 "unknown suffix refused" -- convert "$LLAMA" -o "$TMP/y" --quant int4-g32-f64scale
says "unknown scheme 'int4-g32-f64scale'" "suffix message"
exit $fail
