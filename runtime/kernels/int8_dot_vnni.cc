// int8dot's AVX512-VNNI kernel: tiles of up to 4 rows x 64 columns, sixteen
// zmm accumulators, one VPDPBUSD per (row, 16 columns, 4 k). Compiled with
// -mavx512f -mavx512vnni (runtime/CMakeLists.txt) and called only after
// support::CpuAllows; nothing here may be an inline function shared with
// other objects (the linker could keep this object's AVX-512 copy).
#include "runtime/kernels/int8_dot.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512VNNI__)
// GCC 12's AVX-512 conversion intrinsics start from _mm*_undefined_*(), which
// its -Wmaybe-uninitialized reports at every inlined use (a false positive:
// every lane is written).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

namespace slimpack::runtime::kernels::int8dot {
namespace {

constexpr int kMaxRows = 4;
constexpr int kMaxVectors = 4;  // of 16 int32 columns

using TileFn = void (*)(const Operands& o, int64_t r0, int64_t c0);

// acc + VPDPBUSD(u, s): u's bytes read as unsigned, s's as signed. In
// inline assembly on GCC: its intrinsic does not tie the accumulator to
// the instruction's destination, and GCC 12 copied each of the tile's
// sixteen accumulators to another register on every k (half the loop's
// instructions). Clang keeps the intrinsic (and may fold a broadcast into
// the instruction's memory operand).
inline __m512i Dpbusd(__m512i acc, __m512i u, __m512i s) {
#if defined(__GNUC__) && !defined(__clang__)
  asm("vpdpbusd %[s], %[u], %[acc]" : [acc] "+v"(acc) : [u] "v"(u), [s] "v"(s));
  return acc;
#else
  return _mm512_dpbusd_epi32(acc, u, s);
#endif
}

// Sixteen sums (their integer terms added) as Requant's bytes: NaN lanes
// become zp, values are clamped to the integer bounds before rounding half
// to even (VCVTPS2DQ in the default rounding mode), as
// quantize_internal::SaturateRoundBytes does, so after adding zp every
// lane is in the byte type's range and VPMOVDB's truncation is exact.
struct ByteBounds {
  __m512 lo, hi;  // lo - zp, hi - zp
  __m512i zp;
  ByteBounds(int32_t lo_, int32_t hi_, int32_t zp_)
      : lo(_mm512_set1_ps(static_cast<float>(lo_ - zp_))),
        hi(_mm512_set1_ps(static_cast<float>(hi_ - zp_))),
        zp(_mm512_set1_epi32(zp_)) {}
};

__m128i RequantizeLanes(__m512i a, __m512 mult, const ByteBounds& b) {
  __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(a), mult);
  x = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x);
  x = _mm512_min_ps(_mm512_max_ps(x, b.lo), b.hi);
  return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(x), b.zp));
}

// The first n (1 to 16) bytes of v at p (a masked byte store would need
// AVX512BW).
void StoreBytes(uint8_t* p, __m128i v, int64_t n) {
  if (n >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
    return;
  }
  alignas(16) uint8_t bytes[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(bytes), v);
  std::memcpy(p, bytes, n);
}

