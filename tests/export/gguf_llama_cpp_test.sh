#!/bin/bash
# Stock llama.cpp (node-llama-cpp 3.22.1's prebuilt CPU build) runs the GGUF
# files slimpack writes, and its logits match slimpack's own evaluation of the
# same file (`slimpack run model.gguf`, which decodes the ggml blocks):
#  - the bundled tiny-llama (rows of 128 and 344: the 32-weight types and the
#    llama-quantize fallbacks) in f32, f16, bf16, q8_0, q4_0, q4_1, q5_0,
#    q5_1, q4_k_m;
#  - a random llama with 256-divisible rows (make_random_llama.py), so every
#    K-quant block type (q2_K..q6_K) is written and read for real;
#  - the same with its second layer pruned to half the heads, KV heads and
#    MLP channels (config.json's per-layer lists), which slimpack writes as
#    llama.cpp's "deci" architecture with a width per layer;
#  - the tiny-llama pruned per layer by `slimpack convert --prune-rules`
#    and exported from that artifact;
#  - GPTQ on ggml's grids (--algo gptq): the tiny-llama in q4_0/q4_k_m and
#    the random llama in every K type;
#  - pre-quantized checkpoints (GPTQ act-order, FP8 E4M3) carried across.
# llama.cpp runs with an f32 KV cache and one thread. It still differs from
# us where ggml multiplies quantized weights by activations rounded to q8
# (or f16 for f16 weights), so the bounds are per type, measured and set
# with a margin (see the table printed by the run).
# usage: gguf_llama_cpp_test.sh SLIMPACK SOURCE_DIR ORACLE_DIR [PART]
# PART (default all): tiny, random, artifacts or tokenizer, the sections
# below, so ctest runs them side by side.
set -u
SLIMPACK="$1"; SRC="$2"; ORACLE="$3"; PART="${4:-all}"
case "$PART" in all|tiny|random|artifacts|tokenizer) ;; *) echo "FAIL: unknown part '$PART'"; exit 2;; esac
part() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
PY=/usr/bin/python3
if [ ! -d "$ORACLE/node_modules/node-llama-cpp" ]; then
  echo "FAIL: llama.cpp oracle not installed in $ORACLE (scripts/test.sh installs it: npm ci --ignore-scripts --omit=optional in a copy of tests/gguf/oracle)"
  exit 1
fi
export SLIMPACK_ORACLE_DIR="$ORACLE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# Four sequences of 32 tokens from the tiny-llama eval set (ids < 258, valid
# for both models).
"$PY" - "$SRC/examples/tiny-llama/eval_tokens.npy" "$work" <<'PYEOF'
import json, sys
import numpy as np
ids = np.load(sys.argv[1]).reshape(-1)[:4 * 32].astype(np.int64).reshape(4, 32)
np.savez(sys.argv[2] + "/tokens.npz", input_ids=ids)
json.dump(ids.tolist(), open(sys.argv[2] + "/tokens.json", "w"))
PYEOF
mkdir "$work/rl" "$work/pl"
"$PY" "$SRC/tests/export/make_random_llama.py" "$work/rl" "$SRC/examples/tiny-llama/tokenizer.json" || fail=1
"$PY" "$SRC/tests/export/make_random_llama.py" "$work/pl" "$SRC/examples/tiny-llama/tokenizer.json" pruned || fail=1

