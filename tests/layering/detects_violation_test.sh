#!/usr/bin/env bash
# The layering check must fail, naming file, line and rooms, on a tree with a
# forbidden include (ir/ reaching up into runtime/; the loader reaching into
# support/), and pass on the same tree without them.
set -euo pipefail
CHECK="$1"; TABLE="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{support,ir,runtime,formats/shard/loader}
printf '#include "support/s.h"\n' > "$tmp/ir/a.h"
printf '#include "ir/a.h"\n' > "$tmp/runtime/b.h"
printf '#include "formats/shard/format.h"\n' > "$tmp/formats/shard/loader/l.h"
touch "$tmp/support/s.h"
out=$(bash "$CHECK" "$tmp" "$TABLE") || { echo "FAIL: clean tree rejected: $out"; exit 1; }
printf '#include "support/s.h"\n#include "runtime/b.h"\n' > "$tmp/ir/a.h"
printf '#include "support/check.h"\n' >> "$tmp/formats/shard/loader/l.h"
if out=$(bash "$CHECK" "$tmp" "$TABLE"); then echo "FAIL: violations accepted: $out"; exit 1; fi
echo "$out"
grep -q '^ir/a.h:2: room ir may not include runtime/b.h (room runtime)$' <<<"$out" || { echo "FAIL: ir violation not named"; exit 1; }
grep -q '^formats/shard/loader/l.h:2: room formats/shard/loader may not include support/check.h' <<<"$out" || { echo "FAIL: loader violation not named"; exit 1; }
grep -q '2 forbidden include' <<<"$out" || { echo "FAIL: count"; exit 1; }
echo "detects_violation: OK"
