#!/usr/bin/env bash
# Precomputed importance for --algo imatrix (issue 17): `calibrate --imatrix`
# writes llama.cpp's imatrix .dat layout; `convert --imatrix FILE` quantizes
# with it and gives the shards `--algo imatrix --calib` gives (no
# calibration run, so no weight is read before it is quantized); every part
# of a split conversion reads the same file; llama.cpp's GGUF path reads it
# too; a file for another model, a damaged file and conflicting flags are
# refused.
#   imatrix_stats_cli_test.sh SLIMPACK ROOT
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
same_shards() {  # same_shards A B DESCRIPTION: every shard file equal
  local differ=0
  for f in "$1"/shard-*; do cmp -s "$f" "$2/$(basename "$f")" || differ=1; done
  [ "$(ls "$1"/shard-* | wc -l)" -eq "$(ls "$2"/shard-* | wc -l)" ] || differ=1
  if [ $differ -eq 0 ]; then echo "ok: $3: identical shards"; else bad "$3: shards differ"; fi
}

expect 0 "calibrate --imatrix" -- calibrate "$LLAMA" --data "$CALIB" --imatrix -o "$TMP/stats.imatrix"
says "imatrix of 29 linear layers over 64 samples" "calibrate --imatrix"
Q=(--quant int4 --group 32 --dtype f16 --shard-size 1M)
expect 0 "imatrix from calibration runs" -- convert "$LLAMA" -o "$TMP/calib" "${Q[@]}" --algo imatrix --calib "$CALIB"
expect 0 "imatrix from the file" -- convert "$LLAMA" -o "$TMP/file" "${Q[@]}" --imatrix "$TMP/stats.imatrix" -v
says "imatrix: 29 entries from" "convert --imatrix"
same_shards "$TMP/calib" "$TMP/file" "--imatrix FILE vs --algo imatrix --calib"
/usr/bin/python3 - "$TMP/file/manifest.json" <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))["producer"]
assert [c["file"] for c in p["calibration"]] == ["stats.imatrix"], p.get("calibration")
assert p["recipe"]["quant"]["algorithm"] == "imatrix", p["recipe"]["quant"]
print("ok: the manifest records the imatrix file as the calibration data")
PY
# Every part reads the same statistics.
expect 0 "part 1/2 with --imatrix" -- convert "$LLAMA" -o "$TMP/p1" "${Q[@]}" --imatrix "$TMP/stats.imatrix" --part 1/2
expect 0 "part 2/2 with --imatrix" -- convert "$LLAMA" -o "$TMP/p2" "${Q[@]}" --imatrix "$TMP/stats.imatrix" --part 2/2
expect 0 "merge" -- merge "$TMP/p1" "$TMP/p2" -o "$TMP/merged"
if diff -r "$TMP/file" "$TMP/merged" >/dev/null; then echo "ok: 2 parts with --imatrix = one run"
else echo "FAIL: merged parts differ from one run"; fail=1; fi
# llama-quantize's file layout: the GGUF export reads ours.
expect 0 "GGUF with our imatrix" -- convert "$LLAMA" -o "$TMP/m.gguf" --format gguf --quant q4_k_m --imatrix "$TMP/stats.imatrix"

# Refusals.
expect 2 "--imatrix with --algo gptq" -- convert "$LLAMA" -o "$TMP/x1" --quant int4 --algo gptq --imatrix "$TMP/stats.imatrix"
says "feeds --algo imatrix" "--algo gptq"
expect 2 "--imatrix and --calib" -- convert "$LLAMA" -o "$TMP/x2" --quant int4 --imatrix "$TMP/stats.imatrix" --calib "$CALIB"
expect 2 "--imatrix without --quant" -- convert "$LLAMA" -o "$TMP/x3" --imatrix "$TMP/stats.imatrix"
expect 0 "the CNN's imatrix" -- calibrate "$CNN" --data "$ROOT/examples/digits-cnn/calib.npz" --imatrix -o "$TMP/cnn.imatrix"
expect 1 "an imatrix of another model" -- convert "$LLAMA" -o "$TMP/x4" --quant int4 --imatrix "$TMP/cnn.imatrix"
says "names no weight of" "another model's imatrix"
head -c 100 "$TMP/stats.imatrix" > "$TMP/cut.imatrix"
expect 1 "a truncated imatrix" -- convert "$LLAMA" -o "$TMP/x5" --quant int4 --imatrix "$TMP/cut.imatrix"
says "cut.imatrix" "truncated imatrix"
for x in x1 x2 x3 x4 x5; do [ ! -e "$TMP/$x" ] || { echo "FAIL: $x written"; fail=1; }; done
echo "not an imatrix" > "$TMP/notes.txt"
expect 1 "calibrate --imatrix over another file" -- calibrate "$LLAMA" --data "$CALIB" --imatrix -o "$TMP/notes.txt"
grep -q "not an imatrix" "$TMP/notes.txt" && echo "ok: the other file is untouched" || { echo "FAIL: overwritten"; fail=1; }
expect 0 "calibrate --imatrix replaces its own file" -- calibrate "$LLAMA" --data "$CALIB" --imatrix -o "$TMP/stats.imatrix" --calib-samples 2
says "over 16 samples" "--calib-samples 2 (runs of 8 windows)"
exit $fail