# check MODEL_DIR NAME PRESET MAX_REL_RMS MIN_TOP1 [CONVERT_FLAGS]
check() {
  local model="$1" name="$2" preset="$3" rel="$4" top1="$5" flags="${6:-}"
  local gguf="$work/$name-$preset.gguf"
  # shellcheck disable=SC2086
  if ! "$SLIMPACK" convert "$model" -o "$gguf" --format gguf --quant "$preset" $flags >"$work/log" 2>&1; then
    echo "FAIL: convert $name --quant $preset"; cat "$work/log"; fail=1; return
  fi
  if ! node "$SRC/tests/gguf/oracle/llama_logits.mjs" "$gguf" "$work/tokens.json" "$work/theirs.f32" \
      --kv-type f32 --threads 1 >"$work/log" 2>&1; then
    echo "FAIL: llama.cpp could not run $name $preset"; cat "$work/log"; fail=1; return
  fi
  if ! "$SLIMPACK" run "$gguf" --inputs "$work/tokens.npz" -o "$work/ours.npz" --force >"$work/log" 2>&1; then
    echo "FAIL: slimpack run $name $preset"; cat "$work/log"; fail=1; return
  fi
  "$PY" "$SRC/tests/export/compare_logits.py" "$work/ours.npz" "$work/theirs.f32" \
      --label "$name $preset" --max-rel-rms "$rel" --min-top1 "$top1" || fail=1
}

tiny="$SRC/examples/tiny-llama"
# GPTQ on ggml's grids (--algo gptq): codes chosen with error feedback, the
# block scales ggml's encoder's; llama.cpp must decode them as we do.
gptq="--algo gptq --calib $tiny/calib_tokens.npy --calib-samples 2"
if part tiny; then
check "$tiny" tiny f32    1e-5  1.0
check "$tiny" tiny f16    2e-3  0.99
check "$tiny" tiny bf16   2e-3  0.99
check "$tiny" tiny q8_0   1e-2  0.99
check "$tiny" tiny q4_0   1e-2  0.99
check "$tiny" tiny q4_1   1e-2  0.99
check "$tiny" tiny q5_0   1e-2  0.99
check "$tiny" tiny q5_1   1e-2  0.99
check "$tiny" tiny q4_k_m 1e-2  0.99
check "$tiny" tiny-gptq q4_0   1e-2  0.99 "$gptq"
check "$tiny" tiny-gptq q4_k_m 1e-2  0.99 "$gptq"
# AWQ's scales folded into the norms (and up/v rows): llama.cpp runs the
# scaled model as slimpack does.
check "$tiny" tiny-awq q4_0 1e-2 0.99 "--algo awq --calib $tiny/calib_tokens.npy --calib-samples 2"
# llama-quantize's own job through the CLI: the f32 GGUF in, q4_k_m out. The
# file equals the checkpoint's q4_k_m byte for byte (weights decoded exactly,
# tokenizer keys and general.name copied), so llama.cpp's check above holds
# for it; a quantized GGUF is not quantized again, and nothing is written.
if "$SLIMPACK" convert "$work/tiny-f32.gguf" -o "$work/again-q4_k_m.gguf" --format gguf \
     --quant q4_k_m >"$work/log" 2>&1 && cmp "$work/tiny-q4_k_m.gguf" "$work/again-q4_k_m.gguf"; then
  echo "ok: f32 GGUF -> q4_k_m GGUF is the checkpoint's q4_k_m file, byte for byte"
else
  echo "FAIL: re-encoding the f32 GGUF"; cat "$work/log"; fail=1
fi
if "$SLIMPACK" convert "$work/tiny-q8_0.gguf" -o "$work/twice.gguf" --format gguf --quant q4_0 \
     >"$work/log" 2>&1 || ! grep -q "is stored as q8_0; re-encoding a quantized GGUF" "$work/log" ||
   [ -e "$work/twice.gguf" ]; then
  echo "FAIL: a q8_0 GGUF re-quantized, or refused without the reason"; cat "$work/log"; fail=1
fi
# With --allow-requantize (llama-quantize's flag) it is: the q8_0 blocks
# decoded and encoded as q4_0, which llama.cpp runs as slimpack does.
check "$work/tiny-q8_0.gguf" tiny-requantized q4_0 1e-2 0.99 "--allow-requantize"
fi
if part random; then
# The random model has no trained structure: ggml's q8 rounding of the
# activations (q8_K for the K types) moves its logits by ~1.2% RMS whatever
# the weight type (q6_K as much as q2_K; f32 weights agree to 5e-7), and
# near-ties flip a few top-1 positions. A wrong block decode or row order
# moves them by tens of percent (unpermuted q/k: 61%).
check "$work/rl" random f32 1e-5 1.0
for preset in q8_0 q2_k q3_k_m q4_k_s q4_k_m q5_k_m q6_k; do
  check "$work/rl" random "$preset" 2e-2 0.93
