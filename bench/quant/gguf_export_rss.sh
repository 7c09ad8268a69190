#!/usr/bin/env bash
# Peak RSS and wall time of re-encoding an F16 GGUF into ggml block types
# (the import -> export path of `slimpack convert model.gguf --format gguf`),
# and of converting the same GGUF into our artifact, in an optimised build.
# The input is the peer-style synthetic llama (scripts/fixtures/
# make_peer_synthetic.py: by default 4 layers, hidden 2048, intermediate
# 5632, a 413 MB F16 GGUF), made in a scratch directory and deleted on exit.
# Prints one line per run; nothing is asserted (figures go in the README
# with this command).
# usage: bench/quant/gguf_export_rss.sh BUILD_DIR [TYPES...]   (default: q4_0 q8_0 q4_k_m)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: $0 BUILD_DIR [TYPES...]}
shift
types=("$@")
(( ${#types[@]} > 0 )) || types=(q4_0 q8_0 q4_k_m)
bin=$build/cli/slimpack
[[ -x $bin ]] || { echo "missing $bin: make -C $build slimpack" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package 'time')" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/slimpack_gguf_rss.XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/scripts/fixtures/make_peer_synthetic.py" "$work/ckpt" 0 --layers 4 \
  --hidden 2048 --intermediate 5632 --heads 16 --vocab 258 >/dev/null
cp "$root/examples/tiny-llama/tokenizer.json" "$work/ckpt/"
"$bin" convert "$work/ckpt" -o "$work/in-f16.gguf" --format gguf --quant f16 >/dev/null
printf 'input: %s F16 GGUF (%s)\n' "$(du -h --apparent-size "$work/in-f16.gguf" | cut -f1)" \
  "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt") build"
run() {  # LABEL ARGS...
  local label=$1; shift
  rm -rf "$work/out"
  /usr/bin/time -f "%e %M" -o "$work/time" "$bin" convert "$work/in-f16.gguf" -o "$work/out" "$@" \
    >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
  read -r secs kib <"$work/time"
  printf '%-28s %7.2f s  peak RSS %6d MiB  output %s\n' "$label" "$secs" $((kib / 1024)) \
    "$(du -sh --apparent-size "$work/out" | cut -f1)"
}
for t in "${types[@]}"; do run "GGUF -> GGUF $t" --format gguf --quant "$t"; done
run "GGUF -> artifact (f16)" --quant f16