// Rows r0..r0+R-1 times columns c0..c0+16V-1 (the last vector masked to
// o.cols), stored as int32 or, with kBytes, through o.requant. The panel is
// padded to whole vectors, so its loads need no mask. The two stores are
// separate instantiations: one tile with both had GCC copy the
// accumulators between registers on every k (a fifth slower).
template <bool kSignedRows, bool kBytes, int R, int V>
void Tile(const Operands& o, int64_t r0, int64_t c0) {
  __m512i acc[R][V];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_si512();
  }
  const uint8_t* row = o.row + r0 * o.ldr;
  const uint8_t* panel = o.panel + c0 * 4;
  for (int64_t q = 0; q < o.kq; ++q) {
    __m512i p[V];
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      p[v] = _mm512_loadu_si512(panel + (q * o.pcols + 16 * v) * 4);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, row + r * o.ldr + 4 * q, 4);
      const __m512i b = _mm512_set1_epi32(four);
      #pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        // VPDPBUSD: its second operand is read as unsigned bytes, the third
        // as signed.
        acc[r][v] = kSignedRows ? Dpbusd(acc[r][v], p[v], b) : Dpbusd(acc[r][v], b, p[v]);
      }
    }
  }
  if constexpr (kBytes) {
    const Requant& q = *o.requant;
    const ByteBounds bounds(q.lo, q.hi, q.out_zp);
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const int64_t c = c0 + 16 * v, left = o.cols - c;
      const auto mask = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
      const __m512i colsum = q.zp != nullptr ? _mm512_maskz_loadu_epi32(mask, q.colsum + c)
                                             : _mm512_setzero_si512();
      #pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        __m512i a = _mm512_add_epi32(acc[r][v], _mm512_set1_epi32(q.add[r0 + r]));
        if (q.zp != nullptr) {
          a = _mm512_sub_epi32(a, _mm512_mullo_epi32(_mm512_set1_epi32(q.zp[r0 + r]), colsum));
        }
        const __m128i bytes = RequantizeLanes(a, _mm512_set1_ps(q.mult[r0 + r]), bounds);
        StoreBytes(q.out + (r0 + r) * q.ldo + c, bytes, left);
      }
    }
  } else {
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const int64_t left = o.cols - c0 - 16 * v;
      const auto mask = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
      #pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        _mm512_mask_storeu_epi32(o.out + (r0 + r) * o.ldo + c0 + 16 * v, mask, acc[r][v]);
      }
    }
  }
}

template <bool S, bool B, int R>
constexpr TileFn kRowTiles[kMaxVectors] = {Tile<S, B, R, 1>, Tile<S, B, R, 2>, Tile<S, B, R, 3>,
                                           Tile<S, B, R, 4>};

// kTiles<signed rows, bytes>[rows - 1][vectors - 1].
template <bool S, bool B>
constexpr const TileFn* kTiles[kMaxRows] = {kRowTiles<S, B, 1>, kRowTiles<S, B, 2>,
                                            kRowTiles<S, B, 3>, kRowTiles<S, B, 4>};

}  // namespace

bool HaveVnni512() {
  static const bool ok = support::CpuAllows(support::CpuFeature::kAvx512f) &&
                         support::CpuAllows(support::CpuFeature::kAvx512vnni);
  return ok;
}

bool DotVnni512(const Operands& o) {
  if (!HaveVnni512()) return false;
  constexpr int64_t kBlock = 16 * kMaxVectors;
  for (int64_t c0 = 0; c0 < o.cols; c0 += kBlock) {
    // No std::min (an inline function other objects share; see the top).
    const int64_t need = (o.cols - c0 + 15) / 16;
    const int64_t vectors = need < kMaxVectors ? need : kMaxVectors;
    for (int64_t r0 = 0; r0 < o.rows; r0 += kMaxRows) {
      const int64_t rows = o.rows - r0 < kMaxRows ? o.rows - r0 : kMaxRows;
      const TileFn* const* tiles =
          o.signed_rows ? (o.requant != nullptr ? kTiles<true, true> : kTiles<true, false>)
                        : (o.requant != nullptr ? kTiles<false, true> : kTiles<false, false>);
      tiles[rows - 1][vectors - 1](o, r0, c0);
    }
  }
  return true;
}

bool RequantizeVnni512(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t lo,
                       int32_t hi, int32_t zp, uint8_t* out) {
  if (!HaveVnni512()) return false;
  const __m512i vb = _mm512_set1_epi32(bias);
  const __m512 vm = _mm512_set1_ps(mult);
  const ByteBounds bounds(lo, hi, zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i a = _mm512_add_epi32(_mm512_loadu_si512(acc + i), vb);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), RequantizeLanes(a, vm, bounds));
  }
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i a = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, acc + i), vb);
    StoreBytes(out + i, RequantizeLanes(a, vm, bounds), n - i);
  }
  return true;
}

}  // namespace slimpack::runtime::kernels::int8dot

#else

namespace slimpack::runtime::kernels::int8dot {
bool HaveVnni512() { return false; }
bool DotVnni512(const Operands&) { return false; }
bool RequantizeVnni512(const int32_t*, int64_t, int32_t, float, int32_t, int32_t, int32_t,
                       uint8_t*) {
  return false;
}
}  // namespace slimpack::runtime::kernels::int8dot

#endif
