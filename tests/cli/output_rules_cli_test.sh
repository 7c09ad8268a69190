#!/usr/bin/env bash
# Issue 16, end to end: every command that writes follows convert's output
# rules (item 9: never an input, never someone else's file without --force,
# atomic; item 11: a non-writable directory is named as such), a zip bomb is
# refused before inflating (item 3), verify refuses every shard header the
# loader refuses and non-zero padding (item 6), and convert refuses a graph
# dim its loader would reject before writing anything (item 8).
# Inputs are copies in a temporary directory, so a regression can only ever
# overwrite those. usage: output_rules_cli_test.sh SLIMPACK REPO_ROOT
set -u
SLIMPACK="$1"
ROOT="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
OUT="$TMP/out.txt"
fail=0
# expect / says / bad: tests/testing/cli_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../testing/cli_lib.sh"
py() { /usr/bin/python3 -c "$@"; }
# unchanged FILE COPY WHAT: FILE still has the bytes of COPY.
unchanged() { cmp -s "$1" "$2" || bad "$3: $1 was modified"; }

cp "$ROOT/examples/digits-cnn/model.onnx" "$TMP/model.onnx"
cp "$ROOT/examples/digits-cnn/calib.npz" "$TMP/in.npz"
cp "$ROOT/examples/digits-cnn/eval.safetensors" "$TMP/eval.safetensors"
cp "$TMP/model.onnx" "$TMP/model.orig"
cp "$TMP/in.npz" "$TMP/in.orig"
M="$TMP/model.onnx"

# --- run (item 9) ---------------------------------------------------------
expect 0 "run writes an .npz" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/out.npz"
py "import numpy as np; assert np.load('$TMP/out.npz')['logits'].shape == (128, 10)" ||
  bad "run output is not a numpy-readable .npz"
expect 0 "run replaces an .npz it wrote" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/out.npz"
expect 1 "run -o a foreign existing file" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/in.npz"
says "$TMP/in.npz: exists and is not an .npz written by slimpack" "names the file"
says "--force" "tells how to replace it"
unchanged "$TMP/in.npz" "$TMP/in.orig" "run -o its input"
expect 1 "run -o its input, with --force" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/in.npz" --force
says "is the input '$TMP/in.npz'" "says the output is the input"
unchanged "$TMP/in.npz" "$TMP/in.orig" "run -o its input --force"
ln "$TMP/in.npz" "$TMP/hardlink.npz"
expect 1 "run -o a hard link to its input" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/hardlink.npz" --force
says "is the input" "hard link caught by inode"
unchanged "$TMP/in.npz" "$TMP/in.orig" "run -o hard link"
mkdir "$TMP/sub"
expect 1 "run -o the input spelled through .." -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/sub/../in.npz" --force
says "is the input" "a/../b spelling caught"
printf 'notes' > "$TMP/notes.npz"
expect 1 "run -o someone's file" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/notes.npz"
[ "$(cat "$TMP/notes.npz")" = notes ] || bad "run replaced notes.npz without --force"
expect 0 "run -o someone's file with --force" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/notes.npz" --force
mkdir "$TMP/dir.npz"
expect 1 "run -o a directory" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/dir.npz" --force
says "is a directory" "refuses a directory"
expect 1 "run -o a missing directory" -- run "$M" --inputs "$TMP/in.npz" -o "$TMP/missing/out.npz"
says "parent directory '$TMP/missing' does not exist" "names the missing directory"
expect 1 "run -o /proc" -- run "$M" --inputs "$TMP/in.npz" -o /proc/out.npz
says "directory '/proc' is not writable" "names the unwritable directory"
ls -A "$TMP" | grep -q '\.tmp-' && bad "a temporary file was left behind"