done
# Every K block type through GPTQ's code writer (the tiny-llama's rows of
# 128 take none): q2_k writes q2_K, q3_K and q6_K blocks, q3_k_m q3_K, q4_K,
# q5_K and q6_K.
for preset in q2_k q3_k_m; do
  check "$work/rl" random-gptq "$preset" 2e-2 0.93 "$gptq"
done
# Layers of different widths (measured: f32 4.6e-7 relative RMS).
check "$work/pl" pruned f32 1e-5 1.0
check "$work/pl" pruned q8_0 2e-2 0.93
check "$work/pl" pruned q4_k_m 2e-2 0.93
fi
if part artifacts; then
# From an artifact: the tiny-llama with layers 1 and 2 pruned to half their
# heads and layer 1 to 70 % of its MLP channels.
cat > "$work/rules.json" <<'JSON'
[{"match": "layers\\.(0|3)\\.", "target": "both", "ratio": 0},
 {"match": "layers\\.", "target": "heads", "keep": 0.5},
 {"match": "layers\\.1\\.", "target": "mlp", "ratio": 0.3}]
JSON
if "$SLIMPACK" convert "$tiny" -o "$work/tp" --prune-rules "$work/rules.json" --prune 0.1 \
    --prune-target mlp >"$work/log" 2>&1; then
  check "$work/tp" tiny-pruned f32 1e-5 1.0
  check "$work/tp" tiny-pruned q8_0 1e-2 0.99
else
  echo "FAIL: prune the tiny-llama per layer"; cat "$work/log"; fail=1
fi
# Artifacts already quantized: int4 group 32 codes go in as Q4_0 (symmetric)
# and Q4_1 (zero points) blocks as they are (f16 scales: exactly), int8 per
# row and int8 group 32 (int8_groupwise) as Q8_0; the
# ffn_down rows of 344 fit no block and are dequantized into f16. llama.cpp
# is compared with slimpack running the artifact itself.
for scheme in "int4 --group 32" "int4 --group 32 --asym" "int8" "int8 --group 32"; do
  name="tiny-art-$(echo "$scheme" | tr -d ' -')"
  # shellcheck disable=SC2086
  if "$SLIMPACK" convert "$tiny" -o "$work/$name" --quant $scheme >"$work/log" 2>&1; then
    check "$work/$name" "$name" f16 1e-2 0.99
    "$SLIMPACK" run "$work/$name" --inputs "$work/tokens.npz" -o "$work/$name-art.npz" --force >"$work/log" 2>&1 &&
      "$PY" "$SRC/tests/export/compare_logits.py" "$work/$name-art.npz" "$work/theirs.f32" \
        --label "$name: llama.cpp vs the artifact in slimpack" --max-rel-rms 1e-2 --min-top1 0.99 || fail=1
  else
    echo "FAIL: convert --quant $scheme"; cat "$work/log"; fail=1
  fi
