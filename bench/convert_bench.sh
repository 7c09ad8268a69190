#!/usr/bin/env bash
# Convert benchmark: writes a synthetic f32 llama checkpoint (default 2.2 GB
# of real random data), converts it to f16 in a separate process (peak RSS,
# throughput, memcpy bandwidth), cross-checks peak RSS of the real CLI with
# /usr/bin/time -v, verifies the artifact, and deletes everything.
# Fails if the conversion's peak RSS exceeds 64 MiB + threads x 24 MiB.
# usage: bench/convert_bench.sh BUILD_DIR [GB] [THREADS]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [GB] [THREADS]}
gb=${2:-2.2}
threads=${3:-2}
bin=$build/bench/convert_bench
slimpack=$build/cli/slimpack
for b in "$bin" "$slimpack"; do
  [[ -x $b ]] || { echo "missing $b: make -C $build convert_bench slimpack" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/slimpack_convert_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bin" make "$work/ckpt" --gb "$gb"
sync  # let writeback of the fresh checkpoint finish before timing
du -sh --apparent-size "$work/ckpt" | sed 's/^/checkpoint apparent size: /'
du -sh "$work/ckpt" | sed 's/^/checkpoint allocated on disk: /'
max_rss=$((64 + threads * 24))
echo "== convert_bench run (f32 -> f16, $threads threads)"
"$bin" run "$work/ckpt" "$work/out" --dtype f16 --threads "$threads" --max-rss-mb "$max_rss"
echo "== /usr/bin/time -v slimpack convert --dtype f16 --threads $threads"
/usr/bin/time -v "$slimpack" convert "$work/ckpt" -o "$work/out_cli" --dtype f16 \
  --threads "$threads" 2> "$work/time.txt"
grep -E "Maximum resident set size|Elapsed \(wall clock\)" "$work/time.txt"
echo "== slimpack verify"
"$slimpack" verify "$work/out_cli"
cmp <(cd "$work/out" && sha256sum ./*) <(cd "$work/out_cli" && sha256sum ./*) \
  && echo "bench artifact and CLI artifact are byte-identical"
