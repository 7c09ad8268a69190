// int8dot's AVX-VNNI kernel, for CPUs with the 256-bit byte dot product but
// no AVX-512 (Intel Alder Lake and later client parts): tiles of up to
// 4 rows x 32 columns (int8_dot_ymm_tile.h), sixteen ymm accumulators, one
// VPDPBUSD per (row, 8 columns, 4 k). The same sums as the AVX-512 kernel and the portable
// loop. Compiled with -mavx2 -mavxvnni (runtime/CMakeLists.txt) and called
// only after support::CpuAllows; nothing here may be an inline function
// shared with other objects.
#include "runtime/kernels/int8_dot.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVXVNNI__)
#include <immintrin.h>

#include "runtime/kernels/int8_dot_ymm_tile.h"

namespace slimpack::runtime::kernels::int8dot {
namespace {

// The tile's multiply-add (int8_dot_ymm_tile.h): one VPDPBUSD per (row,
// 8 columns, 4 k), whose second operand it reads as unsigned bytes and
// third as signed; tiles of up to 4 rows x 4 vectors (sixteen accumulators).
struct VnniMac {
  static constexpr int kMaxVectors = 4;
  template <bool kSignedRows>
  static __m256i Panel(__m256i bytes) {
    return bytes;
  }
  template <bool kSignedRows>
  static __m256i Row(const Operands& o, int64_t r, int64_t q) {
    return YmmRowQuad(o, r, q);
  }
  template <bool kSignedRows>
  static __m256i Add(__m256i acc, __m256i row, __m256i panel) {
    return kSignedRows ? Dpbusd(acc, panel, row) : Dpbusd(acc, row, panel);
  }
  // acc + VPDPBUSD(u, s), u's bytes unsigned and s's signed; in inline
  // assembly on GCC, as int8_dot_vnni.cc does and for the same reason (the
  // intrinsic leaves the accumulator untied: a register copy per k). The
  // {vex} prefix keeps the AVX-VNNI encoding (the EVEX one would fault on
  // a CPU without AVX-512); GNU as understands it from binutils 2.36
  // (Debian 12 has 2.40).
  static __m256i Dpbusd(__m256i acc, __m256i u, __m256i s) {
#if defined(__GNUC__) && !defined(__clang__)
    asm("%{vex%} vpdpbusd %[s], %[u], %[acc]" : [acc] "+x"(acc) : [u] "x"(u), [s] "x"(s));
    return acc;
#else
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
  }
};

}  // namespace

bool HaveAvxVnni() {
  static const bool ok = support::CpuAllows(support::CpuFeature::kAvxVnni);
  return ok;
}

bool DotAvxVnni(const Operands& o) {
  if (!HaveAvxVnni()) return false;
  YmmDot<VnniMac>(o);
  return true;
}

}  // namespace slimpack::runtime::kernels::int8dot

#else

namespace slimpack::runtime::kernels::int8dot {
bool HaveAvxVnni() { return false; }
bool DotAvxVnni(const Operands&) { return false; }
}  // namespace slimpack::runtime::kernels::int8dot

#endif
