// Fixed-order dense products (see ordered_products.h).
#include "support/ordered_products.h"

#include "support/cpu_features.h"
#include "support/simd_clones.h"

namespace slimpack::support {
namespace {

// One strip's 8 columns of R rows (R = 4 or 1) of `out`; `src` is the
// strip (rows kStripWidth apart).
template <int R>
__attribute__((always_inline)) inline void SubtractProducts8(
    double* out, int64_t ldo, const double* coef, int64_t ldc,
    const double* src, int64_t count) {
  static_assert(R == 4 || R == 1);
  if constexpr (R == 4) {
    double* o0 = out;
    double* o1 = o0 + ldo;
    double* o2 = o1 + ldo;
    double* o3 = o2 + ldo;
    const double* k0 = coef;
    const double* k1 = k0 + ldc;
    const double* k2 = k1 + ldc;
    const double* k3 = k2 + ldc;
    V4d a0 = LoadV4(o0), b0 = LoadV4(o0 + 4);
    V4d a1 = LoadV4(o1), b1 = LoadV4(o1 + 4);
    V4d a2 = LoadV4(o2), b2 = LoadV4(o2 + 4);
    V4d a3 = LoadV4(o3), b3 = LoadV4(o3 + 4);
    for (int64_t k = 0; k < count; ++k, src += kStripWidth) {
      const V4d s0 = LoadV4(src), s1 = LoadV4(src + 4);
      const double e0 = k0[k], e1 = k1[k], e2 = k2[k], e3 = k3[k];
      a0 -= e0 * s0;
      b0 -= e0 * s1;
      a1 -= e1 * s0;
      b1 -= e1 * s1;
      a2 -= e2 * s0;
      b2 -= e2 * s1;
      a3 -= e3 * s0;
      b3 -= e3 * s1;
    }
    StoreV4(o0, a0);
    StoreV4(o0 + 4, b0);
    StoreV4(o1, a1);
    StoreV4(o1 + 4, b1);
    StoreV4(o2, a2);
    StoreV4(o2 + 4, b2);
    StoreV4(o3, a3);
    StoreV4(o3 + 4, b3);
  } else {
    V4d a0 = LoadV4(out), b0 = LoadV4(out + 4);
    for (int64_t k = 0; k < count; ++k, src += kStripWidth) {
      a0 -= coef[k] * LoadV4(src);
      b0 -= coef[k] * LoadV4(src + 4);
    }
    StoreV4(out, a0);
    StoreV4(out + 4, b0);
  }
}



// The padded last strip: columns [c, cols), element by element.
__attribute__((always_inline)) inline void SubtractProductsTail(
    double* out, int64_t ldo, const double* coef, int64_t ldc,
    const double* src, int64_t rows, int64_t count, int64_t c, int64_t cols) {
  for (int64_t c8 = 0; c < cols; ++c, ++c8) {
    for (int64_t r = 0; r < rows; ++r) {
      double acc = out[r * ldo + c];
      for (int64_t k = 0; k < count; ++k) {
        acc -= coef[r * ldc + k] * src[k * kStripWidth + c8];
      }
      out[r * ldo + c] = acc;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define SLIMPACK_HAVE_AVX512_PRODUCTS 1
typedef double V8d __attribute__((vector_size(64), aligned(8)));

// R rows of one strip, a row's 8 columns in one ZMM register. Eight rows
// keep eight independent subtraction chains in flight (the four-row
// AVX2 tile is bound by the subtraction latency at this width); the
// operations per element are the plain loop's.
// With `next` set, also prefetches the strip at `next` a row (one cache
// line) per step: the strip the next pass needs arrives while this one
// runs, instead of stalling the first rows of that pass on memory.
template <int R>
__attribute__((always_inline, target("avx512f"))) inline void SubtractProductsRows512(
    double* out, int64_t ldo, const double* coef, int64_t ldc,
    const double* src, int64_t count, const double* next = nullptr) {
  V8d acc[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) acc[i] = *reinterpret_cast<const V8d*>(out + i * ldo);
  for (int64_t k = 0; k < count; ++k, src += kStripWidth) {
    if (next != nullptr) __builtin_prefetch(next + k * kStripWidth, 0, 3);
    const V8d s = *reinterpret_cast<const V8d*>(src);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) acc[i] -= coef[i * ldc + k] * s;
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) *reinterpret_cast<V8d*>(out + i * ldo) = acc[i];
}

__attribute__((target("avx512f"))) void SubtractProductsAvx512(
    double* out, int64_t ldo, const double* coef, int64_t ldc,
    const double* src, int64_t sstride, int64_t rows, int64_t count,
    int64_t cols) {
  int64_t c = 0;
  for (; c + kStripWidth <= cols; c += kStripWidth, src += sstride) {
    int64_t r = 0;
    if (rows >= 16 && c + 2 * kStripWidth <= cols) {
      SubtractProductsRows512<8>(out + c, ldo, coef, ldc, src, count, src + sstride);
      r = 8;
    }
    for (; r + 8 <= rows; r += 8) {
      SubtractProductsRows512<8>(out + r * ldo + c, ldo, coef + r * ldc, ldc, src, count);
    }
    for (; r + 4 <= rows; r += 4) {
      SubtractProductsRows512<4>(out + r * ldo + c, ldo, coef + r * ldc, ldc, src, count);
    }
    for (; r < rows; ++r) {
      SubtractProductsRows512<1>(out + r * ldo + c, ldo, coef + r * ldc, ldc, src, count);
    }
  }
  SubtractProductsTail(out, ldo, coef, ldc, src, rows, count, c, cols);
}

bool HasAvx512() {
  static const bool has = support::CpuAllows(support::CpuFeature::kAvx512f);
  return has;
}
#endif

SLIMPACK_SIMD_CLONES
void SubtractProductsGeneric(double* out, int64_t ldo, const double* coef,
                             int64_t ldc, const double* src, int64_t sstride,
                             int64_t rows, int64_t count, int64_t cols) {
  int64_t c = 0;
  for (; c + kStripWidth <= cols; c += kStripWidth, src += sstride) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      SubtractProducts8<4>(out + r * ldo + c, ldo, coef + r * ldc, ldc, src,
                           count);
    }
    for (; r < rows; ++r) {
      SubtractProducts8<1>(out + r * ldo + c, ldo, coef + r * ldc, ldc, src,
                           count);
    }
  }
  SubtractProductsTail(out, ldo, coef, ldc, src, rows, count, c, cols);
}

}  // namespace

void SubtractProducts(double* out, int64_t ldo, const double* coef,
                      int64_t ldc, const double* src, int64_t sstride,
                      int64_t rows, int64_t count, int64_t cols) {
#ifdef SLIMPACK_HAVE_AVX512_PRODUCTS
  if (HasAvx512()) {
    return SubtractProductsAvx512(out, ldo, coef, ldc, src, sstride, rows, count, cols);
  }
#endif
  SubtractProductsGeneric(out, ldo, coef, ldc, src, sstride, rows, count, cols);
}

SLIMPACK_SIMD_CLONES
void SubtractScaled(double* out, const double* src, double scale, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] -= scale * src[j];
}

}  // namespace slimpack::support
