#!/usr/bin/env bash
# The whole test suite: install what is missing, build with AddressSanitizer
# + UndefinedBehaviorSanitizer and run every test (unit, bad-input tables,
# CLI, ONNX node conformance, examples, fuzz corpus replays); build the
# optimised binaries users run (the quick start's RelWithDebInfo -O2, without
# -g) and test the kernels, quantizers and loader as shipped, plus the same artifact bytes under qemu-emulated CPUs;
# run every libFuzzer harness for a bounded time (scripts/fuzz.sh, its own
# clang build); cross-build the standalone loader for aarch64 and run its
# tests under qemu.
# The optimised build compiles only the CLI and those tests (not the other
# test binaries, not the benchmarks) and leaves out -g (same code, less to
# write and link), which keeps the suite under 40 minutes on 2 cores;
# scripts/quickstart.sh builds the benchmarks.
# -g1 keeps the line tables sanitizer reports need and drops variable info,
# which only a debugger reads; lld links, one precompiled gtest header, a
# precompiled nlohmann/json.hpp where several sources include it, and
# the folders the tests spend no time in at -O0: see
# cmake/SlimpackBuildSpeed.cmake.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
JOBS="${JOBS:-$(nproc)}"
export JOBS
start=$(date +%s)
# The trees this script builds take about 5.5 GB (the sanitized one 4.8 GB:
# ~200 statically linked test binaries). A full disk otherwise shows up ten
# minutes in as a linker killed by SIGBUS ("clang: error: unable to execute
# command: Bus error"), which names neither the disk nor the cause.
need_kib=$((6 * 1024 * 1024))
free_kib=$(df -Pk "$ROOT" | awk 'NR == 2 {print $4}')
if [ -n "$free_kib" ] && [ "$free_kib" -lt "$need_kib" ]; then
  echo "test.sh: $((free_kib / 1024)) MiB free on the file system of $ROOT; the build trees need about 6 GiB" >&2
  exit 1
fi
"$ROOT/scripts/install_deps.sh"

