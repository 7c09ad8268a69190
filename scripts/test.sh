#!/usr/bin/env bash
# The whole test suite: install what is missing, build once with
# AddressSanitizer + UndefinedBehaviorSanitizer, run every test (unit,
# bad-input tables, CLI, ONNX node conformance, examples), then cross-build
# the standalone loader for aarch64 and run its tests under qemu.
# One sanitized build instead of plain + sanitized keeps the suite inside
# 30 minutes on 2 cores; scripts/quickstart.sh exercises the optimised build.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
JOBS="${JOBS:-$(nproc)}"
export JOBS
start=$(date +%s)
"$ROOT/scripts/install_deps.sh"

BUILD="$ROOT/build-asan"
echo "== build (ASan+UBSan, -O1)"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DSLIMPACK_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DCMAKE_C_FLAGS_DEBUG="-O1 -g" >/dev/null
cmake --build "$BUILD" -j "$JOBS"
echo "== tests (ASan+UBSan) after $(( $(date +%s) - start ))s"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$BUILD" -j "$JOBS" --output-on-failure

if [ -x "$ROOT/scripts/aarch64_loader_test.sh" ]; then
  echo "== loader tests on aarch64 (qemu-user) after $(( $(date +%s) - start ))s"
  "$ROOT/scripts/aarch64_loader_test.sh"
fi
echo "test.sh: all suites passed in $(( $(date +%s) - start ))s"
