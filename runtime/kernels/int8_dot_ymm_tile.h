// The register tile and driver int8dot's two 256-bit kernels share
// (int8_dot_avxvnni.cc: VPDPBUSD; int8_dot_avx2.cc: VPMADDWD on widened
// bytes). Included by those two files only, each compiled with its own
// instruction-set flags: everything here is in an anonymous namespace, so
// each object keeps its own copy and the linker cannot hand one object the
// other's code (which an inline function of external linkage would allow).
// The includer defines its multiply-add as a policy type Mac:
//   static constexpr int kMaxVectors;   // 8-column vectors per tile
//   template <bool kSignedRows> static P Panel(__m256i bytes);  // 4 k of 8 columns
//   template <bool kSignedRows> static W Row(const Operands& o, int64_t r, int64_t q);
//                                    // row r's k 4q..4q+3, broadcast
//   template <bool kSignedRows> static __m256i Add(__m256i acc, const W& row, const P& panel);
// adding the products of the row's bytes (signed when kSignedRows) and
// the panel's (then unsigned, else signed) for each 32-bit lane's four k.
#ifndef SLIMPACK_RUNTIME_KERNELS_INT8_DOT_YMM_TILE_H_
#define SLIMPACK_RUNTIME_KERNELS_INT8_DOT_YMM_TILE_H_

#if !defined(__AVX2__)
#error "int8_dot_ymm_tile.h is for objects compiled with AVX2 or later"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/kernels/int8_dot.h"

namespace slimpack::runtime::kernels::int8dot {
namespace {

constexpr int kYmmMaxRows = 4;

using YmmTileFn = void (*)(const Operands& o, int64_t r0, int64_t c0);

// Eight sums (their integer terms added) as Requant's bytes, in the low
// eight bytes: NaN lanes become zp, values are clamped to the integer
// bounds before rounding half to even (VCVTPS2DQ in the default rounding
// mode), as quantize_internal::SaturateRoundBytes does, so after adding zp
// every lane is in the byte type's range and the saturating packs change
// nothing.
inline __m128i YmmRequantizeLanes(__m256i a, __m256 mult, const Requant& q) {
  const __m256 flo = _mm256_set1_ps(static_cast<float>(q.lo - q.out_zp));
  const __m256 fhi = _mm256_set1_ps(static_cast<float>(q.hi - q.out_zp));
  __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(a), mult);
  x = _mm256_and_ps(x, _mm256_cmp_ps(x, x, _CMP_ORD_Q));
  x = _mm256_min_ps(_mm256_max_ps(x, flo), fhi);
  const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(x), _mm256_set1_epi32(q.out_zp));
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  return q.lo == 0 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
}

// Row r's bytes 4q..4q+3 broadcast to every 32-bit lane.
inline __m256i YmmRowQuad(const Operands& o, int64_t r, int64_t q) {
  int32_t four;
  std::memcpy(&four, o.row + r * o.ldr + 4 * q, 4);
  return _mm256_set1_epi32(four);
}

// Rows r0..r0+R-1 times columns c0..c0+8V-1, the last vector stored up to
// o.cols, as int32 or, with kBytes, through o.requant. The panel is padded
// to 16 columns, so its loads need no mask. The two stores are separate
// instantiations, as in int8_dot_vnni.cc (one tile with both had GCC copy
// the accumulators between registers on every k).
template <typename Mac, bool kSignedRows, bool kBytes, int R, int V>
void YmmTile(const Operands& o, int64_t r0, int64_t c0) {
  __m256i acc[R][V];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_si256();
  }
  const uint8_t* panel = o.panel + c0 * 4;
  for (int64_t q = 0; q < o.kq; ++q) {
    decltype(Mac::template Panel<kSignedRows>(__m256i())) p[V];
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      p[v] = Mac::template Panel<kSignedRows>(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(panel + (q * o.pcols + 8 * v) * 4)));
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const auto b = Mac::template Row<kSignedRows>(o, r0 + r, q);
      #pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = Mac::template Add<kSignedRows>(acc[r][v], b, p[v]);
    }
  }
  if constexpr (kBytes) {
    const Requant& q = *o.requant;
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const int64_t c = c0 + 8 * v, left = o.cols - c;
      if (left <= 0) continue;
      __m256i colsum = _mm256_setzero_si256();
      if (q.zp != nullptr) {
        alignas(32) int32_t sums[8] = {};
        std::memcpy(sums, q.colsum + c, (left < 8 ? left : 8) * sizeof(int32_t));
        colsum = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums));
      }
      #pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        __m256i a = _mm256_add_epi32(acc[r][v], _mm256_set1_epi32(q.add[r0 + r]));
        if (q.zp != nullptr) {
          a = _mm256_sub_epi32(a, _mm256_mullo_epi32(_mm256_set1_epi32(q.zp[r0 + r]), colsum));
        }
        const __m128i bytes = YmmRequantizeLanes(a, _mm256_set1_ps(q.mult[r0 + r]), q);
        uint8_t* dst = q.out + (r0 + r) * q.ldo + c;
        if (left >= 8) {
          _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), bytes);
        } else {
          alignas(16) uint8_t lanes[16];
          _mm_store_si128(reinterpret_cast<__m128i*>(lanes), bytes);
          std::memcpy(dst, lanes, left);
        }
      }
    }
  } else {
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const int64_t left = o.cols - c0 - 8 * v;
      #pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        int32_t* dst = o.out + (r0 + r) * o.ldo + c0 + 8 * v;
        if (left >= 8) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), acc[r][v]);
        } else if (left > 0) {
          alignas(32) int32_t lanes[8];
          _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[r][v]);
          std::memcpy(dst, lanes, left * sizeof(int32_t));
        }
      }
    }
  }
}

