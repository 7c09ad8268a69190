#!/usr/bin/env bash
# A conversion split across machines (issue 17): `convert --part I/N` on
# each, `merge` of the parts gives the artifact one run writes, byte for
# byte (f32 in 3 parts over 4 shards; int4 imatrix with calibration in 2
# parts; 2:4 sparse in 2 parts), in any order; parts that do not belong together, a missing or
# repeated part and a damaged shard are refused naming the part, and nothing
# is written.
#   split_convert_cli_test.sh SLIMPACK ROOT
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
same_tree() {  # same_tree A B DESCRIPTION
  if diff -r "$1" "$2" >/dev/null; then echo "ok: $3: identical bytes"
  else echo "FAIL: $3: artifacts differ"; diff -r "$1" "$2" | head; fail=1; fi
}

# f32, 1 MiB shards: 4 shards over 3 parts.
expect 0 "single run" -- convert "$LLAMA" -o "$TMP/single" --shard-size 1M
for i in 1 2 3; do
  expect 0 "part $i/3" -- convert "$LLAMA" -o "$TMP/p$i" --shard-size 1M --part "$i/3"
  says "part $i/3 of" "part $i/3"
  [ -f "$TMP/p$i/part.json" ] && [ ! -e "$TMP/p$i/manifest.json" ] \
    || { echo "FAIL: part $i: part.json without manifest.json expected"; fail=1; }
done
shards=$(ls "$TMP"/p1/shard-* "$TMP"/p2/shard-* "$TMP"/p3/shard-* 2>/dev/null | wc -l)
[ "$shards" -eq "$(ls "$TMP"/single/shard-* | wc -l)" ] && [ "$shards" -ge 3 ] \
  && echo "ok: $shards shards split over the parts, none twice" \
  || { echo "FAIL: parts hold $shards shards"; fail=1; }
expect 0 "merge in any order" -- merge "$TMP/p3" "$TMP/p1" "$TMP/p2" -o "$TMP/merged"
same_tree "$TMP/single" "$TMP/merged" "3-part merge vs one run"
expect 0 "the merged artifact verifies" -- verify "$TMP/merged"
expect 0 "a part is replaced with --force" -- convert "$LLAMA" -o "$TMP/p2" --shard-size 1M --part 2/3 --force

# int4 imatrix: calibration in every part, RTN as the shards are written.
Q=(--quant int4 --group 32 --algo imatrix --calib "$CALIB" --shard-size 1M --dtype f16)
expect 0 "int4 single" -- convert "$LLAMA" -o "$TMP/q" "${Q[@]}"
expect 0 "int4 part 1/2" -- convert "$LLAMA" -o "$TMP/q1" "${Q[@]}" --part 1/2
expect 0 "int4 part 2/2" -- convert "$LLAMA" -o "$TMP/q2" "${Q[@]}" --part 2/2
expect 0 "int4 merge" -- merge "$TMP/q1" "$TMP/q2" -o "$TMP/qm"
same_tree "$TMP/q" "$TMP/qm" "int4 imatrix 2-part merge vs one run"

# 2:4 sparsity, sparsified and packed as the shards are written: every part
# states every tensor's zero count, also of the tensors it does not write.
S=(--sparsity-pattern 2:4 --shard-size 1M)
expect 0 "2:4 single" -- convert "$LLAMA" -o "$TMP/s" "${S[@]}"
says "sparsified again as the shards are written" "2:4 single"
expect 0 "2:4 part 1/2" -- convert "$LLAMA" -o "$TMP/s1" "${S[@]}" --part 1/2
expect 0 "2:4 part 2/2" -- convert "$LLAMA" -o "$TMP/s2" "${S[@]}" --part 2/2
expect 0 "2:4 merge" -- merge "$TMP/s2" "$TMP/s1" -o "$TMP/sm"
same_tree "$TMP/s" "$TMP/sm" "2:4 sparse 2-part merge vs one run"

# Refusals: nothing is written.
expect 1 "a missing part" -- merge "$TMP/p1" "$TMP/p3" -o "$TMP/bad1"
says "part 2/3 is missing" "missing part"
expect 1 "a part given twice" -- merge "$TMP/p1" "$TMP/p2" "$TMP/p2" -o "$TMP/bad2"
says "given twice" "repeated part"
expect 1 "parts of two conversions" -- merge "$TMP/q1" "$TMP/p2" -o "$TMP/bad3"
says "split into 3" "mixed splits"
O=(--quant int4 --group 64 --algo imatrix --calib "$CALIB" --shard-size 1M --dtype f16)
expect 0 "part 2/2 of another conversion" -- convert "$LLAMA" -o "$TMP/o2" "${O[@]}" --part 2/2
expect 1 "parts converted differently" -- merge "$TMP/q1" "$TMP/o2" -o "$TMP/bad4"
says "not converted like" "different flags"
says "manifest.producer.passes[0].options.scheme differs" "different flags"
cp -r "$TMP/p3" "$TMP/p3bad"
f=$(ls "$TMP"/p3bad/shard-* | head -1)
printf '\x55' | dd of="$f" bs=1 seek=20000 conv=notrunc status=none
expect 1 "a damaged shard" -- merge "$TMP/p1" "$TMP/p2" "$TMP/p3bad" -o "$TMP/bad5"
says "changed or damaged since the part was written" "damaged shard"
expect 1 "not a part" -- merge "$TMP/single" -o "$TMP/bad6"
says "part.json" "an artifact given as a part"
for b in bad1 bad2 bad3 bad4 bad5 bad6; do
  [ ! -e "$TMP/$b" ] || { echo "FAIL: $b was written"; fail=1; }
done
left=$(ls -a "$TMP" | grep -c '\.tmp$')
[ "$left" -eq 0 ] && echo "ok: no staging directories left" || { echo "FAIL: $left staging dirs"; fail=1; }
expect 1 "merge over an existing output" -- merge "$TMP/p1" "$TMP/p2" "$TMP/p3" -o "$TMP/merged"
expect 0 "merge with --force" -- merge "$TMP/p1" "$TMP/p2" "$TMP/p3" -o "$TMP/merged" --force
expect 2 "--part 4/3" -- convert "$LLAMA" -o "$TMP/bad7" --part 4/3
says "--part" "part out of range"
expect 2 "--part x" -- convert "$LLAMA" -o "$TMP/bad8" --part x
expect 2 "--part with --format gguf" -- convert "$LLAMA" -o "$TMP/bad9.gguf" --format gguf --part 1/2
exit $fail
