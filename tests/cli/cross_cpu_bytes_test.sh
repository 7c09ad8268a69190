#!/usr/bin/env bash
# Issue 19: the same inputs and recipe give the same bytes on any CPU.
# Converts the digits CNN to W8A8 (calibration runs every conv and GEMM),
# the tiny llama to RTN INT4 (sym and asym) and to imatrix INT4 on one
# 64-token window (calibration
# runs the decoder: matmuls, softmax, SiLU, RMSNorm, rotary sin/cos; one
# window because emulated FMA under emulated SSE takes ~45 s) natively and under
# qemu-x86_64 as a Haswell (AVX2 + FMA, no AVX-512) and a Nehalem (SSE4.2,
# no AVX, no FMA), and natively with the kernels capped at AVX2 and at SSE2
# (SLIMPACK_CPU_MAX), and requires identical artifacts. Each emulated run must
# have picked that CPU's GEMM micro-kernel (slimpack --version says which).
# Runs against the optimised build: the sanitizer's shadow memory does not
# fit under qemu-user.
# With CONV_TEST (conv_direct_test), its bit-for-bit check of the fixed
# summation order also runs under both emulated CPUs, where the Conv op
# takes im2col + GEMM instead of the direct AVX-512 kernel.
#   cross_cpu_bytes_test.sh SLIMPACK ROOT [CONV_TEST]
set -u
SLIMPACK="$1"
ROOT="$2"
CONV_TEST="${3:-}"
GGUF_TEST="${4:-}"  # the ggml block encoders' lane searches and golden bytes
IR_TEST="${5:-}"    # f16 -> f32 by F16C or the scalar loop
SUPPORT_TEST="${6:-}"  # fixed-order products: the AVX2 clone and the baseline
# (qemu's TCG has no AVX-512: the AVX-512 paths are compared on the host
# only, where the suite runs these tests natively when the CPU has it)
CNN="$ROOT/examples/digits-cnn/model.onnx"
CNN_CALIB="$ROOT/examples/digits-cnn/calib.npz"
LLAMA="$ROOT/examples/tiny-llama"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0
command -v qemu-x86_64 >/dev/null || { echo "FAIL: qemu-x86_64 not installed (scripts/install_deps.sh installs qemu-user)"; exit 1; }

convert_all() {  # convert_all NAME [qemu args...]
  local name="$1"; shift
  local run=("$@" "$SLIMPACK")
  # (qemu warns on stderr about CPUID bits TCG does not model.)
  "${run[@]}" --version >"$TMP/$name.version" 2>/dev/null || { echo "FAIL: $name: --version"; fail=1; }
  mkdir -p "$TMP/$name"
  local t0=$SECONDS
  if ! "${run[@]}" convert "$CNN" -o "$TMP/$name/w8a8" --quant w8a8 --calib "$CNN_CALIB" \
       --threads 2 >"$TMP/$name.log" 2>&1; then
    echo "FAIL: $name: w8a8 convert"; tail -5 "$TMP/$name.log"; fail=1
  fi
  if ! "${run[@]}" convert "$LLAMA" -o "$TMP/$name/imatrix" --quant int4 --algo imatrix \
       --calib "$LLAMA/calib_tokens.npy" --calib-samples 1 --threads 2 >>"$TMP/$name.log" 2>&1; then
    echo "FAIL: $name: imatrix convert"; tail -5 "$TMP/$name.log"; fail=1
  fi
  # Plain RTN, symmetric and asymmetric: the AVX2 kernel computes eight
  # groups' grids at once (F16C scales), the scalar one a group at a time.
  # Groups of 8, so every row of the 128-wide model has 16 (at 32 only the
  # MLP's down projection has 8 or more).
  if ! "${run[@]}" convert "$LLAMA" -o "$TMP/$name/rtn" --quant int4 --group 8 \
       --threads 2 >>"$TMP/$name.log" 2>&1 ||
     ! "${run[@]}" convert "$LLAMA" -o "$TMP/$name/rtn-asym" --quant int4 --group 8 --asym \
       --threads 2 >>"$TMP/$name.log" 2>&1; then
    echo "FAIL: $name: rtn convert"; tail -5 "$TMP/$name.log"; fail=1
  fi
  echo "ran: $name ($(cat "$TMP/$name.version")) in $((SECONDS - t0))s"
}

