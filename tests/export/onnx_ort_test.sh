#!/bin/bash
# Stock ONNX Runtime (onnxruntime-node 1.30.0 from bench/ort/package-lock.json,
# installed into the build tree by scripts/test.sh; CPU EP, graph
# optimisation 'all') loads and runs what `slimpack convert --format onnx`
# writes, and its outputs match `slimpack run` on the same artifact:
#   float  the bundled digits CNN (plain, --onnx-profile ort, pruned), the
#          tiny-llama (its full-sequence graph, external data; weight-only
#          int8 as DequantizeLinear, int4 as MatMulNBits; already-quantized
#          GPTQ / compressed-tensors / FP8 checkpoints with their codes), and the ONNX
#          fixtures through the default fusion pipeline (every slimpack op
#          lowered, standard and ort profiles): max|diff| / max|ours| <= 1e-4;
#   w8a8   the digits CNN's static W8A8 as QDQ and as QOperator (uint8 and
#          int8 activations), and an
#          opset-12 fixture as QOperator and as QDQ (raised to opset 13 by ONNX's
#          version converter): within one output quantization step,
#          top-1 equal on all 450 held-out digits;
#   refusals  what cannot be exported is refused with its name, no file left;
#   kvcache  the tiny-llama with --onnx-kv-cache (f32, int8, int4; random
#          qwen2 and mistral checkpoints in f32; f32, int4, qwen2 and mistral
#          again with --onnx-gqa's GroupQueryAttention): ORT runs a
#          16-token prompt then 32 greedy steps feeding present.* back as
#          past_key_values.* (tests/export/ort_kv_generate.mjs); every step's
#          logits within 1e-4 relative of `slimpack run` over the whole
#          sequence, slimpack's arg-max equal to ORT's 32 tokens, ORT's
#          no-cache recomputation equal to its cached steps, a left-padded
#          prompt in a batch of two equal to it alone; the carried
#          tokenizer/config files byte for byte; a broken driver (position 0
#          at every step) caught; bad flags and outputs refused.
# usage: onnx_ort_test.sh SLIMPACK SOURCE_DIR ORACLE_DIR float|w8a8|refusals|kvcache
set -u
SLIMPACK="$1"; SRC="$2"; ORACLE="$3"; PART="$4"
PY=/usr/bin/python3
fail=0
if [ ! -d "$ORACLE/node_modules/onnxruntime-node" ]; then
  echo "FAIL: ONNX Runtime not installed in $ORACLE (scripts/test.sh installs it: npm ci --ignore-scripts from bench/ort/package-lock.json)"
  exit 1
