#!/usr/bin/env bash
# ggml blocks in artifacts (issue 14, layouts): `convert CHECKPOINT -o DIR
# --quant q4_k_m` keeps llama.cpp's block types (K types on a 256-wide
# random llama) in the artifact; it evaluates exactly as the GGUF export of
# the same model does; inspect, verify and the loader example read it; it
# exports to GGUF with its blocks as they are. A GGUF converts into an
# artifact with its blocks and tokenizer keys carried, and back to the same
# GGUF byte for byte; asking to re-encode its blocks is refused.
#   ggml_blocks_cli_test.sh SLIMPACK ROOT [PRINT_TENSORS]
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
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"

mkdir "$TMP/rl"
/usr/bin/python3 "$ROOT/tests/export/make_random_llama.py" "$TMP/rl" "$LLAMA/tokenizer.json" \
  >/dev/null || bad "make_random_llama.py failed"

expect 0 "q4_k_m into an artifact" -- convert "$TMP/rl" -o "$TMP/art" --quant q4_k_m -v
says "an artifact of ggml blocks" "the summary says what was written"
says "model.layers.1.mlp.down_proj.weight q6_K" "-v lists each tensor's type (q4_k_m gives layer 1 ffn_down q6_K)"
expect 0 "q4_k_m GGUF of the same model" -- convert "$TMP/rl" -o "$TMP/rl.gguf" --format gguf --quant q4_k_m

/usr/bin/python3 - "$TMP/art/manifest.json" <<'PY' || fail=1
import json, sys
m = json.load(open(sys.argv[1]))
assert m["required_features"] == ["ggml_blocks"], m["required_features"]
types = {}
for t in m["tensors"]:
    if t["layout"]["kind"] == "ggml_blocks":
        types[t["layout"]["block_type"]] = types.get(t["layout"]["block_type"], 0) + 1
        assert t["dtype"] == "u8" and "scale" not in t["layout"], t
        assert t["quant"]["algorithm"] == "rtn", t["quant"]
assert set(types) >= {"q4_k", "q6_k"}, types
print("ok: manifest block types", types)
PY

# The artifact and the GGUF evaluate to the same numbers (the same blocks).
expect 0 "eval the artifact" -- eval "$TMP/art" --tokens "$EVAL"
grep -o "perplexity [0-9.]*" "$OUT" >"$TMP/ppl_art"
expect 0 "eval the GGUF" -- eval "$TMP/rl.gguf" --tokens "$EVAL"
grep -o "perplexity [0-9.]*" "$OUT" >"$TMP/ppl_gguf"
cmp -s "$TMP/ppl_art" "$TMP/ppl_gguf" ||
  bad "artifact $(cat "$TMP/ppl_art") vs GGUF $(cat "$TMP/ppl_gguf")"

expect 0 "inspect" -- inspect "$TMP/art"
says "required features: ggml_blocks" "inspect lists the feature"
says "ggml q4_k" "inspect names the block type"
expect 0 "inspect --json" -- inspect "$TMP/art" --json
says '"block_type": "q6_k"' "inspect --json has block_type"
expect 0 "verify" -- verify "$TMP/art"
if [ -n "$PRINT_TENSORS" ]; then
  "$PRINT_TENSORS" "$TMP/art" >"$OUT" 2>&1 || bad "loader example on ggml_blocks: exit $?"
  says "ggml_blocks" "the standalone loader example reads the layout"
fi

# Back to GGUF: the blocks are copied, not encoded again.
expect 0 "GGUF from the artifact" -- convert "$TMP/art" -o "$TMP/back.gguf" --format gguf --quant q4_k_m -v
says "blk.1.ffn_down.weight [512, 256] q6_K (the artifact's rtn codes as they are)" "blocks carried to GGUF"

