#!/usr/bin/env bash
# Precomputed AWQ inputs (issue 17): `calibrate --awq-inputs` stores what
# AWQ's scale search reads of every layer group's input in the float model
# (mean |x| per column and up to 512 rows, as safetensors); `convert
# --algo awq --awq-inputs FILE` searches and folds the scales from it
# without running the model. AWQ reads the float model's inputs either way,
# so the shards are `--calib`'s byte for byte, and the parts of a split
# conversion read one file, each searches only the groups it writes, and
# they merge into one run's bytes. The stored means
# are checked against the stored rows, and a foreign or damaged file and
# conflicting flags are refused. The GGUF export's AWQ reads the file too.
# A coarse grid (4 exponents) and AWQ on the attention only keep the
# searches short under the sanitizers.
#   awq_inputs_cli_test.sh SLIMPACK ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
LLAMA="$ROOT/examples/tiny-llama"
CALIB="$LLAMA/calib_tokens.npy"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0
OUT="$TMP/out"
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"

# One run of 8 windows of 64 tokens: 512 rows, all of them kept.
expect 0 "calibrate --awq-inputs" -- calibrate "$LLAMA" --data "$CALIB" --awq-inputs -o "$TMP/a.safetensors" --calib-samples 1 --threads 2
says "AWQ inputs of 12 layer groups over 8 samples" "calibrate --awq-inputs"
/usr/bin/python3 - "$TMP/a.safetensors" <<'PY' || fail=1
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
assert meta == {"format": "slimpack-awq-inputs", "version": "1", "samples": "8",
                "dataset": "calib_tokens.npy"}, meta
data = raw[8 + n:]
def tensor(name):
    t = header[name]
    assert t["dtype"] == "F32", (name, t)
    b, e = t["data_offsets"]
    return np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"])
# Per layer: q/k/v read q_proj's input, gate/up gate_proj's, down its own
# (o is left: the model has GQA).
want = {}
for l in range(4):
    want["model.layers.%d.self_attn.q_proj.weight" % l] = 128
    want["model.layers.%d.mlp.gate_proj.weight" % l] = 128
    want["model.layers.%d.mlp.down_proj.weight" % l] = 344
assert sorted(header) == sorted([w + s for w in want for s in (".mean_abs", ".rows")]), sorted(header)
for w, k in want.items():
    mean, rows = tensor(w + ".mean_abs"), tensor(w + ".rows")
    assert mean.shape == (k,) and rows.shape == (512, k), (w, mean.shape, rows.shape)
    # Every row was kept, so the means are those of the stored rows.
    np.testing.assert_allclose(mean, np.abs(rows.astype(np.float64)).mean(axis=0), rtol=1e-5,
                               err_msg=w)
print("ok: 12 group inputs, mean |x| [K] and 512 rows [512, K] each; means = the rows' means")
PY

echo '{"dtype": "f32", "quant": {"scheme": "int4-g32", "algorithm": "awq", "awq": {"grid": 4},
       "rules": [{"match": "mlp\\.", "scheme": "f32"}]}}' > "$TMP/attn-awq.json"
R=(--recipe "$TMP/attn-awq.json" --shard-size 1M --threads 2)
expect 0 "AWQ calibrated here" -- convert "$LLAMA" -o "$TMP/calib" "${R[@]}" --calib "$CALIB" --calib-samples 1
expect 0 "AWQ from the file" -- convert "$LLAMA" -o "$TMP/file" "${R[@]}" --awq-inputs "$TMP/a.safetensors" -v
says "quantize: awq: 12 group inputs from $TMP/a.safetensors" "convert --awq-inputs"
says "layer 3 q/k/v: alpha" "the attention groups are searched"
[ "$(grep -c "int4-g32 awq" "$OUT")" -eq 17 ] || bad "not 17 AWQ weights (16 attention, lm_head)"
same=1
for f in "$TMP/calib"/shard-*.bin; do
  cmp -s "$f" "$TMP/file/$(basename "$f")" || { bad "$(basename "$f") differs from --calib's"; same=0; }