BUILD="$ROOT/build-asan"
# The two oracles' npm installs wait on the network, not the CPU: they run
# in the background while the sanitized tree compiles, and the tests start
# only once both are in place (a failed install stops the suite here).
install_oracles() {
  # Stock llama.cpp for the GGUF tests: node-llama-cpp's prebuilt CPU build,
  # pinned by tests/gguf/oracle/package-lock.json, into the build tree (npm's
  # cache makes repeats offline). --omit=optional leaves out the CUDA/Vulkan
  # builds. Needs node >= 20 (the machine's; Debian 12's nodejs is 18).
  local oracle="$BUILD/gguf-oracle"
  if ! cmp -s "$ROOT/tests/gguf/oracle/package-lock.json" "$oracle/package-lock.json" ||
     [ ! -d "$oracle/node_modules/node-llama-cpp" ]; then
    echo "== llama.cpp oracle: npm ci (node-llama-cpp 3.22.1, ~85 MB)"
    rm -rf "$oracle"; mkdir -p "$oracle"
    cp "$ROOT"/tests/gguf/oracle/package.json "$ROOT"/tests/gguf/oracle/package-lock.json "$oracle/"
    (cd "$oracle" && npm ci --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error)
  fi
  # Stock ONNX Runtime for the ONNX export tests: onnxruntime-node 1.30.0 with
  # its prebuilt CPU library, pinned by bench/ort/package-lock.json, into the
  # build tree (--ignore-scripts: the binding ships in the package, the
  # install script only fetches GPU builds; offline once npm's cache is warm).
  local ort_oracle="$BUILD/ort-oracle"
  if ! cmp -s "$ROOT/bench/ort/package-lock.json" "$ort_oracle/package-lock.json" ||
     [ ! -d "$ort_oracle/node_modules/onnxruntime-node" ]; then
    echo "== ONNX Runtime oracle: npm ci (onnxruntime-node 1.30.0, ~290 MB)"
    rm -rf "$ort_oracle"; mkdir -p "$ort_oracle"
    cp "$ROOT"/bench/ort/package.json "$ROOT"/bench/ort/package-lock.json "$ort_oracle/"
    (cd "$ort_oracle" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
}
mkdir -p "$BUILD"
ORACLE_LOG="$BUILD/oracles-npm.log"
install_oracles >"$ORACLE_LOG" 2>&1 &
oracles_pid=$!
# A failed build exits here first: stop the installs with it (a rerun
# would otherwise remove node_modules under a live npm).
trap 'kill "$oracles_pid" 2>/dev/null || true' EXIT
# clang-14 (installed for the fuzzers anyway) compiles this tree about twice
# as fast as GCC 12 at the same flags (README, "Test-suite timing"), and the
# optimised tree below for the same reason; GCC 12, the compiler
# scripts/build.sh ships with, builds every line there.
echo "== build (ASan+UBSan, -O1, clang-14)"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DSLIMPACK_SANITIZE=ON \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" \
  -DSLIMPACK_FAST_LINK=ON -DSLIMPACK_NO_PIE=ON -DSLIMPACK_TEST_PCH=ON -DSLIMPACK_JSON_PCH=ON -DSLIMPACK_BUILD_BENCH=OFF \
  -DSLIMPACK_FUZZ_HOOKS=ON -DSLIMPACK_TEST_PER_SUITE=ON \
  -DSLIMPACK_O0_DIRS="tests;cli;converter;export;hf;report;passes;fuzz;formats/onnx;formats/safetensors;formats/numpy;formats/shard/writer;formats/shard/reader" \
  >/dev/null
cmake --build "$BUILD" -j "$JOBS"
oracles_rc=0
wait "$oracles_pid" || oracles_rc=$?
trap - EXIT
cat "$ORACLE_LOG"
if [ "$oracles_rc" != 0 ]; then echo "test.sh: installing the npm oracles failed (exit $oracles_rc)"; exit 1; fi
echo "== tests (ASan+UBSan) after $(( $(date +%s) - start ))s"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
CTEST_LOG="$BUILD/ctest.log"
# Each gtest suite is one ctest test (SLIMPACK_TEST_PER_SUITE,
# cmake/SlimpackTestPerSuite.cmake) and leaves gtest's JSON report here.
RESULTS="$BUILD/gtest-results"
rm -rf "$RESULTS"
ctest --test-dir "$BUILD" -j "$JOBS" --output-on-failure 2>&1 | tee "$CTEST_LOG"
# The suite must not shrink without a word: a dropped folder, fixture or
# discovery failure lowers the count below the committed floor (raise the
# floor in tests/test_count_floor.txt when adding tests). It counts gtest
# cases and the script tests beside them, as when each case was a ctest test.
ctests=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$CTEST_LOG" | tail -1)
suites=$(find "$RESULTS" -name '*.json' | wc -l)
# (a report's first "tests" is its whole run's; find may split the files
# over several awk processes, whose sums are added.)
cases=$(find "$RESULTS" -name '*.json' -exec awk '
  FNR == 1 { seen = 0 }
  !seen && /"tests":/ { v = $0; gsub(/[^0-9]/, "", v); n += v; seen = 1 }
  END { print n + 0 }' {} + | awk '{ n += $1 } END { print n + 0 }')
count=$(( ${ctests:-0} - suites + cases ))
floor=$(tr -dc 0-9 < "$ROOT/tests/test_count_floor.txt")
if [ -z "$ctests" ] || [ "$count" -lt "$floor" ]; then
  echo "test.sh: ctest ran ${ctests:-no} tests ($suites gtest suites holding $cases cases), $count in all, fewer than the floor of $floor (tests/test_count_floor.txt)"
  exit 1
fi
# Hardware-dependent cases skip with a reason (GTEST_SKIP) instead of passing
# unexamined: list them so a reader sees what this CPU did not check.
# (gtest's JSON names a case, then its result, then its suite: "classname".)
skipped_cases=$(find "$RESULTS" -name '*.json' -exec awk '
  /"name":/ { name = $0; sub(/.*"name": *"/, "", name); sub(/".*/, "", name); skip = 0 }
  /"result": *"SKIPPED"/ { skip = 1 }
  /"classname":/ && skip { suite = $0; sub(/.*"classname": *"/, "", suite); sub(/".*/, "", suite)
                           print "  skipped: " suite "." name; skip = 0 }' {} +)
skipped=$(grep -c '(Skipped)' "$CTEST_LOG" || true)
skipped=$(( skipped + $(printf '%s' "$skipped_cases" | grep -c 'skipped:' || true) ))
echo "== $count tests ($cases gtest cases in $suites suites, $((ctests - suites)) scripts; floor $floor), $skipped skipped on this machine"
grep '(Skipped)' "$CTEST_LOG" || true
[ -z "$skipped_cases" ] || printf '%s\n' "$skipped_cases"

# The optimised build users run (scripts/build.sh's RelWithDebInfo: -O2, here
# without -g): the SIMD kernels, the quantizers and the loader as shipped
# (ASan -O1 code is not what ships). It is compiled by clang-14 like the
# sanitized tree: GCC 12 took 642 s for it against clang's 386 s (same
# targets and flags, 2 cores), and the suite has no room for the difference.
# GCC builds every line in scripts/build.sh (the quick start, developers'
# trees). The numbers do not depend on the compiler (-ffp-contract=off, no
# -ffast-math): the aarch64 stage below compares the portable numerics'
# digests of a clang-built host binary with a GCC-built aarch64 one. Every room that computes numbers
# (runtime, quantize, calibration, prune, eval, support, ir, the GGUF block
# codecs, the shard writer's encoder, the loader) is at -O2; the plumbing
# (CLI, converter, ONNX/safetensors/NumPy parsers, the artifact reader,
# graph rewrites, exports' graph edits, the report, the tests' own code) at
# -O0 as in the ASan build (cmake/SlimpackBuildSpeed.cmake), to keep the
# suite in budget. It also runs the cross-CPU test, which converts under
# qemu as a Haswell and a Nehalem and needs a build without ASan's shadow
# memory.
echo "== optimised build (-O2, as shipped): kernels, quantizers, loader, cross-CPU bytes after $(( $(date +%s) - start ))s"
REL="$ROOT/build-rel"
cmake -S "$ROOT" -B "$REL" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DSLIMPACK_FAST_LINK=ON -DSLIMPACK_TEST_PCH=ON -DSLIMPACK_JSON_PCH=ON -DSLIMPACK_BUILD_BENCH=OFF \
  -DSLIMPACK_TEST_PER_SUITE=ON \
  -DSLIMPACK_O0_DIRS="tests;cli;converter;export;hf;report;passes;formats/onnx;formats/safetensors;formats/numpy;formats/shard/reader" \
  >/dev/null
cmake --build "$REL" -j "$JOBS" --target slimpack gemm_test conv_direct_test support_test \
  shard_loader_test quant_rtn_test quant_pack_test quant_gptq_test quant_awq_test gguf_test ir_test
REL_LOG="$REL/ctest-shipped.log"
ctest --test-dir "$REL" -j "$JOBS" -L 'shipped|quant' --output-on-failure 2>&1 | tee "$REL_LOG"
if ! grep -Eq 'cli_cross_cpu_bytes[ .]+Passed' "$REL_LOG"; then
  echo "test.sh: the cross-CPU test (cli_cross_cpu_bytes) did not run and pass"
  exit 1
fi

# The aarch64 loader tests run beside the fuzzing: their qemu runs are
# single-threaded and the fuzzer's last round runs one harness, so each
# fills the other's idle core. The fuzz_<parser> harnesses were linked in
# the sanitized tree above (SLIMPACK_FUZZ_HOOKS: the parsers' rooms carry
# libFuzzer's coverage hooks there), which saved compiling those rooms a
# third time in a tree of their own (277 s of this stage before).
echo "== fuzzing (libFuzzer, clang-14, ${FUZZ_SECONDS:-30}s per parser) and the loader tests on aarch64 (qemu-user) after $(( $(date +%s) - start ))s"
mkdir -p "$ROOT/build-aarch64"
AARCH64_LOG="$ROOT/build-aarch64/test.log"
bash "$ROOT/scripts/aarch64_loader_test.sh" >"$AARCH64_LOG" 2>&1 &
aarch64_pid=$!
fuzz_rc=0
FUZZ_PREBUILT="$BUILD" "$ROOT/scripts/fuzz.sh" || fuzz_rc=$?
aarch64_rc=0
wait "$aarch64_pid" || aarch64_rc=$?
echo "== loader tests on aarch64 (qemu-user), output ($AARCH64_LOG):"
cat "$AARCH64_LOG"
if [ "$fuzz_rc" != 0 ]; then
  cat "$BUILD/failure.txt" 2>/dev/null || true
  echo "test.sh: fuzzing failed (exit $fuzz_rc)"
  exit 1
fi
if [ "$aarch64_rc" != 0 ]; then echo "test.sh: the aarch64 loader tests failed (exit $aarch64_rc)"; exit 1; fi
echo "test.sh: all suites passed in $(( $(date +%s) - start ))s"
