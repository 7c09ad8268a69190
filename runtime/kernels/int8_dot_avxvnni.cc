// int8dot's AVX-VNNI kernel, for CPUs with the 256-bit byte dot product but
// no AVX-512 (Intel Alder Lake and later client parts): tiles of up to
// 4 rows x 32 columns, sixteen ymm accumulators, one VPDPBUSD per (row,
// 8 columns, 4 k). The same sums as the AVX-512 kernel and the portable
// loop. Compiled with -mavx2 -mavxvnni (runtime/CMakeLists.txt) and called
// only after support::CpuAllows; nothing here may be an inline function
// shared with other objects.
#include "runtime/kernels/int8_dot.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVXVNNI__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace slimpack::runtime::kernels::int8dot {
namespace {

constexpr int kMaxRows = 4;
constexpr int kMaxVectors = 4;  // of 8 int32 columns

using TileFn = void (*)(const Operands& o, int64_t r0, int64_t c0);

// Rows r0..r0+R-1 times columns c0..c0+8V-1, the last vector masked to
// o.cols. The panel is padded to 16 columns, so its loads need no mask.
template <bool kSignedRows, int R, int V>
void Tile(const Operands& o, int64_t r0, int64_t c0) {
  __m256i acc[R][V];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_si256();
  }
  const uint8_t* row = o.row + r0 * o.ldr;
  const uint8_t* panel = o.panel + c0 * 4;
  for (int64_t q = 0; q < o.kq; ++q) {
    __m256i p[V];
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      p[v] = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(panel + (q * o.pcols + 8 * v) * 4));
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, row + r * o.ldr + 4 * q, 4);
      const __m256i b = _mm256_set1_epi32(four);
      #pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        // VPDPBUSD: its second operand is read as unsigned bytes, the third
        // as signed.
        acc[r][v] = kSignedRows ? _mm256_dpbusd_avx_epi32(acc[r][v], p[v], b)
                                : _mm256_dpbusd_avx_epi32(acc[r][v], b, p[v]);
      }
    }
  }
  #pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const int64_t left = o.cols - c0 - 8 * v;
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      int32_t* dst = o.out + (r0 + r) * o.ldo + c0 + 8 * v;
      if (left >= 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), acc[r][v]);
      } else {
        alignas(32) int32_t lanes[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[r][v]);
        std::memcpy(dst, lanes, left * sizeof(int32_t));
      }
    }
  }
}

template <bool S, int R>
constexpr TileFn kRowTiles[kMaxVectors] = {Tile<S, R, 1>, Tile<S, R, 2>, Tile<S, R, 3>,
                                           Tile<S, R, 4>};

template <bool S>
constexpr const TileFn* kTiles[kMaxRows] = {kRowTiles<S, 1>, kRowTiles<S, 2>, kRowTiles<S, 3>,
                                            kRowTiles<S, 4>};

}  // namespace

bool HaveAvxVnni() {
  static const bool ok = support::CpuAllows(support::CpuFeature::kAvxVnni);
  return ok;
}

bool DotAvxVnni(const Operands& o) {
  if (!HaveAvxVnni()) return false;
  constexpr int64_t kBlock = 8 * kMaxVectors;
  for (int64_t c0 = 0; c0 < o.cols; c0 += kBlock) {
    const int64_t vectors = std::min<int64_t>(kMaxVectors, (o.cols - c0 + 7) / 8);
    for (int64_t r0 = 0; r0 < o.rows; r0 += kMaxRows) {
      const int64_t rows = std::min<int64_t>(kMaxRows, o.rows - r0);
      (o.signed_rows ? kTiles<true> : kTiles<false>)[rows - 1][vectors - 1](o, r0, c0);
    }
  }
  return true;
}

}  // namespace slimpack::runtime::kernels::int8dot

#else

namespace slimpack::runtime::kernels::int8dot {
bool HaveAvxVnni() { return false; }
bool DotAvxVnni(const Operands&) { return false; }
}  // namespace slimpack::runtime::kernels::int8dot

#endif
