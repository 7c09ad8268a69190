#!/bin/sh
# llama-quantize and `slimpack convert --format gguf` doing the same job
# side by side, interleaved, on this machine: the peer input
# (../shared/docs/peer-llamacpp.md; bench/quant/peer_compare.sh makes it)
# as an F16 GGUF, re-encoded to each llama-quantize type on THREADS threads.
# Prints wall seconds and peak RSS of both whole processes per run, the
# ratio of medians, and whether the two files hold the same tensor bytes
# (scripts/fixtures/gguf_tensor_digests.py). llama-quantize is built from
# fetched llama.cpp source outside this repository; no llama.cpp code is
# part of slimpack.
#
# Usage: bench/quant/llama_quantize_side_by_side.sh BUILD_RELEASE LLAMA_QUANTIZE \
#            [THREADS] [WORK_DIR] [RUNS] [TYPES...]
# e.g.   ... build /scratch/llama.cpp/build/bin/llama-quantize 2 /tmp/peer 3 q4_k_m q8_0
set -eu
BUILD=${1:?usage: llama_quantize_side_by_side.sh BUILD_RELEASE LLAMA_QUANTIZE [THREADS] [WORK_DIR] [RUNS] [TYPES...]}
LQ=${2:?the llama-quantize binary}
THREADS=${3:-2}
WORK=${4:-/tmp/slimpack-peer}
RUNS=${5:-3}
shift $(( $# < 5 ? $# : 5 ))
TYPES=${*:-q4_k_m}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC="$WORK/synth"
if [ ! -f "$SRC/model.safetensors" ]; then
  echo "== generating the synthetic checkpoint into $SRC (1.33 GB)" >&2
  /usr/bin/python3 "$ROOT/scripts/fixtures/make_peer_synthetic.py" "$SRC" >&2
fi
F16="$WORK/synth-f16.gguf"
if [ ! -f "$F16" ]; then
  # The GGUF export wants a tokenizer; the example's stands in (neither
  # quantizer reads it).
  mkdir -p "$WORK/synth-tok"
  ln -sf "$SRC/model.safetensors" "$WORK/synth-tok/model.safetensors"
  cp "$SRC/config.json" "$ROOT/examples/tiny-llama/tokenizer.json" "$WORK/synth-tok/"
  "$BUILD/cli/slimpack" convert "$WORK/synth-tok" -o "$F16" --format gguf --quant f16 >/dev/null
fi
IN_BYTES=$(stat -c %s "$F16")
upper() { echo "$1" | tr '[:lower:]' '[:upper:]'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "| type | run | llama-quantize s | RSS MiB | slimpack s | RSS MiB |"
echo "|---|---|---|---|---|---|"
for t in $TYPES; do
  : > "$WORK/lq.times"; : > "$WORK/sp.times"
  r=1
  while [ "$r" -le "$RUNS" ]; do
    # Each run starts with nothing left to write back: llama-quantize does
    # not fsync, so its 400 MB would otherwise go to disk during the next
    # run (ours fsyncs its own output, which is in its time).
    rm -f "$WORK/lq.gguf" "$WORK/sp.gguf"
    sync
    /usr/bin/time -f "%e %M" -o "$WORK/t.txt" "$LQ" "$F16" "$WORK/lq.gguf" "$(upper "$t")" "$THREADS" >/dev/null 2>&1
    read -r lw lr < "$WORK/t.txt"
    sync
    /usr/bin/time -f "%e %M" -o "$WORK/t.txt" "$BUILD/cli/slimpack" convert "$F16" -o "$WORK/sp.gguf" \
      --format gguf --quant "$t" --threads "$THREADS" >/dev/null
    read -r sw sr < "$WORK/t.txt"
    echo "$lw" >> "$WORK/lq.times"; echo "$sw" >> "$WORK/sp.times"
    awk -v t="$t" -v r="$r" -v a="$lw" -v b="$lr" -v c="$sw" -v d="$sr" \
      'BEGIN { printf "| %s | %d | %.2f | %.0f | %.2f | %.0f |\n", t, r, a, b / 1024, c, d / 1024 }'
    r=$((r + 1))
  done
  lm=$(median < "$WORK/lq.times"); sm=$(median < "$WORK/sp.times")
  same=different
  if [ "$(/usr/bin/python3 "$ROOT/scripts/fixtures/gguf_tensor_digests.py" "$WORK/lq.gguf")" = \
       "$(/usr/bin/python3 "$ROOT/scripts/fixtures/gguf_tensor_digests.py" "$WORK/sp.gguf")" ]; then
    same=identical
  fi
  awk -v t="$t" -v a="$lm" -v b="$sm" -v i="$IN_BYTES" -v s="$same" 'BEGIN {
    printf "%s: medians %.2f s vs %.2f s (%.3f vs %.3f GB/s of F16 input): slimpack %.1fx; tensor bytes %s\n",
           t, a, b, i / a / 1e9, i / b / 1e9, a / b, s }'
  rm -f "$WORK/lq.gguf" "$WORK/sp.gguf"
done