# A GGUF into an artifact: carried without --quant, refused with one.
expect 0 "GGUF into an artifact" -- convert "$TMP/rl.gguf" -o "$TMP/from_gguf"
expect 0 "eval it" -- eval "$TMP/from_gguf" --tokens "$EVAL"
grep -o "perplexity [0-9.]*" "$OUT" >"$TMP/ppl_from_gguf"
cmp -s "$TMP/ppl_from_gguf" "$TMP/ppl_gguf" || bad "GGUF-made artifact evaluates differently"
# It carries the GGUF's tokenizer keys (tokenizer.gguf), so it exports back
# with no tokenizer.json beside it, to the very file it came from.
[ -f "$TMP/from_gguf/tokenizer.gguf" ] || bad "the GGUF-made artifact lacks tokenizer.gguf"
expect 0 "the GGUF-made artifact back to GGUF" -- convert "$TMP/from_gguf" -o "$TMP/round.gguf" \
  --format gguf --quant q4_k_m
cmp -s "$TMP/round.gguf" "$TMP/rl.gguf" || bad "GGUF -> artifact -> GGUF is not the same file"
expect 1 "re-encoding a GGUF's blocks is refused" -- convert "$TMP/rl.gguf" -o "$TMP/again" --quant q4_0
says "blocks; re-encoding them as q4_0 would round the weights twice" "the refusal says why"
[ ! -e "$TMP/again" ] || bad "a refused conversion left an output"
says "or pass --allow-requantize" "the refusal names the flag"
# --allow-requantize decodes the blocks and encodes them again: the same
# bytes as going through an f32 GGUF of the decoded values (exact) by hand,
# into a GGUF and into an artifact, and close to the source's perplexity.
expect 0 "requantize q4_k_m -> q8_0 GGUF" -- convert "$TMP/rl.gguf" -o "$TMP/rq.gguf" \
  --format gguf --quant q8_0 --allow-requantize -v
says "(--allow-requantize: its q4_K codes decoded and encoded again)" "-v says which codes were decoded"
expect 0 "the decoded values as an f32 GGUF" -- convert "$TMP/rl.gguf" -o "$TMP/rq-f32.gguf" \
  --format gguf --quant f32 --allow-requantize
expect 0 "that f32 GGUF to q8_0" -- convert "$TMP/rq-f32.gguf" -o "$TMP/rq2.gguf" --format gguf --quant q8_0
# Equal but for the record of what was encoded again, which only the first has.
DIGESTS="$ROOT/scripts/fixtures/gguf_tensor_digests.py"
/usr/bin/python3 "$DIGESTS" "$TMP/rq.gguf" --metadata-except slimpack.requantized >"$TMP/rq.digests"
/usr/bin/python3 "$DIGESTS" "$TMP/rq2.gguf" --metadata-except slimpack.requantized >"$TMP/rq2.digests"
cmp -s "$TMP/rq.digests" "$TMP/rq2.digests" || bad "requantizing differs from decoding to f32 and quantizing"
grep -q '"__metadata__"' "$TMP/rq.digests" || bad "the digests list no metadata"
expect 0 "inspect the requantized GGUF" -- inspect "$TMP/rq.gguf" --json
/usr/bin/python3 - "$OUT" "$TMP/rq.gguf" <<'PY' || bad "the requantized GGUF does not record each decoded tensor"
import json, struct, sys
rec = json.load(open(sys.argv[1]))["requantized"]
# Every matrix came from q4_K/q6_K blocks and is now q8_0, each with a small positive error.
assert len(rec) >= 7 and all(r["type"] == "q8_0" and 0 < r["rel_l2"] < 0.01 for r in rec), rec[:3]
PY
expect 0 "inspect the by-hand GGUF" -- inspect "$TMP/rq2.gguf" --json
/usr/bin/python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['requantized'] != [])" "$OUT" \
  || bad "a GGUF from float weights records re-encoded tensors"
expect 0 "requantize into an artifact" -- convert "$TMP/rl.gguf" -o "$TMP/rq-art" --quant q8_0 \
  --allow-requantize
