#!/usr/bin/env bash
# The whole test suite: install what is missing, build (plain and ASan+UBSan),
# run every test in both, and run the loader's tests on aarch64 under qemu.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
JOBS="${JOBS:-$(nproc)}"
export JOBS
"$ROOT/scripts/install_deps.sh"

echo "== build (RelWithDebInfo)"
"$ROOT/scripts/build.sh" "$ROOT/build"
echo "== tests (RelWithDebInfo)"
ctest --test-dir "$ROOT/build" -j "$JOBS" --output-on-failure

echo "== build (ASan+UBSan)"
"$ROOT/scripts/build.sh" "$ROOT/build-asan" -DSLIMPACK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
echo "== tests (ASan+UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$ROOT/build-asan" -j "$JOBS" --output-on-failure -LE no_sanitizer

if [ -x "$ROOT/scripts/aarch64_loader_test.sh" ]; then
  echo "== loader tests on aarch64 (qemu-user)"
  "$ROOT/scripts/aarch64_loader_test.sh"
fi
echo "test.sh: all suites passed"