// Tiles past Mac::kMaxVectors vectors are never called: their entries
// repeat the widest, so no wider tile is compiled.
template <typename Mac, int V>
constexpr int kYmmVectors = V < Mac::kMaxVectors ? V : Mac::kMaxVectors;

// kYmmTiles<Mac, signed rows, bytes>[rows - 1][vectors - 1] for up to
// kYmmMaxRows rows and 4 vectors.
template <typename Mac, bool S, bool B, int R>
constexpr YmmTileFn kYmmRowTiles[4] = {
    YmmTile<Mac, S, B, R, kYmmVectors<Mac, 1>>, YmmTile<Mac, S, B, R, kYmmVectors<Mac, 2>>,
    YmmTile<Mac, S, B, R, kYmmVectors<Mac, 3>>, YmmTile<Mac, S, B, R, kYmmVectors<Mac, 4>>};
template <typename Mac, bool S, bool B>
constexpr const YmmTileFn* kYmmTiles[kYmmMaxRows] = {
    kYmmRowTiles<Mac, S, B, 1>, kYmmRowTiles<Mac, S, B, 2>, kYmmRowTiles<Mac, S, B, 3>,
    kYmmRowTiles<Mac, S, B, 4>};

// o's sums through `tiles` (kYmmTiles of o's signs), column blocks of
// Mac::kMaxVectors vectors outermost (a block's panel stays in L1 while
// every row runs over it). No std::min: its instantiation would be an
// inline function shared with other objects.
template <typename Mac>
void YmmDotWith(const Operands& o, const YmmTileFn* const* tiles) {
  constexpr int64_t kBlock = 8 * Mac::kMaxVectors;
  for (int64_t c0 = 0; c0 < o.cols; c0 += kBlock) {
    const int64_t need = (o.cols - c0 + 7) / 8;
    const int64_t vectors = need < Mac::kMaxVectors ? need : Mac::kMaxVectors;
    for (int64_t r0 = 0; r0 < o.rows; r0 += kYmmMaxRows) {
      const int64_t rows = o.rows - r0 < kYmmMaxRows ? o.rows - r0 : kYmmMaxRows;
      tiles[rows - 1][vectors - 1](o, r0, c0);
    }
  }
}

template <typename Mac>
void YmmDot(const Operands& o) {
  const bool bytes = o.requant != nullptr;
  YmmDotWith<Mac>(o, o.signed_rows
                         ? (bytes ? kYmmTiles<Mac, true, true> : kYmmTiles<Mac, true, false>)
                         : (bytes ? kYmmTiles<Mac, false, true> : kYmmTiles<Mac, false, false>));
}

// YmmDot for a Mac that takes signed rows only (o.signed_rows).
template <typename Mac>
void YmmDotSignedRows(const Operands& o) {
  YmmDotWith<Mac>(o, o.requant != nullptr ? kYmmTiles<Mac, true, true>
                                          : kYmmTiles<Mac, true, false>);
}

}  // namespace
}  // namespace slimpack::runtime::kernels::int8dot

#endif  // SLIMPACK_RUNTIME_KERNELS_INT8_DOT_YMM_TILE_H_