expect 0 "eval the requantized GGUF" -- eval "$TMP/rq.gguf" --tokens "$EVAL"
grep -o "perplexity [0-9.]*" "$OUT" >"$TMP/ppl_rq"
expect 0 "eval the requantized artifact" -- eval "$TMP/rq-art" --tokens "$EVAL"
grep -o "perplexity [0-9.]*" "$OUT" >"$TMP/ppl_rq_art"
cmp -s "$TMP/ppl_rq" "$TMP/ppl_rq_art" || bad "requantized GGUF $(cat "$TMP/ppl_rq") vs artifact $(cat "$TMP/ppl_rq_art")"
/usr/bin/python3 - "$(cut -d' ' -f2 "$TMP/ppl_gguf")" "$(cut -d' ' -f2 "$TMP/ppl_rq")" <<'PY' || fail=1
import sys
src, rq = float(sys.argv[1]), float(sys.argv[2])
# The random model's perplexity is near its vocabulary's flat value; q8_0 on
# top of q4_k_m moved it by 0.86 % (a wrong decode moves it by far more).
assert src != rq and abs(rq - src) / src < 0.02, (src, rq)
print("ok: requantized perplexity", rq, "vs the source's", src)
PY
# Into another scheme of ours (int4 group-wise) through the stages, and GPTQ
# on the decoded weights.
expect 0 "requantize into int4" -- convert "$TMP/rl.gguf" -o "$TMP/rq-int4" --quant int4 \
  --allow-requantize
says "--allow-requantize: " "the stage says it decoded the weights"
expect 1 "GPTQ on ggml blocks is refused without the flag" -- convert "$TMP/rl.gguf" \
  -o "$TMP/rq-gptq.gguf" --format gguf --quant q4_0 --algo gptq --calib "$EVAL" --calib-samples 2
says "or pass --allow-requantize" "the GPTQ refusal names the flag"
expect 0 "GPTQ on the decoded weights" -- convert "$TMP/rl.gguf" -o "$TMP/rq-gptq.gguf" --format gguf \
  --quant q4_0 --algo gptq --calib "$EVAL" --calib-samples 2 --allow-requantize
expect 2 "--allow-requantize is refused for ONNX export" -- convert "$TMP/rl.gguf" -o "$TMP/x.onnx" \
  --format onnx --allow-requantize
says "--allow-requantize" "the ONNX refusal names the flag"
expect 2 "artifact-only flags are refused by name" -- convert "$TMP/rl" -o "$TMP/x" --quant q4_k_m --group 32
says "--group: not supported with --format gguf or a llama-quantize --quant type" "--group message"
expect 2 "--part is refused by name" -- convert "$TMP/rl" -o "$TMP/x" --quant q4_k_m --part 1/2
says "--part: not supported with a llama-quantize --quant type yet" "--part message"
# ONNX has no form for ggml blocks: refused naming the tensor, nothing written.
expect 1 "ONNX export of ggml blocks is refused" -- convert "$TMP/art" -o "$TMP/art.onnx" --format onnx
says "blocks (layout ggml_blocks), which ONNX cannot express" "the refusal names the layout"
[ ! -e "$TMP/art.onnx" ] || bad "a refused ONNX export left a file"
# Per-tensor types over the preset: --tensor-type (llama-quantize's flag)
# and recipe rules, into an artifact and into a GGUF.
expect 0 "--tensor-type over q4_k_m" -- convert "$TMP/rl" -o "$TMP/tt" --quant q4_k_m -v \
  --tensor-type 'layers\.0\.self_attn\.v_proj=q8_0' --tensor-type 'ffn_down=q5_k'
says "model.layers.0.self_attn.v_proj.weight q8_0" "a checkpoint-name pattern picks q8_0"
says "model.layers.1.mlp.down_proj.weight q5_K" "a GGUF-name pattern wins over Q4_K_M's q6_K"
says "model.layers.1.self_attn.v_proj.weight q6_K" "unmatched tensors keep the preset's rule"
/usr/bin/python3 - "$TMP/tt/manifest.json" <<'PY' || fail=1
import json, sys
m = json.load(open(sys.argv[1]))
quant = m["producer"]["recipe"]["quant"]
assert quant["scheme"] == "q4_k_m" and quant["algorithm"] == "rtn", quant
rules = quant["rules"]
assert rules == [{"match": "layers\\.0\\.self_attn\\.v_proj", "scheme": "q8_0"},
                 {"match": "ffn_down", "scheme": "q5_k"}], rules
