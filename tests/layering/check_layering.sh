#!/usr/bin/env bash
# Fails, naming file and line, when a source file includes a header from a
# room its own room may not depend on (tests/layering/allowed.txt).
# Usage: check_layering.sh SOURCE_ROOT [ALLOWED_TABLE]
set -euo pipefail
ROOT="$1"
TABLE="$(realpath "${2:-$ROOT/tests/layering/allowed.txt}")"
cd "$ROOT"
rooms=()
for r in support ir hf formats runtime calibration passes quantize prune eval report converter cli; do
  [ -d "$r" ] && rooms+=("$r")
done
files=$(find "${rooms[@]}" -type f \( -name '*.h' -o -name '*.cc' \) | sort)
[ -n "$files" ] || { echo "check_layering: no sources under $ROOT"; exit 2; }
# awk reads the table, then every file's includes; one line per violation.
grep -Hn '^#include "' $files | awk -v table="$TABLE" '
  function room_of(path,   best, r) {
    best = ""
    for (r in allowed) if (index(path, r "/") == 1 && length(r) > length(best)) best = r
    return best
  }
  BEGIN {
    while ((getline line < table) > 0) {
      if (line ~ /^#/ || line !~ /:/) continue
      split(line, kv, ":"); r = kv[1]; gsub(/ /, "", r)
      allowed[r] = " " r " " kv[2] " "
    }
    if (length(allowed) == 0) { print "check_layering: empty table " table; broken = 1; exit 2 }
  }
  {
    split($0, parts, ":"); file = parts[1]; lineno = parts[2]
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
    if (inc !~ /\//) next                      # "foo.h": same folder
    from = room_of(file); to = room_of(inc)
    if (from == "" || to == "") next           # third-party (absl/, nlohmann/, onnx/ ...)
    if (index(allowed[from], " " to " ") == 0) {
      printf "%s:%s: room %s may not include %s (room %s)\n", file, lineno, from, inc, to
      bad++
    }
    checked++
  }
  END {
    if (broken) exit 2
    if (bad) { printf "check_layering: %d forbidden include(s)\n", bad; exit 1 }
    printf "check_layering: %d includes checked, all allowed\n", checked
  }'