fi
ORACLE=$(cd "$ORACLE" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OUT="$work/out.log"
# shellcheck source=../testing/cli_lib.sh
source "$SRC/tests/testing/cli_lib.sh"
# The ORT scripts resolve onnxruntime-node beside themselves.
mkdir "$work/ort"
cp "$SRC"/bench/ort/ort_run.mjs "$SRC"/bench/ort/common.mjs "$SRC"/bench/ort/npy.mjs \
  "$SRC"/tests/export/ort_kv_generate.mjs "$work/ort/"
ln -s "$ORACLE/node_modules" "$work/ort/node_modules"
"$PY" "$SRC/tests/export/make_ort_inputs.py" "$SRC" "$work" || exit 1

run_ort() {
  node "$work/ort/ort_run.mjs" "$1" --inputs "$2" --out-dir "$3" --threads 1 >"$OUT" 2>&1 ||
    { bad "ONNX Runtime could not load/run $1"; cat "$OUT"; return 1; }
}
run_ours() {
  "$SLIMPACK" run "$1" --inputs "$2" -o "$3" --force >"$OUT" 2>&1 ||
    { bad "slimpack run $1"; cat "$OUT"; return 1; }
}
convert() {
  "$SLIMPACK" convert "$@" >"$OUT" 2>&1 || { bad "slimpack convert $*"; cat "$OUT"; return 1; }
}
# check NAME REFERENCE MODEL.onnx INPUTS COMPARE_ARGS...: slimpack runs
# REFERENCE (an artifact or model), ORT runs MODEL.onnx, on the same inputs.
check() {
  local name="$1" ref="$2" model="$3" inputs="$4"
  shift 4
  run_ours "$ref" "$inputs" "$work/$name.ours.npz" || return
  run_ort "$model" "$inputs" "$work/$name.ort" || return
  "$PY" "$SRC/tests/export/compare_ort.py" "$work/$name.ours.npz" "$work/$name.ort" \
    --label "$name" "$@" || fail=1
}
lowered() {  # lowered OP: the last convert -v lowered slimpack.OP
  grep -q "lowered [0-9]* slimpack\.$1\$" "$OUT" || { bad "expected slimpack.$1 to be lowered"; cat "$OUT"; }
}

digits="$SRC/examples/digits-cnn/model.onnx"
tiny="$SRC/examples/tiny-llama"
fixtures="$SRC/tests/testdata/models"

float_part() {
  convert "$digits" -o "$work/digits" &&
    convert "$work/digits" -o "$work/digits.onnx" --format onnx -v && lowered FusedConv &&
    check digits-fp32 "$work/digits" "$work/digits.onnx" "$work/digits_eval.npz" --max-rel 1e-4
  convert "$digits" -o "$work/digits-ort.onnx" --format onnx --onnx-profile ort -v &&
    lowered FusedConv &&
    check digits-fp32-ort "$work/digits" "$work/digits-ort.onnx" "$work/digits_eval.npz" --max-rel 1e-4
  convert "$digits" -o "$work/digits-pruned" --prune 0.25 &&
    convert "$work/digits-pruned" -o "$work/digits-pruned.onnx" --format onnx &&
    check digits-pruned "$work/digits-pruned" "$work/digits-pruned.onnx" "$work/digits_eval.npz" --max-rel 1e-4
  # The decoder with its tensors in tiny.data, 64-byte aligned.
  convert "$tiny" -o "$work/tiny" &&
    convert "$work/tiny" -o "$work/tiny.onnx" --format onnx --onnx-external-data &&
    check tiny-llama-fp32 "$work/tiny" "$work/tiny.onnx" "$work/llama_tokens.npz" --max-rel 1e-4
  "$PY" - "$work/tiny.onnx" >"$OUT" 2>&1 <<'PYEOF' || { bad "external data layout"; cat "$OUT"; }
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
ext = [t for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
offs = [int(dict((e.key, e.value) for e in t.external_data)["offset"]) for t in ext]
assert len(ext) > 20, f"only {len(ext)} external tensors"
assert all(o % 64 == 0 for o in offs), "an offset is not 64-byte aligned"
print(f"{len(ext)} external tensors, offsets 64-byte aligned")
PYEOF
  # The digits CNN's Gemm weight-only: int8 (DequantizeLinear), int4 g16 (MatMulNBits).
  convert "$digits" -o "$work/digits-int8" --quant int8 &&
    convert "$work/digits-int8" -o "$work/digits-int8.onnx" --format onnx &&
    check digits-int8 "$work/digits-int8" "$work/digits-int8.onnx" "$work/digits_eval.npz" --max-rel 1e-4
  convert "$digits" -o "$work/digits-int4" --quant int4 --group 16 &&
    convert "$work/digits-int4" -o "$work/digits-int4.onnx" --format onnx --onnx-profile ort &&
    check digits-int4 "$work/digits-int4" "$work/digits-int4.onnx" "$work/digits_eval.npz" --max-rel 1e-4
  # Passes named for a decoder run on the graph built for the export.
  convert "$tiny" -o "$work/tiny-fused.onnx" --format onnx --passes fuse-rmsnorm,fuse-silu -v &&
    lowered RMSNorm && lowered SiLU &&
    check tiny-llama-fused "$work/tiny" "$work/tiny-fused.onnx" "$work/llama_tokens.npz" --max-rel 1e-4
  # Weight-only: int8 per channel as DequantizeLinear on the weight, int4
  # (symmetric and asymmetric, GPTQ codes) as MatMulNBits.
  convert "$tiny" -o "$work/tiny-int8" --quant int8 &&
    convert "$work/tiny-int8" -o "$work/tiny-int8.onnx" --format onnx &&
    check tiny-llama-int8 "$work/tiny-int8" "$work/tiny-int8.onnx" "$work/llama_tokens.npz" --max-rel 1e-4
  # (The embedding table is int4 too: GatherBlockQuantized.)
  local name q
  # int8 g32 (int8_groupwise, f16 scales) is MatMulNBits / GatherBlockQuantized bits 8.
  for q in "g32:int4 --group 32" "g64-asym:int4 --group 64 --asym" \
           "g32-gptq:int4 --group 32 --algo gptq --calib $tiny/calib_tokens.npy" \
           "i8g32:int8 --group 32" "i8g32-asym:int8 --group 32 --asym"; do
    name=${q%%:*}
    # shellcheck disable=SC2086
    convert "$tiny" -o "$work/tiny-$name" --quant ${q#*:} &&
      convert "$work/tiny-$name" -o "$work/tiny-$name.onnx" --format onnx --onnx-profile ort -v &&
      { grep -q "group-wise: 29 MatMulNBits, 1 GatherBlockQuantized" "$OUT" ||
          { bad "group-wise $name: expected 29 MatMulNBits and 1 GatherBlockQuantized"; cat "$OUT"; }; } &&
      check "tiny-llama-grouped-$name" "$work/tiny-$name" "$work/tiny-$name.onnx" "$work/llama_tokens.npz" \
        --max-rel 1e-4
  done
  # Group-wise weights as standard ONNX: blocked DequantizeLinear (opset 21,
  # INT4/UINT4 codes as stored) without the ort profile, and with it where
  # MatMulNBits cannot take the group (24: not a power of two, short last group).
  for q in "std-g32:int4 --group 32:" "std-i8g32-asym:int8 --group 32 --asym:" \
           "g24:int4 --group 24:--onnx-profile ort"; do
    name=${q%%:*}
    local rest=${q#*:}
    # shellcheck disable=SC2086
    convert "$tiny" -o "$work/tiny-$name" --quant ${rest%%:*} &&
      convert "$work/tiny-$name" -o "$work/tiny-$name.onnx" --format onnx ${rest#*:} -v &&
      { grep -q "onnx: 30 group-wise weights behind blocked DequantizeLinear (model raised from opset 17 to 21)" "$OUT" ||
          { bad "group-wise $name: expected 30 blocked DequantizeLinear"; cat "$OUT"; }; } &&
      check "tiny-llama-blocked-$name" "$work/tiny-$name" "$work/tiny-$name.onnx" "$work/llama_tokens.npz" \
        --max-rel 1e-4
  done
  # Issue 18: already-quantized checkpoints exported with their codes
  # (GPTQ act-order: MatMulNBits with the checkpoint's row order and g_idx,
  # f32 zero points, no input Gather left; compressed-tensors
  # signed codes: MatMulNBits; GPTQ 8-bit: DequantizeLinear with u8 zero
  # points; FP8 per channel and in 128x128 blocks: float8 DequantizeLinear
  # at opset 21; AWQ groups of 8 and GEMV rows of 344: blocked
  # DequantizeLinear of the UINT4 codes), against `slimpack run` of the
  # checkpoint itself.
  local pq f
  for f in "gptq-4bit-g32-actorder:28 act-order input Gathers folded into MatMulNBits g_idx" \
           "compressed-tensors-4bit-g32-sym:group-wise: 28 MatMulNBits" \
           "gptq-8bit-perchannel:28 int8 weights behind DequantizeLinear" \
           "compressed-tensors-fp8-channel:28 FP8 E4M3 weights behind float8 DequantizeLinear (model raised from opset 17 to 21)" \
           "fp8-block128:28 FP8 E4M3 weights behind float8 DequantizeLinear (model raised from opset 17 to 21)" \
           "awq-4bit-g8:28 group-wise weights behind blocked DequantizeLinear" \
           "awq-gemv-4bit-perchannel:4 group-wise weights behind blocked DequantizeLinear"; do
    pq="$SRC/tests/testdata/prequant/${f%%:*}"
    convert "$pq" -o "$work/${f%%:*}.onnx" --format onnx --onnx-profile ort -v &&
      { grep -q "${f#*:}" "$OUT" || { bad "${f%%:*}: expected '${f#*:}'"; cat "$OUT"; }; } &&
      check "prequant-${f%%:*}" "$pq" "$work/${f%%:*}.onnx" "$work/llama_tokens.npz" --max-rel 1e-4
  done
  # Fusion-pipeline ops, lowered (both profiles where `ort` has a contrib op
  # for them: Gelu, RMSNorm, FusedConv).
  local f profiles
  for f in torch_mlp torch_encoder_block torch_llama_block paddle_style paddle_hardswish_ln; do
    convert "$fixtures/$f.onnx" -o "$work/$f" || continue
    profiles="standard ort"
    [[ $f == torch_mlp || $f == paddle_hardswish_ln ]] && profiles=standard
    for profile in $profiles; do
      convert "$work/$f" -o "$work/$f-$profile.onnx" --format onnx --onnx-profile "$profile" -v &&
        check "$f-$profile" "$work/$f" "$work/$f-$profile.onnx" "$work/$f.npz" --max-rel 1e-4
    done
  done
}

w8a8_part() {
  convert "$digits" -o "$work/digits-w8a8" --quant w8a8 --calib "$SRC/examples/digits-cnn/calib.npz" ||
    return
  for fmt in qdq qoperator; do
    convert "$work/digits-w8a8" -o "$work/digits-$fmt.onnx" --format onnx --onnx-quant-format "$fmt" -v &&
      check "digits-w8a8-$fmt" "$work/digits-w8a8" "$work/digits-$fmt.onnx" "$work/digits_eval.npz" \
        --w8a8 --max-steps 1 --labels "$work/digits_labels.npy"
  done
  grep -q "QDQ: [1-9]" "$OUT" && bad "qoperator output went through the QDQ rewrite"
  # Straight from the model: the same stages, written as QDQ (the default).
  convert "$digits" -o "$work/digits-direct.onnx" --format onnx --quant w8a8 \
      --calib "$SRC/examples/digits-cnn/calib.npz" &&
    check digits-w8a8-direct "$work/digits-w8a8" "$work/digits-direct.onnx" "$work/digits_eval.npz" \
      --w8a8 --max-steps 1 --labels "$work/digits_labels.npy"
  # int8 activations (--activation-type int8), both encodings: every
  # activation QuantizeLinear/QLinear* zero point is int8, none uint8.
  convert "$digits" -o "$work/digits-s8" --quant w8a8 --activation-type int8 \
      --calib "$SRC/examples/digits-cnn/calib.npz" || return
  for fmt in qdq qoperator; do
    convert "$work/digits-s8" -o "$work/digits-s8-$fmt.onnx" --format onnx --onnx-quant-format "$fmt" &&
      "$PY" - "$work/digits-s8-$fmt.onnx" <<'EOF' || bad "digits-s8-$fmt: activations are not all int8"
import onnx, sys
from onnx import TensorProto
m = onnx.load(sys.argv[1])
inits = {t.name: t for t in m.graph.initializer}
zps = [n.input[2] for n in m.graph.node if n.op_type == "QuantizeLinear" and len(n.input) > 2]
types = {inits[z].data_type for z in zps if z in inits}
sys.exit(0 if zps and types == {TensorProto.INT8} else 1)
EOF
    check "digits-s8-$fmt" "$work/digits-s8" "$work/digits-s8-$fmt.onnx" "$work/digits_eval.npz" \
      --w8a8 --max-steps 1 --labels "$work/digits_labels.npy"
  done
  # Opset 12 (Paddle-style): QOperator as it is; QDQ after ONNX's version
  # converter raised the model to opset 13 (per-axis DequantizeLinear).
  convert "$fixtures/paddle_style.onnx" -o "$work/paddle-w8a8" --quant w8a8 --calib "$work/paddle_style.npz" &&
    convert "$work/paddle-w8a8" -o "$work/paddle-qop.onnx" --format onnx --onnx-quant-format qoperator &&
    check paddle-w8a8-qoperator "$work/paddle-w8a8" "$work/paddle-qop.onnx" "$work/paddle_style.npz" \
      --w8a8 --max-steps 1
  if convert "$work/paddle-w8a8" -o "$work/paddle-qdq.onnx" --format onnx -v; then
    says "raised the model from opset 12 with ONNX's version converter" "QDQ opset raise is reported"
    /usr/bin/python3 -c "
import onnx, sys
m = onnx.load('$work/paddle-qdq.onnx')
op = [o.version for o in m.opset_import if o.domain in ('', 'ai.onnx')]
dq = [n for n in m.graph.node if n.op_type == 'DequantizeLinear']
sys.exit(0 if op == [13] and dq else 1)" || bad "paddle QDQ export is not opset 13 with DequantizeLinear"
    check paddle-w8a8-qdq "$work/paddle-w8a8" "$work/paddle-qdq.onnx" "$work/paddle_style.npz" \
      --w8a8 --max-steps 1
  fi
}

refusals_part() {
  local r="$work/refused.onnx"
  expect 2 "--dtype does not apply" -- convert "$digits" -o "$r" --format onnx --dtype f16
  says "--dtype: does not apply to --format onnx" "--dtype refusal"
  expect 2 "--shard-size does not apply" -- convert "$digits" -o "$r" --format onnx --shard-size 64M
  says "--shard-size: does not apply to --format onnx" "--shard-size refusal"
  expect 2 "--onnx-quant-format needs w8a8" -- convert "$digits" -o "$r" --format onnx --onnx-quant-format qdq
  says "--onnx-quant-format: chooses how static W8A8 is written" "--onnx-quant-format refusal"
  expect 2 "--activation-type needs w8a8" -- convert "$digits" -o "$r" --format onnx --quant int8 \
    --activation-type int8
  says "--activation-type: chooses the activation integer type of --quant w8a8" "--activation-type refusal"
  expect 2 "--activation-type value" -- convert "$digits" -o "$r" --format onnx --quant w8a8 \
    --calib "$SRC/examples/digits-cnn/calib.npz" --activation-type s8
  says "--activation-type: s8 not in {uint8,int8}" "--activation-type value refusal"
  [ -e "$r" ] && bad "a refused export left $r"
  expect 2 "unknown profile" -- convert "$digits" -o "$r" --format onnx --onnx-profile fast
  says "--onnx-profile: 'fast' is not an ONNX profile (standard, ort)" "profile refusal"
  expect 2 "unknown quant format" -- convert "$digits" -o "$r" --format onnx --quant w8a8 \
    --calib "$SRC/examples/digits-cnn/calib.npz" --onnx-quant-format int8
  says "is not a quantized ONNX encoding (qdq, qoperator)" "quant format refusal"
  expect 2 "ONNX flags need --format onnx" -- convert "$digits" -o "$work/a" --onnx-profile ort
  says "--onnx-profile: applies to --format onnx only" "onnx flag on an artifact"
  expect 2 "ONNX flags are not GGUF flags" -- convert "$tiny" -o "$work/a.gguf" --format gguf --onnx-external-data
  says "--onnx-external-data" "onnx flag on gguf"
  convert "$digits" -o "$work/art" || return
  expect 2 "an artifact is exported as converted" -- convert "$work/art" -o "$r" --format onnx --quant int8
  says "--quant: '$work/art' is an artifact" "artifact with stage flags"
  : >"$work/theirs.onnx"
  expect 1 "an existing file needs --force" -- convert "$digits" -o "$work/theirs.onnx" --format onnx
  says "pass --force to replace it" "existing output"
  expect 0 "--force replaces it" -- convert "$digits" -o "$work/theirs.onnx" --format onnx --force
  cp "$digits" "$work/copy.onnx"
  expect 1 "the output is never the input" -- convert "$work/copy.onnx" -o "$work/copy.onnx" --format onnx --force
  says "is the input" "output is input"
}

# generate NAME REFERENCE MODEL.onnx LAYERS [--control ...]: ORT generates
# with the cache from kv_prompt.npy; slimpack runs REFERENCE over ORT's sequence.
generate() {
  local name="$1" ref="$2" model="$3" layers="$4"
  shift 4
  node "$work/ort/ort_kv_generate.mjs" "$model" --prompt "$work/kv_prompt.npy" --steps 32 \
      --out-dir "$work/$name.ort" "$@" >"$OUT" 2>&1 ||
    { bad "ONNX Runtime could not generate with $model"; cat "$OUT"; return 1; }
  cat "$OUT"
  "$PY" -c 'import sys, numpy as np; np.savez(sys.argv[2], input_ids=np.load(sys.argv[1]))' \
    "$work/$name.ort/tokens.npy" "$work/$name.seq.npz" || { bad "$name: no tokens"; return 1; }
  run_ours "$ref" "$work/$name.seq.npz" "$work/$name.ours.npz" || return 1
  "$PY" "$SRC/tests/export/compare_kv_generate.py" "$work/$name.ort" "$work/$name.ours.npz" \
    --prompt-len 16 --steps 32 --layers "$layers" --label "$name" --max-rel 1e-4
}

kvcache_part() {
  convert "$tiny" -o "$work/tiny" || return
  mkdir -p "$work/kv" "$work/kv-int8" "$work/kv-int4" "$work/nocache"
  convert "$work/tiny" -o "$work/kv/model.onnx" --format onnx --onnx-kv-cache || return
  local f
  grep -q "^wrote $work/kv/genai_config.json\$" "$OUT" || { bad "convert did not report genai_config.json"; cat "$OUT"; }
  for f in config.json tokenizer.json; do
    grep -q "^wrote $work/kv/$f\$" "$OUT" || { bad "convert did not report writing $f"; cat "$OUT"; }
    cmp -s "$tiny/$f" "$work/kv/$f" || bad "$work/kv/$f is not the model's $f byte for byte"
  done
  "$PY" - "$work/kv/model.onnx" >"$OUT" 2>&1 <<'PYEOF' || { bad "KV-cache inputs/outputs"; cat "$OUT"; }
import sys, onnx
g = onnx.load(sys.argv[1]).graph
def sig(values):
    return [(v.name, v.type.tensor_type.elem_type,
             [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]) for v in values]
I64, F32 = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT
want_in = [("input_ids", I64, ["batch", "seq"]), ("attention_mask", I64, ["batch", "total_seq"]),
           ("position_ids", I64, ["batch", "seq"])]
want_out = [("logits", F32, ["batch", "seq", 258])]
for l in range(4):
    for kind in ("key", "value"):
        want_in.append((f"past_key_values.{l}.{kind}", F32, ["batch", 2, "past_seq", 32]))
        want_out.append((f"present.{l}.{kind}", F32, ["batch", 2, "total_seq", 32]))
assert sig(g.input) == want_in, f"inputs {sig(g.input)}"
assert sig(g.output) == want_out, f"outputs {sig(g.output)}"
print("inputs and outputs as ONNX Runtime GenAI names and lays them out")
PYEOF
  # genai_config.json: what GenAI reads, consistent with the file and the
  # checkpoint's config.json (the driver below takes every name and size
  # from it).
  "$PY" - "$work/kv" "$tiny/config.json" >"$OUT" 2>&1 <<'PYEOF' || { bad "genai_config.json"; cat "$OUT"; }
import json, sys, onnx
kv, hf = sys.argv[1], json.load(open(sys.argv[2]))
c = json.load(open(kv + "/genai_config.json"))
m, d = c["model"], c["model"]["decoder"]
g = onnx.load(kv + "/" + d["filename"]).graph
ins, outs = [v.name for v in g.input], [v.name for v in g.output]
for key in ("input_ids", "attention_mask", "position_ids"):
    assert d["inputs"][key] in ins, (key, ins)
assert d["outputs"]["logits"] in outs
for l in range(d["num_hidden_layers"]):
    assert d["inputs"]["past_key_names"] % l in ins and d["inputs"]["past_value_names"] % l in ins
    assert d["outputs"]["present_key_names"] % l in outs and d["outputs"]["present_value_names"] % l in outs
assert len(ins) == 3 + 2 * d["num_hidden_layers"], ins
assert (d["num_hidden_layers"], d["num_attention_heads"], d["num_key_value_heads"], d["head_size"],
        d["hidden_size"]) == (hf["num_hidden_layers"], hf["num_attention_heads"],
                              hf["num_key_value_heads"], hf["head_dim"], hf["hidden_size"]), d
assert (m["type"], m["vocab_size"], m["context_length"], m["bos_token_id"], m["eos_token_id"]) == \
    ("llama", hf["vocab_size"], hf["max_position_embeddings"], hf["bos_token_id"], hf["eos_token_id"]), m
assert m["pad_token_id"] == hf["eos_token_id"]  # config.json's pad is null
assert c["search"]["past_present_share_buffer"] is False  # present = concat(past, new)
print("genai_config.json matches the model and config.json")
PYEOF
  generate kv-fp32 "$work/tiny" "$work/kv/model.onnx" 4 || fail=1
  # A broken driver (every cached step at position 0) must be caught.
  if generate kv-control "$work/tiny" "$work/kv/model.onnx" 4 --control zero-positions >"$work/control.log" 2>&1; then
    bad "the comparison passed a driver that feeds position 0 at every step"; cat "$work/control.log"
  elif ! grep -q "FAIL kv-control: ORT logits" "$work/control.log"; then
    bad "the zero-positions control failed for another reason"; cat "$work/control.log"
  else
    echo "ok: a driver feeding position 0 at every step is caught:"
    grep "kv-control" "$work/control.log" | sed 's/^/  (as intended) /'
  fi
  # The driver names what is missing: config.json beside the model, cache inputs.
  convert "$work/tiny" -o "$work/nocache/model.onnx" --format onnx
  [ -e "$work/nocache/genai_config.json" ] && bad "genai_config.json written without --onnx-kv-cache"
  node "$work/ort/ort_kv_generate.mjs" "$work/nocache/model.onnx" --prompt "$work/kv_prompt.npy" \
    --out-dir "$work/nocache.ort" >"$OUT" 2>&1 && bad "the driver ran without genai_config.json"
  says "$work/nocache/genai_config.json: missing (the export writes it beside the model)" \
    "driver without genai_config.json"
  cp "$work/kv/genai_config.json" "$work/nocache/"
  node "$work/ort/ort_kv_generate.mjs" "$work/nocache/model.onnx" --prompt "$work/kv_prompt.npy" \
    --out-dir "$work/nocache.ort" >"$OUT" 2>&1 && bad "the driver ran a model without a cache"
  says "$work/nocache/model.onnx: inputs [input_ids], expected [input_ids,attention_mask,position_ids,past_key_values.0.key" \
    "driver on a model without a cache"
  # Weight-only int8 (DequantizeLinear) and int4 (MatMulNBits) through the same path.
  convert "$tiny" -o "$work/tiny-int8" --quant int8 &&
    convert "$work/tiny-int8" -o "$work/kv-int8/model.onnx" --format onnx --onnx-kv-cache &&
    { generate kv-int8 "$work/tiny-int8" "$work/kv-int8/model.onnx" 4 || fail=1; }
  convert "$tiny" -o "$work/tiny-int4" --quant int4 --group 32 &&
    convert "$work/tiny-int4" -o "$work/kv-int4/model.onnx" --format onnx --onnx-profile ort \
      --onnx-kv-cache -v &&
    { grep -q "group-wise: 29 MatMulNBits, 1 GatherBlockQuantized" "$OUT" ||
        { bad "int4 KV-cache export: expected 29 MatMulNBits and 1 GatherBlockQuantized"; cat "$OUT"; }; } &&
    { generate kv-int4 "$work/tiny-int4" "$work/kv-int4/model.onnx" 4 || fail=1; }
  # --onnx-gqa: each layer's attention one com.microsoft.GroupQueryAttention
  # (f32 and int4 MatMulNBits weights), the same checks, left padding included
  # (the mask reaches the node as its attention_bias).
  mkdir -p "$work/kv-gqa" "$work/kv-gqa-int4"
  convert "$work/tiny" -o "$work/kv-gqa/model.onnx" --format onnx --onnx-kv-cache --onnx-profile ort \
      --onnx-gqa &&
    "$PY" - "$work/kv-gqa/model.onnx" >"$OUT" 2>&1 <<'PYEOF' || { bad "GQA export graph"; cat "$OUT"; }
import collections, sys, onnx
m = onnx.load(sys.argv[1])
ops = collections.Counter((n.domain, n.op_type) for n in m.graph.node)
assert ops[("com.microsoft", "GroupQueryAttention")] == 4, ops
assert ops[("", "Softmax")] == 0 and ops[("", "MatMul")] == 0, ops
gqa = [n for n in m.graph.node if n.op_type == "GroupQueryAttention"]
assert all(len(n.input) == 11 and n.input[10] for n in gqa), "attention_bias missing"
assert [o for n in gqa for o in n.output[1:]] == \
    [f"present.{l}.{k}" for l in range(4) for k in ("key", "value")]
print("4 GroupQueryAttention nodes, no plain attention left")
PYEOF
  [ -e "$work/kv-gqa/model.onnx" ] && { generate kv-gqa "$work/tiny" "$work/kv-gqa/model.onnx" 4 || fail=1; }
  [ -e "$work/tiny-int4" ] &&
    convert "$work/tiny-int4" -o "$work/kv-gqa-int4/model.onnx" --format onnx --onnx-kv-cache \
      --onnx-profile ort --onnx-gqa &&
    { generate kv-gqa-int4 "$work/tiny-int4" "$work/kv-gqa-int4/model.onnx" 4 || fail=1; }
  expect 2 "--onnx-gqa needs the ort profile" -- convert "$work/tiny" -o "$work/refused-gqa.onnx" \
    --format onnx --onnx-kv-cache --onnx-gqa
  says "--onnx-gqa: writes the KV-cache decoder's attention as ONNX Runtime's com.microsoft.GroupQueryAttention: pass --onnx-kv-cache --onnx-profile ort too" "--onnx-gqa refusal"
  expect 2 "--onnx-gqa needs the cache" -- convert "$work/tiny" -o "$work/refused-gqa.onnx" \
    --format onnx --onnx-profile ort --onnx-gqa
  [ -e "$work/refused-gqa.onnx" ] && bad "a refused export left $work/refused-gqa.onnx"
  # Qwen2 (q/k/v biases, rope_theta 1e6) and Mistral (head_dim 32 != hidden/heads):
  # random 2-layer checkpoints straight to ONNX, against `slimpack run` of the checkpoint.
  local t
  for t in qwen2 mistral; do
    mkdir -p "$work/rand-$t" "$work/kv-$t"
    "$PY" "$SRC/tests/export/make_random_llama.py" "$work/rand-$t" "$tiny/tokenizer.json" "$t" ||
      { bad "make_random_llama.py $t"; continue; }
    convert "$work/rand-$t" -o "$work/kv-$t/model.onnx" --format onnx --onnx-kv-cache &&
      { generate "kv-$t" "$work/rand-$t" "$work/kv-$t/model.onnx" 2 || fail=1; }
    mkdir -p "$work/kv-gqa-$t"
    convert "$work/rand-$t" -o "$work/kv-gqa-$t/model.onnx" --format onnx --onnx-kv-cache \
        --onnx-profile ort --onnx-gqa &&
      { generate "kv-gqa-$t" "$work/rand-$t" "$work/kv-gqa-$t/model.onnx" 2 || fail=1; }
  done
  # Refusals.
  local r="$work/refused/model.onnx"
  mkdir -p "$work/refused"
  expect 1 "--onnx-kv-cache needs a decoder" -- convert "$digits" -o "$r" --format onnx --onnx-kv-cache
  says "--onnx-kv-cache: '$digits' is not a Hugging Face decoder checkpoint" "kv-cache on a CNN"
  [ -e "$r" ] && bad "a refused export left $r"
  expect 2 "--onnx-kv-cache needs --format onnx" -- convert "$tiny" -o "$work/a" --onnx-kv-cache
  says "--onnx-kv-cache: applies to --format onnx only" "kv-cache on an artifact"
  echo '{}' >"$work/refused/tokenizer.json"
  expect 1 "a carried file is not replaced without --force" -- convert "$work/tiny" -o "$r" --format onnx \
    --onnx-kv-cache
  says "$work/refused/tokenizer.json: exists and is not a file to replace without --force; pass --force" \
    "existing tokenizer.json"
  [ -e "$r" ] && bad "a refused export left $r"
  expect 0 "--force replaces it" -- convert "$work/tiny" -o "$r" --format onnx --onnx-kv-cache --force
  cmp -s "$tiny/tokenizer.json" "$work/refused/tokenizer.json" || bad "--force did not replace tokenizer.json"
  expect 1 "the model file is not a carried file's name" -- convert "$work/tiny" -o "$work/refused/config.json" \
    --format onnx --onnx-kv-cache --force
  says "the model carries a file of the same name ('config.json'" "model named config.json"
  cp -r "$tiny" "$work/tiny-copy"
  expect 1 "a carried file is never its own source" -- convert "$work/tiny-copy" -o "$work/tiny-copy/model.onnx" \
    --format onnx --onnx-kv-cache --force
  says "is the input" "export into the checkpoint's directory"
  [ -e "$work/tiny-copy/model.onnx" ] && bad "a refused export left $work/tiny-copy/model.onnx"
}

case "$PART" in
  float) float_part ;;
  w8a8) w8a8_part ;;
  refusals) refusals_part ;;
  kvcache) kvcache_part ;;
  *) echo "usage: onnx_ort_test.sh SLIMPACK SOURCE_DIR ORACLE_DIR float|w8a8|refusals|kvcache"; exit 2 ;;
esac
exit $fail