types = {t["name"]: t["layout"].get("block_type") for t in m["tensors"]}
assert types["model.layers.0.self_attn.v_proj.weight"] == "q8_0", types
assert types["model.layers.0.mlp.down_proj.weight"] == "q5_k", types
print("ok: the manifest records the rules and holds their types")
PY
expect 0 "--recipe-from a ggml-block artifact" -- convert "$TMP/rl" -o "$TMP/tt2" --recipe-from "$TMP/tt"
for f in "$TMP"/tt/*; do
  cmp -s "$f" "$TMP/tt2/$(basename "$f")" || bad "--recipe-from gave other bytes: $(basename "$f")"
done
# The calibration data is part of the record: imatrix from the eval windows,
# rebuilt byte for byte from the same file, refused with another.
expect 0 "imatrix-weighted q4_k_m" -- convert "$TMP/rl" -o "$TMP/im" --quant q4_k_m --algo imatrix \
  --calib "$EVAL"
expect 0 "--recipe-from with the same calibration" -- convert "$TMP/rl" -o "$TMP/im2" \
  --recipe-from "$TMP/im" --calib "$EVAL"
for f in "$TMP"/im/*; do
  cmp -s "$f" "$TMP/im2/$(basename "$f")" || bad "imatrix --recipe-from gave other bytes: $(basename "$f")"
done
# The window count is part of the record too.
expect 0 "imatrix from 16 windows" -- convert "$TMP/rl" -o "$TMP/im16" --quant q4_k_m --algo imatrix \
  --calib "$EVAL" --calib-samples 16
expect 0 "--recipe-from it without --calib-samples" -- convert "$TMP/rl" -o "$TMP/im16b" \
  --recipe-from "$TMP/im16" --calib "$EVAL"
for f in "$TMP"/im16/*; do
  cmp -s "$f" "$TMP/im16b/$(basename "$f")" || bad "--calib-samples was not recorded: $(basename "$f") differs"
done
cmp -s "$TMP/im16/shard-00000.bin" "$TMP/im/shard-00000.bin" && bad "16 windows gave the default's bytes"
expect 1 "--recipe-from with other calibration data" -- convert "$TMP/rl" -o "$TMP/im3" \
  --recipe-from "$TMP/im" --calib "$LLAMA/calib_tokens.npy"
says "calib_tokens.npy" "the refusal names the file that differs"
[ ! -e "$TMP/im3" ] || bad "a refused conversion left an output"
# The size planner picks every matrix's type for a bits-per-weight target
# (K types on these 256-wide rows), recorded so --recipe-from rebuilds it.
expect 0 "--target-bpw 4.0 over ggml types" -- convert "$TMP/rl" -o "$TMP/sp" --quant q4_k_m \
  --target-bpw 4.0 -v
says "size plan: 16 matrices at" "the plan is summarised"
bpw=$(sed -n 's/.*q4_k_m, \([0-9.]*\) bits\/weight over the matrices.*/\1/p' "$OUT")
awk -v b="${bpw:-99}" 'BEGIN { exit !(b <= 4.0 && b > 3.5) }' ||
  bad "planned artifact has ${bpw:-no} bits/weight, expected (3.5, 4.0]"
