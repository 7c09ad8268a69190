// SLIMPACK_SIMD_CLONES: marks a hot double-precision loop for an
// AVX2 clone picked at load time (GCC target_clones / ifunc) with the
// baseline x86-64 version as fallback. The library is built with
// -ffp-contract=off, so clones execute the same multiplies and adds and
// give bit-identical results; only the vector width differs.
#ifndef SLIMPACK_SUPPORT_SIMD_CLONES_H_
#define SLIMPACK_SUPPORT_SIMD_CLONES_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__linux__)
#define SLIMPACK_SIMD_CLONES \
  __attribute__((target_clones("avx2", "default")))
// The same with an AVX-512 clone as well, for loops written with 64-byte
// vectors (one ZMM register there, two YMM on AVX2, four XMM on the baseline).
#define SLIMPACK_SIMD_CLONES_512 \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SLIMPACK_SIMD_CLONES
#define SLIMPACK_SIMD_CLONES_512
#endif

// GCC warns that passing V4d by value differs between ISAs (-Wpsabi); the
// helpers below are always inlined, so no such call exists (the library
// builds with -Wno-psabi).
namespace slimpack::support {
// Four doubles as a GCC vector (two SSE2 registers, or one AVX2 register in
// an AVX2 clone); element alignment only, so any double* can be read.
typedef double V4d __attribute__((vector_size(32), aligned(8)));
// Always inlined: an out-of-line copy (at -O0) compiled for the baseline
// ISA would pass V4d with a different ABI than an AVX2 clone expects.
__attribute__((always_inline)) inline V4d LoadV4(const double* p) {
  return *reinterpret_cast<const V4d*>(p);
}
__attribute__((always_inline)) inline void StoreV4(double* p, V4d v) {
  *reinterpret_cast<V4d*>(p) = v;
}
}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_SIMD_CLONES_H_