done
[ "$same" = 1 ] && echo "ok: the shards from the file are --calib's byte for byte"
/usr/bin/python3 - "$TMP/file/manifest.json" <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))["producer"]
assert [c["file"] for c in p["calibration"]] == ["a.safetensors"], p.get("calibration")
assert p["recipe"]["quant"]["algorithm"] == "awq", p["recipe"]["quant"]
print("ok: the manifest records the AWQ input file as the calibration data")
PY
# Every part reads the same inputs and searches only the groups whose
# tensors it writes (the 1 MiB shards put layers 0-1, 2 and 3 in parts 1, 2
# and 3: each group searched by exactly one part); the merge is one run's
# artifact. The same with each part calibrating its own groups (--calib).
for src in file calib; do
  if [ "$src" = file ]; then S=(--awq-inputs "$TMP/a.safetensors"); else S=(--calib "$CALIB" --calib-samples 1); fi
  for i in 1 2 3; do
    expect 0 "part $i/3 with --$src" -- convert "$LLAMA" -o "$TMP/$src-p$i" "${R[@]}" "${S[@]}" --part $i/3 -v
    grep -o 'layer [0-9] q/k/v: alpha' "$OUT" | cut -c1-7 | tr '\n' ' ' > "$TMP/$src-searched$i"
  done
  searched="$(cat "$TMP/$src-searched1"; echo -n "| "; cat "$TMP/$src-searched2"; echo -n "| "; cat "$TMP/$src-searched3")"
  [ "$searched" = "layer 0 layer 1 | layer 2 | layer 3 " ] && echo "ok: --$src parts searched $searched" \
    || bad "--$src parts searched '$searched', not layers 0-1 | 2 | 3"
  says "layer 0 q/k/v: not searched (another part writes it)" "part 3/3 skips layer 0"
  expect 0 "merge --$src parts" -- merge "$TMP/$src-p1" "$TMP/$src-p2" "$TMP/$src-p3" -o "$TMP/$src-merged"
  if diff -r "$TMP/$src" "$TMP/$src-merged" >/dev/null; then echo "ok: 3 parts with --$src = one run"
  else bad "merged --$src parts differ from one run"; fi
done

# The GGUF export's AWQ (scales searched on ggml's grids) reads the same
# file: --calib's GGUF byte for byte (the MLPs in f16 keep it short).
G=(--format gguf --quant q4_0 --tensor-type ffn=f16 --threads 2)
expect 0 "GGUF AWQ calibrated here" -- convert "$LLAMA" -o "$TMP/calib.gguf" "${G[@]}" --algo awq --calib "$CALIB" --calib-samples 1
expect 0 "GGUF AWQ from the file" -- convert "$LLAMA" -o "$TMP/file.gguf" "${G[@]}" --awq-inputs "$TMP/a.safetensors"
cmp -s "$TMP/calib.gguf" "$TMP/file.gguf" && echo "ok: the GGUF from the file is --calib's byte for byte" \
  || bad "the GGUF from the file differs from --calib's"