# --- zip bomb (item 3) ------------------------------------------------------
# bomb.npz: 'input.npy' whose .npy header describes the model's [128,1,8,8]
# f32 input, deflated, followed by 1 MiB of padding, declaring 1,000,000,000
# uncompressed bytes (a ratio deflate allows). cbomb.npz: numpy's own
# compressed .npz, for the budget from the environment.
py "
import struct, zlib, numpy as np, io
a = np.zeros((128, 1, 8, 8), np.float32)
buf = io.BytesIO(); np.save(buf, a); npy = buf.getvalue()
c = zlib.compressobj(9, zlib.DEFLATED, -15); stream = c.compress(npy) + c.flush() + b'G' * (1 << 20)
name = b'input.npy'; crc = zlib.crc32(npy); declared = 1000000000
def common(): return struct.pack('<HHHHHIIIHH', 20, 0, 8, 0, 0x21, crc, len(stream), declared, len(name), 0)
local = b'PK\x03\x04' + common() + name
central = b'PK\x01\x02' + struct.pack('<H', 20) + common() + struct.pack('<HHHII', 0, 0, 0, 0, 0) + name
body = local + stream
end = b'PK\x05\x06' + struct.pack('<HHHHIIH', 0, 0, 1, 1, len(central), len(body), 0)
open('$TMP/bomb.npz', 'wb').write(body + central + end)
np.savez_compressed('$TMP/cbomb.npz', input=np.ones((128, 1, 8, 8), np.float32))
" || bad "building bomb.npz"
# A budget above the declared size, so only the header comparison can refuse
# (whatever memory this machine has available).
export SLIMPACK_NPZ_MAX_INFLATE_BYTES=4000000000
expect 1 "run on a zip bomb" -- run "$M" --inputs "$TMP/bomb.npz" -o "$TMP/bomb_out.npz"
says "$TMP/bomb.npz: entry 'input.npy': declares 1000000000 uncompressed bytes" "names archive, entry and size"
says "describes 32896" "gives the size the header describes"
[ -e "$TMP/bomb_out.npz" ] && bad "run on a zip bomb wrote an output"
expect 1 "calibrate on a zip bomb" -- calibrate "$M" --data "$TMP/bomb.npz" -o "$TMP/bomb.json"
says "entry 'input.npy': declares 1000000000" "calibrate names the entry"
[ -e "$TMP/bomb.json" ] && bad "calibrate on a zip bomb wrote an output"
unset SLIMPACK_NPZ_MAX_INFLATE_BYTES
SLIMPACK_NPZ_MAX_INFLATE_BYTES=1000 "$SLIMPACK" run "$M" --inputs "$TMP/cbomb.npz" -o "$TMP/c.npz" >"$OUT" 2>&1
[ $? -eq 1 ] || bad "run over the inflate budget did not exit 1"
says "over the decompression limit of 1000 bytes" "names the limit"
says "SLIMPACK_NPZ_MAX_INFLATE_BYTES" "says where the limit comes from"
expect 0 "run on a compressed .npz within the budget" -- run "$M" --inputs "$TMP/cbomb.npz" -o "$TMP/c.npz"

# --- calibrate (item 9) ----------------------------------------------------
expect 0 "calibrate writes a table" -- calibrate "$M" --calib-random 2 -o "$TMP/calib.json"
expect 0 "calibrate replaces its own table" -- calibrate "$M" --calib-random 2 -o "$TMP/calib.json"
expect 1 "calibrate -o the model" -- calibrate "$M" --calib-random 2 -o "$M"
says "$M: exists and is not a slimpack calibration table" "names the model file"
says "--force" "tells how to replace it"
unchanged "$M" "$TMP/model.orig" "calibrate -o model"
expect 1 "calibrate -o the model with --force" -- calibrate "$M" --calib-random 2 -o "$M" --force
says "is the input" "says the output is the input"
unchanged "$M" "$TMP/model.orig" "calibrate -o model --force"
expect 1 "calibrate -o its data file with --force" -- calibrate "$M" --data "$TMP/in.npz" -o "$TMP/in.npz" --force
says "is the input '$TMP/in.npz'" "names the data file"
unchanged "$TMP/in.npz" "$TMP/in.orig" "calibrate -o data"
ln -s "$M" "$TMP/model-link.json"
expect 1 "calibrate -o a symlink to the model" -- calibrate "$M" --calib-random 2 -o "$TMP/model-link.json" --force
says "symbolic link" "refuses the link"
unchanged "$M" "$TMP/model.orig" "calibrate -o symlink"
printf '{"mine": true}\n' > "$TMP/mine.json"
expect 1 "calibrate -o someone's JSON" -- calibrate "$M" --calib-random 2 -o "$TMP/mine.json"
grep -q mine "$TMP/mine.json" || bad "calibrate replaced mine.json without --force"
expect 0 "calibrate -o someone's JSON with --force" -- calibrate "$M" --calib-random 2 -o "$TMP/mine.json" --force
expect 1 "calibrate -o /proc" -- calibrate "$M" --calib-random 2 -o /proc/calib.json
says "directory '/proc' is not writable" "names the unwritable directory"

# --- report (item 9) ----------------------------------------------------------
rep=(--reference "$M" --candidate "$M" --data "$TMP/eval.safetensors" --input-map input=inputs
     --max-runs 2 --sensitivity-runs 0)
mkdir "$TMP/docs"
printf 'my own report\n' > "$TMP/docs/report.md"
printf 'keep me\n' > "$TMP/docs/todo.txt"
expect 1 "report into a directory with the user's report.md" -- report "${rep[@]}" -o "$TMP/docs"
says "$TMP/docs/report.md: exists and is not part of a slimpack report" "names report.md"
says "--force" "tells how to replace it"
[ "$(cat "$TMP/docs/report.md")" = "my own report" ] || bad "report overwrote the user's report.md"
[ -e "$TMP/docs/report.json" ] && bad "a refused report wrote report.json"
expect 0 "report there with --force" -- report "${rep[@]}" -o "$TMP/docs" --force
py "import json; assert json.load(open('$TMP/docs/report.json'))['format'] == 'slimpack-report'" ||
  bad "report.json lacks its format marker"
