#!/usr/bin/env bash
# Cross-compiles the standalone shard loader and its tests for aarch64 and
# runs them under qemu-user. Needs g++-aarch64-linux-gnu, qemu-user and
# Debian's googletest sources (/usr/src/googletest, from libgtest-dev).
#   scripts/aarch64_loader_test.sh [build-dir]   (default: build-aarch64)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${root}/build-aarch64}"
jobs="${JOBS:-2}"

for tool in aarch64-linux-gnu-g++ qemu-aarch64 cmake; do
  command -v "${tool}" >/dev/null || { echo "error: ${tool} not found" >&2; exit 1; }
done
[[ -f /usr/src/googletest/CMakeLists.txt ]] || {
  echo "error: /usr/src/googletest missing (apt-get install libgtest-dev)" >&2; exit 1; }

# The top-level GTest lookup is for host builds; here GoogleTest is built
# from source for the target instead.
cmake -S "${root}" -B "${build}" \
  -DCMAKE_TOOLCHAIN_FILE="${root}/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release \
  -DSLIMPACK_LOADER_ONLY=ON \
  -DSLIMPACK_BUILD_TESTS=OFF \
  -DSLIMPACK_LOADER_GTEST_SOURCE=/usr/src/googletest
cmake --build "${build}" -j "${jobs}" --target \
  shard_loader_test loader_example_c loader_example_cpp loader_open_bench \
  make_example_artifact

# Tests, under qemu through ctest (the toolchain's CROSSCOMPILING_EMULATOR).
# enable_testing() happens in the loader's directory in this configuration,
# so ctest runs from there; finding no test is an error.
(cd "${build}/formats/shard/loader" &&
  ctest --output-on-failure --no-tests=error -j "${jobs}")

# Again in one process each with 16 KiB pages (recent Android, Apple) and
# 64 KiB pages: mapping offsets come from sysconf(_SC_PAGESIZE), and qemu's
# -p sets what it returns.
for page in 16384 65536; do
  echo "== shard_loader_test with ${page}-byte pages"
  qemu-aarch64 -L /usr/aarch64-linux-gnu -p "${page}" \
    "${build}/formats/shard/loader/tests/shard_loader_test" --gtest_brief=1
done

# The examples on a generated artifact, and the benchmark, as an arm64 app
# would run them.
qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
bin="${build}/formats/shard/loader"
art="$(mktemp -d)/artifact"
trap 'rm -rf "$(dirname "${art}")"' EXIT
"${qemu[@]}" "${bin}/tests/make_example_artifact" "${art}"
"${qemu[@]}" "${bin}/loader_example_c" "${art}"
"${qemu[@]}" "${bin}/loader_example_cpp" "${art}" --verify
# Figures under emulation say nothing about a phone; this checks it runs.
"${qemu[@]}" "${bin}/loader_open_bench" 56 5 16

# The portable numerics (support/portable_math, the generic GEMM
# micro-kernel) give the same bits on aarch64 as here: digests of a sweep
# of inputs, built for both and compared (tests/support/portable_digest.cc):
# the host's by clang, the aarch64 one by GCC, so the check also covers the
# two compilers scripts/test.sh and scripts/build.sh use.
echo "== portable numerics: aarch64 (qemu) vs host bits"
digest_src=("${root}/tests/support/portable_digest.cc" "${root}/support/portable_math.cc"
            "${root}/runtime/gemm/kernel_generic.cc")
clang++-14 -std=c++17 -O2 -ffp-contract=off -Wno-psabi -I "${root}" "${digest_src[@]}" -o "${build}/portable_digest_host"
aarch64-linux-gnu-g++ -std=c++17 -O2 -ffp-contract=off -Wno-psabi -I "${root}" "${digest_src[@]}" \
  -o "${build}/portable_digest_aarch64"
"${build}/portable_digest_host" > "${build}/portable_digest_host.txt"
"${qemu[@]}" "${build}/portable_digest_aarch64" > "${build}/portable_digest_aarch64.txt"
if ! diff "${build}/portable_digest_host.txt" "${build}/portable_digest_aarch64.txt"; then
  echo "error: portable numerics differ between x86-64 and aarch64 (diff above)" >&2
  exit 1
fi
echo "ok: $(wc -l < "${build}/portable_digest_host.txt") digests identical on x86-64 and aarch64"

