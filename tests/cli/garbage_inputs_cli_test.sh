#!/usr/bin/env bash
# Inputs that used to be accepted silently (issue 16, "garbage accepted" and
# "unclear messages"): each must now fail with the exit code and a message
# naming the file, tensor or flag and the offending value, and write nothing.
#   garbage_inputs_cli_test.sh SLIMPACK ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
PY=/usr/bin/python3
DIGITS="$ROOT/examples/digits-cnn/model.onnx"
LLAMA="$ROOT/examples/tiny-llama"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0

# expect CODE "description" "message substring" -- ARGS...
expect() {
  local want="$1" what="$2" msg="$3"
  shift 4
  timeout 60 "$SLIMPACK" "$@" >"$TMP/out" 2>&1
  local got=$?
  if [ "$got" -ne "$want" ] || ! grep -qF -- "$msg" "$TMP/out"; then
    echo "FAIL: $what: slimpack $* exited $got (expected $want) with:"
    cat "$TMP/out"
    echo "  (expected the message to contain: $msg)"
    fail=1
  else
    echo "ok: $what (exit $got)"
  fi
}

# Fixtures: calibration arrays with NaN / Inf, token files of the wrong
# length, and tiny-llama copies with an unexpected bias or a missing lm_head.
"$PY" - "$ROOT" "$TMP" <<'EOF' || { echo "FAIL: fixture generation"; exit 1; }
import json, shutil, struct, sys
import numpy as np
root, tmp = sys.argv[1], sys.argv[2]
calib = np.load(root + "/examples/digits-cnn/calib.npz")["input"][:8]
bad = calib.copy(); bad[3, 0, 2, 5] = np.nan
np.savez(tmp + "/nan.npz", input=bad)
bad = calib.copy(); bad[0, 0, 0, 1] = -np.inf
np.savez(tmp + "/inf.npz", input=bad)
np.savez(tmp + "/empty_ids.npz", input_ids=np.zeros((1, 0), np.int64))
np.savez(tmp + "/long_ids.npz", input_ids=np.ones((1, 129), np.int64))
np.savez(tmp + "/ok_ids.npz", input_ids=np.ones((1, 16), np.int64))
with open(tmp + "/long.txt", "w") as f:
    f.write(" ".join(["5"] * 129) + "\n")

def read_st(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    meta = header.pop("__metadata__", None)
    tensors = {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
               for k, v in header.items()}
    return tensors, meta

def write_st(path, tensors, meta):
    header, blobs, off = {}, [], 0
    for k in sorted(tensors):
        dtype, shape, raw = tensors[k]
        header[k] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw); off += len(raw)
    if meta: header["__metadata__"] = meta
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

tensors, meta = read_st(root + "/examples/tiny-llama/model.safetensors")
for name, edit in (("bias", "add"), ("nohead", "drop")):
    d = tmp + "/llama_" + name
    shutil.copytree(root + "/examples/tiny-llama", d)
    t = dict(tensors)
    if edit == "add":
        t["model.layers.1.self_attn.q_proj.bias"] = ("F32", [128], np.zeros(128, np.float32).tobytes())
    else:
        del t["lm_head.weight"]
    write_st(d + "/model.safetensors", t, meta)
EOF

# NaN/Inf in calibration data: refused where read, naming file and element.
expect 1 "calibrate on NaN data" "nan.npz: input 'input': element [3, 0, 2, 5] is nan" -- \
  calibrate "$DIGITS" --data "$TMP/nan.npz" -o "$TMP/t.json"
expect 1 "w8a8 convert on Inf data" "inf.npz: input 'input': element [0, 0, 0, 1] is -inf" -- \
  convert "$DIGITS" --quant w8a8 --calib "$TMP/inf.npz" -o "$TMP/a"
[ -e "$TMP/t.json" ] || [ -e "$TMP/a" ] && { echo "FAIL: output written on refusal"; fail=1; }