[ "$(cat "$TMP/docs/todo.txt")" = "keep me" ] || bad "report touched an unrelated file"
expect 0 "report replaces its own report" -- report "${rep[@]}" -o "$TMP/docs"
expect 0 "report into a new directory" -- report "${rep[@]}" -o "$TMP/rep"
mkdir "$TMP/datadir"
cp "$TMP/eval.safetensors" "$TMP/datadir/"
expect 1 "report -o its data directory" -- report --reference "$M" --candidate "$M" \
  --data "$TMP/datadir" --input-map input=inputs --max-runs 2 --sensitivity-runs 0 -o "$TMP/datadir"
says "is the input '$TMP/datadir'" "names the data directory"
[ -e "$TMP/datadir/report.json" ] && bad "report wrote into its data directory"
expect 1 "report -o /proc" -- report "${rep[@]}" -o /proc/rep
says "directory '/proc' is not writable" "names the unwritable directory"

# --- convert into /proc (item 11) --------------------------------------------
expect 1 "convert -o /proc/x" -- convert "$M" -o /proc/x
says "directory '/proc' is not writable" "says not writable, not '0 bytes free'"
grep -q "are free" "$OUT" && bad "convert -o /proc/x talks about free space"

# --- verify (item 6) ---------------------------------------------------------
expect 0 "convert" -- convert "$M" -o "$TMP/art"
expect 0 "verify the intact artifact" -- verify "$TMP/art"
cat > "$TMP/patch.py" <<'PY'
# patch.py SRC DST OFFSET HEXBYTES: copies artifact SRC to DST, overwrites
# shard-00000.bin at OFFSET, and re-hashes the shard into the manifest and
# re-seals the manifest self-hash (spec.md section 8), as an attacker would.
import hashlib, json, shutil, sys
src, dst, offset, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), bytes.fromhex(sys.argv[4])
shutil.copytree(src, dst)
shard = dst + '/shard-00000.bin'
b = bytearray(open(shard, 'rb').read())
b[offset:offset + len(data)] = data
open(shard, 'wb').write(b)
text = open(dst + '/manifest.json').read()
m = json.loads(text)
assert m['shards'][0]['file'] == 'shard-00000.bin'
old = m['shards'][0]['sha256']
assert text.count(old) == 1
text = text.replace(old, hashlib.sha256(b).hexdigest())
key = '"manifest_sha256": "'
at = text.index(key) + len(key)
zeroed = text[:at] + '0' * 64 + text[at + 64:]
text = zeroed[:at] + hashlib.sha256(zeroed.encode()).hexdigest() + zeroed[at + 64:]
open(dst + '/manifest.json', 'w').write(text)
PY
# case OFFSET HEX NEEDLE: the patched, re-hashed artifact fails verify with NEEDLE.
broken() {
  local name="$1" offset="$2" hex="$3" needle="$4"
  /usr/bin/python3 "$TMP/patch.py" "$TMP/art" "$TMP/$name" "$offset" "$hex" || { bad "patch $name"; return; }
  expect 1 "verify: $name" -- verify "$TMP/$name"
  says "$TMP/$name/shard-00000.bin: $needle" "verify names the shard and the field ($name)"
}
broken bad-magic 0 58 "bad magic"
broken major-zero 8 0000 "shard version 0 does not exist"
broken major-newer 8 0200 "shard format major version 2 was made by a newer tool"
broken header-size 12 20000000 "header_size 32 outside [64, 16384]"
broken shard-index 16 07000000 "header says shard index 7, manifest says 0"
broken file-size 24 0100000000000000 "header says file size 1, manifest says"
broken padding 100 07 "byte 100 (between the header and the payload region) is 0x07, expected 0"
# The padding case loads (the loader never reads padding): only verify refuses it.
expect 0 "inspect loads the padded artifact" -- inspect "$TMP/padding"

# --- write-time validation (item 8) ------------------------------------------
py "
import onnx
from onnx import helper, TensorProto, numpy_helper
import numpy as np
g = helper.make_graph([helper.make_node('Add', ['x', 'w'], ['y'], name='add')], 'g',
    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2**62, 4])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2**62, 4])],
    [numpy_helper.from_array(np.ones(4, np.float32), 'w')])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), '$TMP/huge.onnx')
" || bad "building huge.onnx"
expect 1 "convert a graph dim of 2^62" -- convert "$TMP/huge.onnx" -o "$TMP/huge"
says "4611686018427387904" "names the dim"
says "'x'" "names the value"
[ -e "$TMP/huge" ] && bad "convert left an output for a graph it refused"
ls "$TMP" | grep -q '^huge\..*\.tmp$' && bad "convert left a staging directory"

if [ $fail -ne 0 ]; then echo "output rules: FAILED"; exit 1; fi
echo "output rules: all passed"