# Refusals: nothing written.
expect 2 "--awq-inputs with --algo gptq" -- convert "$LLAMA" -o "$TMP/x1" --quant int4 --algo gptq --awq-inputs "$TMP/a.safetensors"
says "feeds --algo awq, not --algo gptq" "--algo gptq"
expect 2 "--awq-inputs and --calib" -- convert "$LLAMA" -o "$TMP/x2" --quant int4 --awq-inputs "$TMP/a.safetensors" --calib "$CALIB"
says "not both" "--awq-inputs and --calib"
expect 2 "--awq-inputs without --quant" -- convert "$LLAMA" -o "$TMP/x3" --awq-inputs "$TMP/a.safetensors"
expect 2 "--awq-inputs with --format gguf --algo gptq" -- convert "$LLAMA" -o "$TMP/x4.gguf" --format gguf --quant q4_0 --algo gptq --awq-inputs "$TMP/a.safetensors"
says "feeds --algo awq, not --algo gptq" "the GGUF export names the flag"
expect 1 "a checkpoint given as AWQ inputs" -- convert "$LLAMA" -o "$TMP/x5" --quant int4 --awq-inputs "$LLAMA/model.safetensors"
says "not an AWQ input file" "a foreign safetensors file"
head -c 100000 "$TMP/a.safetensors" > "$TMP/cut.safetensors"
expect 1 "a truncated file" -- convert "$LLAMA" -o "$TMP/x6" --quant int4 --awq-inputs "$TMP/cut.safetensors"
says "cut.safetensors" "truncated AWQ inputs"
# Layer 3's down_proj input without its rows; a NaN mean.
/usr/bin/python3 - "$TMP/a.safetensors" "$TMP" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
data = raw[8 + n:]
def write(path, header, body):
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)
    open(path, "wb").write(struct.pack("<Q", len(js)) + js + body)
def without(path, drop):
    out, body = {}, b""
    for name, t in h.items():
        if drop(name):
            continue
        if name != "__metadata__":
            b, e = t["data_offsets"]
            t = dict(t, data_offsets=[len(body), len(body) + e - b])
            body += data[b:e]
        out[name] = t
    write(path, out, body)
without(sys.argv[2] + "/norows.safetensors",
        lambda name: name == "model.layers.3.mlp.down_proj.weight.rows")
# Neither of layer 3 down_proj's entries: a file for a model with fewer groups.
without(sys.argv[2] + "/nodown.safetensors",
        lambda name: name.startswith("model.layers.3.mlp.down_proj."))
b, _ = h["model.layers.1.self_attn.q_proj.weight.mean_abs"]["data_offsets"]
nan = bytearray(data)
nan[b + 8:b + 12] = struct.pack("<f", float("nan"))
write(sys.argv[2] + "/nan.safetensors", h, bytes(nan))
PY
expect 1 "an input without its rows" -- convert "$LLAMA" -o "$TMP/x7" --quant int4 --awq-inputs "$TMP/norows.safetensors"
says "the input of 'model.layers.3.mlp.down_proj.weight' has 344 mean |x| columns and no rows" "missing rows"
expect 1 "a file without a group's input" -- convert "$LLAMA" -o "$TMP/x9" --quant int4 --awq-inputs "$TMP/nodown.safetensors"
says "nodown.safetensors: AWQ group layer 3 down: no captured input of 'model.layers.3.mlp.down_proj.weight'" "a missing group"
expect 1 "a NaN mean" -- convert "$LLAMA" -o "$TMP/x8" --quant int4 --awq-inputs "$TMP/nan.safetensors"
says "'model.layers.1.self_attn.q_proj.weight.mean_abs' column 2 is nan, not a mean |x|" "NaN mean"
for x in x1 x2 x3 x4.gguf x5 x6 x7 x8 x9; do [ ! -e "$TMP/$x" ] || bad "$x written"; done
echo "not AWQ inputs" > "$TMP/notes.txt"
expect 1 "calibrate --awq-inputs over another file" -- calibrate "$LLAMA" --data "$CALIB" --awq-inputs -o "$TMP/notes.txt"
grep -q "not AWQ inputs" "$TMP/notes.txt" && echo "ok: the other file is untouched" || bad "overwritten"
expect 1 "calibrate --awq-inputs of an ONNX graph" -- calibrate "$ROOT/examples/digits-cnn/model.onnx" --data "$ROOT/examples/digits-cnn/calib.npz" --awq-inputs -o "$TMP/cnn.safetensors"
says "awq needs a Hugging Face decoder checkpoint" "an ONNX graph"
[ ! -e "$TMP/cnn.safetensors" ] || bad "cnn.safetensors written"
exit $fail