done
# Pre-quantized checkpoints (tests/testdata/prequant; the tiny-llama's
# tokenizer beside each): an act-order GPTQ one, its columns back in
# checkpoint order, dequantized into f16 and q8_0; FP8 E4M3 ones (per-channel
# scales, and 128x128 blocks) into f16, as no ggml type holds E4M3. llama.cpp
# is compared with slimpack running the checkpoint itself.
for pair in gptq-4bit-g32-actorder:f16 gptq-4bit-g32-actorder:q8_0 \
            compressed-tensors-fp8-channel:f16 fp8-block128:f16; do
  ckpt=${pair%%:*} preset=${pair##*:}
  rm -rf "$work/$ckpt"
  cp -r "$SRC/tests/testdata/prequant/$ckpt" "$work/$ckpt"
  cp "$tiny/tokenizer.json" "$work/$ckpt/"
  check "$work/$ckpt" "$ckpt" "$preset" 1e-2 0.99
  "$SLIMPACK" run "$work/$ckpt" --inputs "$work/tokens.npz" -o "$work/$ckpt-ckpt.npz" --force >"$work/log" 2>&1 &&
    "$PY" "$SRC/tests/export/compare_logits.py" "$work/$ckpt-ckpt.npz" "$work/theirs.f32" \
      --label "$ckpt $preset: llama.cpp vs the checkpoint in slimpack" --max-rel-rms 1e-2 \
      --min-top1 0.99 || { cat "$work/log"; fail=1; }
done
fi
# The tokenizer survives conversion: a byte-level BPE trained on mixed-script
# text (tests/testdata/tokenizer_bpe, scripts/fixtures/make_bpe_tokenizer.py:
# 856 tokens, 600 merges, three special tokens) on a random llama of its
# vocabulary, exported to GGUF; llama.cpp tokenizes a 5.6 KB mixed-script text
# (ten scripts, emoji, code, odd whitespace, special tokens inline) to exactly
# the ids @huggingface/tokenizers gives from the original tokenizer.json.
if part tokenizer; then
bpe="$SRC/tests/testdata/tokenizer_bpe"
mkdir "$work/bpe"
if "$PY" "$SRC/tests/export/make_random_llama.py" "$work/bpe" "$bpe/tokenizer.json" >"$work/log" 2>&1 &&
   cp "$bpe/tokenizer_config.json" "$work/bpe/" &&
   "$SLIMPACK" convert "$work/bpe" -o "$work/bpe.gguf" --format gguf --quant f16 >"$work/log" 2>&1 &&
   node "$SRC/tests/gguf/oracle/llama_logits.mjs" "$work/bpe.gguf" --tokenize "$bpe/text.txt" --special \
     >"$work/bpe-llama.json" 2>"$work/log" &&
   node "$SRC/tests/gguf/oracle/tokenize_hf.mjs" "$bpe" "$bpe/text.txt" >"$work/bpe-hf.json" 2>"$work/log"; then
  "$PY" - "$work/bpe-llama.json" "$work/bpe-hf.json" "$bpe/tokenizer.json" <<'PYEOF' || fail=1
import json, sys
theirs, ref = (json.load(open(p)) for p in sys.argv[1:3])
vocab = {i: t for t, i in json.load(open(sys.argv[3], encoding="utf-8"))["model"]["vocab"].items()}
if theirs == ref:
    print(f"ok: llama.cpp tokenizes the mixed-script text to the reference's {len(ref)} ids")
    sys.exit(0)
i = next((k for k, (a, b) in enumerate(zip(theirs, ref)) if a != b), min(len(theirs), len(ref)))
show = lambda ids: [vocab.get(t, t) for t in ids[max(0, i - 3):i + 4]]
print(f"FAIL: tokenizations differ at {i} of {len(ref)} (llama.cpp {len(theirs)} ids): "
      f"llama.cpp {show(theirs)} vs reference {show(ref)}")
sys.exit(1)
PYEOF
else
  echo "FAIL: BPE tokenizer round trip"; cat "$work/log"; fail=1
fi
# The same for a SentencePiece tokenizer.model laid out like Llama 2's
# (tests/testdata/tokenizer_spm, scripts/fixtures/make_spm_tokenizer.py: BPE,
# 700 pieces, byte fallback): llama.cpp tokenizes the same text to exactly
# the ids SentencePiece gave (expected_ids.json; 4,194 ids, many of them
# byte pieces for the scripts the training text lacked).
spm="$SRC/tests/testdata/tokenizer_spm"
mkdir "$work/spm"
if "$PY" "$SRC/tests/export/make_random_llama.py" "$work/spm" "$spm/tokenizer.model" >"$work/log" 2>&1 &&
   cp "$spm/tokenizer_config.json" "$work/spm/" &&
   "$SLIMPACK" convert "$work/spm" -o "$work/spm.gguf" --format gguf --quant f16 >"$work/log" 2>&1 &&
   node "$SRC/tests/gguf/oracle/llama_logits.mjs" "$work/spm.gguf" --tokenize "$bpe/text.txt" \
     >"$work/spm-llama.json" 2>"$work/log"; then
  "$PY" - "$work/spm-llama.json" "$spm/expected_ids.json" <<'PYEOF' || fail=1
import json, sys
theirs, ref = (json.load(open(p)) for p in sys.argv[1:3])
if theirs == ref:
    print(f"ok: llama.cpp tokenizes the mixed-script text to SentencePiece's {len(ref)} ids")
    sys.exit(0)
i = next((k for k, (a, b) in enumerate(zip(theirs, ref)) if a != b), min(len(theirs), len(ref)))
print(f"FAIL: tokenizations differ at {i} of {len(ref)} (llama.cpp {len(theirs)} ids): "
      f"llama.cpp {theirs[max(0, i - 3):i + 4]} vs SentencePiece {ref[max(0, i - 3):i + 4]}")
sys.exit(1)
PYEOF
else
  echo "FAIL: SentencePiece tokenizer round trip"; cat "$work/log"; fail=1
fi
fi
if part random; then
"$PY" - "$work/pruned-f32.gguf" <<'PYEOF' || { echo "FAIL: pruned GGUF metadata"; fail=1; }
import struct, sys
# The architecture and the per-layer i32 arrays, read straight from the file.
data = open(sys.argv[1], "rb").read()
assert data[:4] == b"GGUF", data[:4]
def find_array(key):
    k = key.encode()
    at = data.index(struct.pack("<Q", len(k)) + k) + 8 + len(k)
    vtype, etype, n = struct.unpack_from("<IIQ", data, at)
    assert vtype == 9 and etype == 5, (key, vtype, etype)  # array of int32
    return list(struct.unpack_from("<%di" % n, data, at + 16))
assert b"deci" in data[:4096]
assert find_array("deci.feed_forward_length") == [512, 256], find_array("deci.feed_forward_length")
assert find_array("deci.attention.head_count") == [4, 2]
assert find_array("deci.attention.head_count_kv") == [2, 1]
print("ok: pruned GGUF is deci with per-layer widths [512, 256] / [4, 2] / [2, 1]")
PYEOF
fi

if part tiny; then
# The f32 GGUF of the tiny-llama is the checkpoint: slimpack on the
# original safetensors and on the GGUF give the same logits to the bit.
"$SLIMPACK" run "$tiny" --inputs "$work/tokens.npz" -o "$work/orig.npz" --force >"$work/log" 2>&1 || { cat "$work/log"; fail=1; }
"$SLIMPACK" run "$work/tiny-f32.gguf" --inputs "$work/tokens.npz" -o "$work/f32.npz" --force >"$work/log" 2>&1 || { cat "$work/log"; fail=1; }
"$PY" -c "
import sys, numpy as np
a = np.load('$work/orig.npz')['logits']; b = np.load('$work/f32.npz')['logits']
sys.exit(0 if np.array_equal(a, b) else 1)" && echo "ok: f32 GGUF == checkpoint, bit for bit" || { echo "FAIL: f32 GGUF logits differ from the checkpoint's"; fail=1; }
fi
if part random; then
# Likewise for the per-layer model read back from its deci GGUF.
"$SLIMPACK" run "$work/pl" --inputs "$work/tokens.npz" -o "$work/pl-orig.npz" --force >"$work/log" 2>&1 || { cat "$work/log"; fail=1; }
"$SLIMPACK" run "$work/pruned-f32.gguf" --inputs "$work/tokens.npz" -o "$work/pl-f32.npz" --force >"$work/log" 2>&1 || { cat "$work/log"; fail=1; }
"$PY" -c "
import sys, numpy as np
a = np.load('$work/pl-orig.npz')['logits']; b = np.load('$work/pl-f32.npz')['logits']
sys.exit(0 if np.array_equal(a, b) else 1)" && echo "ok: pruned f32 GGUF == checkpoint, bit for bit" || { echo "FAIL: pruned f32 GGUF logits differ from the checkpoint's"; fail=1; }
fi
exit $fail
