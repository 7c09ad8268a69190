#!/usr/bin/env bash
# Peak RSS of ImportSafetensors on a synthetic sharded BF16 llama checkpoint
# (default 3 GB, 4 shards, real data on disk). Fails if the import's peak RSS
# exceeds the limit (default 200 MB). The checkpoint is deleted on exit.
# usage: bench/safetensors_import_rss.sh BUILD_DIR [GB] [MAX_RSS_MB]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [GB] [MAX_RSS_MB]}
gb=${2:-3}
max_rss_mb=${3:-200}
bin=$build/bench/safetensors_import_rss
[[ -x $bin ]] || { echo "missing $bin: make -C $build safetensors_import_rss" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/slimpack_st_rss.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bin" make "$work/ckpt" --gb "$gb" --shards 4
du -sh --apparent-size "$work/ckpt" | sed 's/^/apparent size: /'
du -sh "$work/ckpt" | sed 's/^/allocated on disk: /'
# Separate process: the maker's buffers do not count towards this peak.
"$bin" import "$work/ckpt" --max-rss-mb "$max_rss_mb"