expect_kernel() {  # expect_kernel NAME KERNEL
  if grep -q "gemm micro-kernel: $2)" "$TMP/$1.version"; then echo "ok: $1 ran the $2 kernel"
  else echo "FAIL: $1 should run the $2 kernel: $(cat "$TMP/$1.version")"; fail=1; fi
}

same_tree() {  # same_tree A B DESCRIPTION
  if [ -d "$1" ] && [ -d "$2" ] && diff -r "$1" "$2" >/dev/null; then
    echo "ok: $3: identical bytes ($(cd "$1" && find . -type f | sort | xargs cat | sha256sum | cut -c1-16))"
  else
    echo "FAIL: $3: artifacts differ"; diff -r "$1" "$2" 2>&1 | head; fail=1
  fi
}

convert_all native
convert_all haswell qemu-x86_64 -cpu Haswell
convert_all nehalem qemu-x86_64 -cpu Nehalem
expect_kernel haswell avx2
expect_kernel nehalem sse2-exact-fma
# This host's own AVX2 and SSE2 paths, the kernels capped by SLIMPACK_CPU_MAX
# (support/cpu_features.h): the same artifacts again.
caps=(sse2)
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && caps+=(avx2)
for cap in "${caps[@]}"; do convert_all "capped-$cap" env SLIMPACK_CPU_MAX="$cap"; done
expect_kernel capped-sse2 sse2-exact-fma
[[ " ${caps[*]} " == *" avx2 "* ]] && expect_kernel capped-avx2 avx2
if [ -n "$CONV_TEST" ]; then
  for cpu in Haswell Nehalem; do
    if qemu-x86_64 -cpu "$cpu" "$CONV_TEST" --gtest_filter='*FixedOrder*' --gtest_brief=1 \
         >"$TMP/conv.log" 2>/dev/null; then
      echo "ok: conv fixed order on $cpu ($(grep -o '[0-9]* tests\?' "$TMP/conv.log" | tail -1) passed)"
    else
      echo "FAIL: conv fixed order on $cpu"; tail -20 "$TMP/conv.log"; fail=1
    fi
  done
fi
# Unit tests whose code picks a path by CPU, compared with the scalar
# reference (or ggml's golden bytes) on each CPU qemu models.
unit_under_qemu() {  # unit_under_qemu BINARY FILTER DESCRIPTION
  [ -n "$1" ] || return 0
  for cpu in Haswell Nehalem; do
    if qemu-x86_64 -cpu "$cpu" "$1" --gtest_filter="$2" --gtest_brief=1 >"$TMP/unit.log" 2>/dev/null; then
      echo "ok: $3 on $cpu ($(grep -o '[0-9]* tests\?' "$TMP/unit.log" | tail -1) passed)"
    else
      echo "FAIL: $3 on $cpu"; tail -20 "$TMP/unit.log"; fail=1
    fi
  done
}
unit_under_qemu "$GGUF_TEST" '*Lanes*:*RoundToGrids*:*AcrossBatch*:*GgmlBlocksGolden*:*Q8_0*' "ggml block encoders"
unit_under_qemu "$IR_TEST" '*FloatConvert*' "float conversions"
unit_under_qemu "$SUPPORT_TEST" '*OrderedProducts*:*ExpArray*' "fixed-order products, ExpArray"
for cpu in haswell nehalem "${caps[@]/#/capped-}"; do
  same_tree "$TMP/native/w8a8" "$TMP/$cpu/w8a8" "digits W8A8, native vs $cpu"
  same_tree "$TMP/native/imatrix" "$TMP/$cpu/imatrix" "tiny-llama imatrix INT4, native vs $cpu"
  same_tree "$TMP/native/rtn" "$TMP/$cpu/rtn" "tiny-llama RTN INT4 g8, native vs $cpu"
  same_tree "$TMP/native/rtn-asym" "$TMP/$cpu/rtn-asym" "tiny-llama RTN INT4 g8 asym, native vs $cpu"
done
exit $fail