# --channel-axis: an axis no tensor has is refused, not recorded; without
# --per-channel it is a usage error.
expect 1 "channel axis 99" "per-channel axis 99 exists in no calibrated tensor (the highest rank is 4" -- \
  calibrate "$DIGITS" --data "$ROOT/examples/digits-cnn/calib.npz" --per-channel --channel-axis 99 -o "$TMP/t.json"
expect 2 "channel axis without --per-channel" "--channel-axis requires --per-channel" -- \
  calibrate "$DIGITS" --data "$ROOT/examples/digits-cnn/calib.npz" --channel-axis 1 -o "$TMP/t.json"

# Token sequences: empty, or beyond max_position_embeddings (128).
expect 1 "run with empty input_ids" "empty_ids.npz: input 'input_ids': no tokens (shape [1,0])" -- \
  run "$LLAMA" --inputs "$TMP/empty_ids.npz" -o "$TMP/o.npz"
expect 1 "run beyond the context" "129 tokens per row (shape [1,129]), more than the model's max_position_embeddings 128" -- \
  run "$LLAMA" --inputs "$TMP/long_ids.npz" -o "$TMP/o.npz"
expect 1 "calibrate a line beyond the context" "long.txt:1: 129 tokens, more than the model's max_position_embeddings 128" -- \
  calibrate "$LLAMA" --data "$TMP/long.txt" -o "$TMP/t.json"
expect 1 "eval window beyond the context" "--window 256 exceeds $LLAMA's max_position_embeddings 128" -- \
  eval "$LLAMA" --tokens "$LLAMA/eval_tokens.npy" --window 256
expect 2 "eval window 1" "--window: Value 1 not in range 2" -- eval "$LLAMA" --tokens "$LLAMA/eval_tokens.npy" --window 1

# A q_proj.bias while config.json says attention_bias: false.
expect 1 "bias against attention_bias false" "bias tensor 'model.layers.1.self_attn.q_proj.bias' is present but" -- \
  run "$TMP/llama_bias" --inputs "$TMP/ok_ids.npz" -o "$TMP/o.npz"

# A checkpoint without lm_head: convert refuses unless asked to go on.
expect 1 "convert without lm_head" "expected weights missing: lm_head.weight" -- \
  convert "$TMP/llama_nohead" -o "$TMP/nohead"
[ -e "$TMP/nohead" ] && { echo "FAIL: artifact written for an incomplete checkpoint"; fail=1; }
expect 0 "convert without lm_head, --allow-incomplete" "" -- \
  convert "$TMP/llama_nohead" -o "$TMP/nohead" --allow-incomplete
expect 1 "gguf without lm_head" "(llama.cpp could not load the GGUF)" -- \
  convert "$TMP/llama_nohead" -o "$TMP/nohead.gguf" --format gguf
[ -e "$TMP/o.npz" ] && { echo "FAIL: run wrote outputs on refusal"; fail=1; }

# FIFOs planted as a data file or a checkpoint shard: refused at once (the
# opens used to block waiting for a writer; timeout's 124 would show it).
mkfifo "$TMP/fifo.npz"
expect 1 "calibration data that is a FIFO" "fifo.npz: not a regular file" -- \
  calibrate "$DIGITS" --data "$TMP/fifo.npz" -o "$TMP/t.json"
mkdir "$TMP/sharded"
cp "$LLAMA/config.json" "$TMP/sharded/"
mkfifo "$TMP/sharded/model-00001-of-00001.safetensors"
printf '{"metadata": {}, "weight_map": {"lm_head.weight": "model-00001-of-00001.safetensors"}}' \
  > "$TMP/sharded/model.safetensors.index.json"
expect 1 "a checkpoint shard that is a FIFO" "model-00001-of-00001.safetensors: not a regular file" -- \
  inspect "$TMP/sharded"

if [ $fail -ne 0 ]; then echo "garbage inputs: FAILED"; exit 1; fi
echo "garbage inputs: all refused"