grep -q "q2_K\|q3_K" "$OUT" || bad "a 4.0 bpw plan uses some type below q4_K"
expect 0 "--recipe-from the planned artifact" -- convert "$TMP/rl" -o "$TMP/sp2" --recipe-from "$TMP/sp"
for f in "$TMP"/sp/*; do
  cmp -s "$f" "$TMP/sp2/$(basename "$f")" || bad "planned --recipe-from gave other bytes: $(basename "$f")"
done
expect 1 "a target below every candidate" -- convert "$TMP/rl" -o "$TMP/x" --quant q4_k_m --target-bpw 2
says "target 2 bits per weight is below the" "the unreachable target is named"
expect 2 "--target-bpw with --tensor-type" -- convert "$TMP/rl" -o "$TMP/x" --quant q4_k_m \
  --target-bpw 4.5 --tensor-type attn_v=q8_0
says "--target-bpw: plans every matrix's ggml type" "the conflict is named"
expect 0 "a recipe's rules (flags override its algorithm)" -- convert "$TMP/rl" -o "$TMP/rc" \
  --recipe "$ROOT/examples/recipes/q4_k_m-attn-v-q6k.json" --algo rtn -v
says "an artifact of ggml blocks" "a recipe with a llama-quantize scheme writes ggml blocks"
says "model.layers.0.self_attn.v_proj.weight q6_K" "the recipe gives every attn_v q6_K"
expect 0 "--tensor-type into a GGUF" -- convert "$TMP/rl" -o "$TMP/tt.gguf" --format gguf \
  --quant q4_k_m --tensor-type 'attn_v=q8_0' -v
says "blk.0.attn_v.weight [256, 128] q8_0" "the GGUF takes the override"
expect 2 "--tensor-type without =" -- convert "$TMP/rl" -o "$TMP/x" --quant q4_k_m --tensor-type attn_v
says "--tensor-type: 'attn_v' is not PATTERN=TYPE" "the missing = is named"
expect 2 "--tensor-type with an unknown type" -- convert "$TMP/rl" -o "$TMP/x" --quant q4_k_m \
  --tensor-type attn_v=q4_k_m
says "type 'q4_k_m' for 'attn_v' is not a GGUF tensor type" "the type is named"
expect 1 "a rule that matches no matrix" -- convert "$TMP/rl" -o "$TMP/x" --quant q4_k_m \
  --tensor-type 'attn_vv=q8_0'
says "tensor type rule 'attn_vv' matches no matrix of" "the unmatched pattern is named"
[ ! -e "$TMP/x" ] || bad "a refused conversion left an output"
# Carried codes keep their type: a rule asking another one is refused, the
# same type is a copy.
expect 1 "a rule re-typing carried blocks" -- convert "$TMP/art" -o "$TMP/x.gguf" --format gguf \
  --quant q4_k_m --tensor-type attn_v=q8_0
says "codes, which the export carries as they are; tensor type rule 'attn_v' asks for q8_0" \
  "the refusal names the rule and the type"
[ ! -e "$TMP/x.gguf" ] || bad "a refused export left a file"
expect 0 "a rule giving carried blocks their own type" -- convert "$TMP/art" -o "$TMP/same.gguf" \
  --format gguf --quant q4_k_m --tensor-type 'layers\.1\.self_attn\.v_proj=q6_k'
cmp -s "$TMP/same.gguf" "$TMP/back.gguf" || bad "a same-type rule changed the carried export"
expect 2 "--tensor-type with slimpack's schemes" -- convert "$TMP/rl" -o "$TMP/x" --quant int4 \
  --tensor-type attn_v=q8_0
says "--tensor-type: chooses ggml types" "the refusal points to recipe rules"
# The accuracy report compares the checkpoint with its ggml-block artifact
# (two runs of 8 windows: the report's numbers have tests of their own; the
# whole eval set took 42 of this test's 146 s under ASan).
expect 0 "report checkpoint vs artifact" -- report --reference "$TMP/rl" --candidate "$TMP/art" \
  --data "$EVAL" -o "$TMP/report" --max-batch 8 --max-runs 2 --sensitivity-runs 1
/usr/bin/python3 - "$TMP/report/report.json" <<'PY' || bad "report.json lacks the ggml-block weights' errors"
import json, sys
r = json.load(open(sys.argv[1]))
text = json.dumps(r)
assert "model.layers.1.mlp.down_proj.weight" in text, "no per-weight entry"
PY
exit $fail
