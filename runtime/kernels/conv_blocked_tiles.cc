// The channel-blocked convolution's register tiles (conv_blocked_tiles.h).
#include "runtime/kernels/conv_blocked_tiles.h"

#include <algorithm>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>

#include "runtime/kernels/conv_activation_simd.h"
#include "runtime/kernels/transpose_avx2.h"

namespace slimpack::runtime::kernels::blocked_tiles {
namespace {

#define SLP_AVX512 __attribute__((target("avx512f")))
#define SLP_AVX2 __attribute__((target("avx2,fma")))

// Stores v[0..np) (np <= 8 positions, eight channels in the lanes) as the
// first `valid` channels' rows, 8 floats each from y (channel i at
// y + i * plane): positions past np get zeros, which the caller's later
// tiles overwrite.
__attribute__((target("avx2"))) inline void StoreTransposed(const __m256* v, int np,
                                                            int64_t valid, float* y,
                                                            int64_t plane) {
  __m256 r[8];
  #pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) r[p] = p < np ? v[p] : _mm256_setzero_ps();
  Transpose8x8(r);
  #pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    if (i < valid) _mm256_storeu_ps(y + i * plane, r[i]);
  }
}

// GCC 12 warns that the 256-bit halves of zmm registers (_mm512_castps512_ps256,
// _mm512_extractf64x4_pd) "may be used uninitialized": its intrinsics start them
// from an undefined value that every lane then overwrites.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
// As StoreTransposed for 16 channels in the lanes and np <= 16 positions,
// a group of 8 positions at a time (every group's 8 floats are stored, so
// the caller's room must cover them): the AVX2 transpose's first two steps
// act within 128-bit lanes, so on zmm they transpose all four 4-channel
// lanes at once; two 128-bit-lane shuffles then put channel c's 8 floats
// in one 256-bit half. (Transposing the halves through StoreTransposed made
// GCC 12 rebuild them from scalars in memory, slower than the copy loop.)
template <int NP>
SLP_AVX512 inline void StoreTransposed16(const __m512* v, int64_t valid, float* y,
                                         int64_t plane) {
  #pragma GCC unroll 2
  for (int g = 0; g * 8 < NP; ++g) {
    __m512 r[8], t[8], u[8];
    #pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) r[p] = g * 8 + p < NP ? v[g * 8 + p] : _mm512_setzero_ps();
    #pragma GCC unroll 8
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    #pragma GCC unroll 8
    for (int q = 0; q < 8; q += 4) {
      u[q] = _mm512_shuffle_ps(t[q], t[q + 2], 0x44);
      u[q + 1] = _mm512_shuffle_ps(t[q], t[q + 2], 0xEE);
      u[q + 2] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0x44);
      u[q + 3] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
    }
    // 128-bit lane j of u[q] holds channel 4j + q at positions 0..3, of
    // u[4 + q] at positions 4..7.
    float* yg = y + g * 8;
    #pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m512 lo = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x44);  // lanes 0, 1
      const __m512 hi = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xEE);  // lanes 2, 3
      const __m512 c01 = _mm512_shuffle_f32x4(lo, lo, 0xD8);  // channels q | 4 + q
      const __m512 c23 = _mm512_shuffle_f32x4(hi, hi, 0xD8);  // channels 8 + q | 12 + q
      const int64_t c[4] = {q, 4 + q, 8 + q, 12 + q};
      const __m256 rows[4] = {
          _mm512_castps512_ps256(c01),
          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c01), 1)),
          _mm512_castps512_ps256(c23),
          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c23), 1))};
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        if (c[k] < valid) _mm256_storeu_ps(yg + c[k] * plane, rows[k]);
      }
    }
  }
}

template <int NB, int NP>
SLP_AVX512 void Tile512(const TileArgs& a, int64_t k0, int64_t k1, float* partial) {
  __m512 acc[NB][NP];
  #pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) {
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      acc[b][p] = k0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(partial + (b * NP + p) * 16);
    }
  }
  const float* w = a.w;
  for (int64_t k = k0; k < k1; ++k) {
    const float* xk = a.x + a.off[k];
    __m512 wv[NB];
    #pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) wv[b] = _mm512_load_ps(w + (k * NB + b) * 16);
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      const __m512 xv = _mm512_set1_ps(xk[p]);
      #pragma GCC unroll 16
      for (int b = 0; b < NB; ++b) acc[b][p] = _mm512_fmadd_ps(wv[b], xv, acc[b][p]);
    }
  }
  if (k1 < a.k_count) {
    #pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) {
      #pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) _mm512_store_ps(partial + (b * NP + p) * 16, acc[b][p]);
    }
    return;
  }
  // In registers where the task's later tiles in the row overwrite the
  // spare positions of whole 8-float stores; a row's last tile through
  // memory, position-major, then each channel's NP outputs copied out.
  alignas(64) float tile[NP][16];
  #pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) {
    const int64_t valid = std::min<int64_t>(16, a.rows - b * 16);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
    // The bias is added last, as the other kernels do (conv_direct.cc).
    const __m512 bv = a.bias != nullptr ? _mm512_maskz_loadu_ps(mask, a.bias + b * 16)
                                        : _mm512_setzero_ps();
    __m512 v[NP];
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      v[p] = Activate16(a.bias != nullptr ? _mm512_add_ps(acc[b][p], bv) : acc[b][p], a.act);
    }
    if (a.room >= (NP + 7) / 8 * 8) {  // in registers: 8 floats of a row per store
      StoreTransposed16<NP>(v, valid, a.y + b * 16 * a.y_plane, a.y_plane);
      continue;
    }
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) _mm512_store_ps(tile[p], v[p]);
    for (int64_t i = 0; i < valid; ++i) {
      float* yi = a.y + (b * 16 + i) * a.y_plane;
      #pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) yi[p] = tile[p][i];
    }
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <int NB, int NP>
SLP_AVX2 void TileAvx2(const TileArgs& a, int64_t k0, int64_t k1, float* partial) {
  __m256 acc[NB][NP];
  #pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) {
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      acc[b][p] = k0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps(partial + (b * NP + p) * 8);
    }
  }
  const float* w = a.w;
  for (int64_t k = k0; k < k1; ++k) {
    const float* xk = a.x + a.off[k];
    __m256 wv[NB];
    #pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) wv[b] = _mm256_load_ps(w + (k * NB + b) * 8);
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      const __m256 xv = _mm256_broadcast_ss(xk + p);
      #pragma GCC unroll 16
      for (int b = 0; b < NB; ++b) acc[b][p] = _mm256_fmadd_ps(wv[b], xv, acc[b][p]);
    }
  }
  if (k1 < a.k_count) {
    #pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) {
      #pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) _mm256_store_ps(partial + (b * NP + p) * 8, acc[b][p]);
    }
    return;
  }
  // In registers or through memory, as Tile512's store. Unrolled, as every
  // loop over acc must be: a loop indexing it at run time makes GCC keep the
  // accumulators in memory, storing all of them on every term.
  alignas(32) float tile[NP][8];
  #pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) {
    const int64_t valid = std::min<int64_t>(8, a.rows - b * 8);
    __m256 bv = _mm256_setzero_ps();
    if (a.bias != nullptr && valid == 8) {
      bv = _mm256_loadu_ps(a.bias + b * 8);
    } else if (a.bias != nullptr) {  // the group's last block may end past the bias array
      alignas(32) float part[8] = {};
      std::memcpy(part, a.bias + b * 8, valid * sizeof(float));
      bv = _mm256_load_ps(part);
    }
    __m256 v[NP];
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      v[p] = Activate8(a.bias != nullptr ? _mm256_add_ps(acc[b][p], bv) : acc[b][p], a.act);
    }
    if (a.room >= (NP + 7) / 8 * 8) {  // in registers: 8 floats of a row per store
      #pragma GCC unroll 2
      for (int g = 0; g * 8 < NP; ++g) {
        StoreTransposed(v + g * 8, std::min(8, NP - g * 8), valid,
                        a.y + b * 8 * a.y_plane + g * 8, a.y_plane);
      }
      continue;
    }
    #pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) _mm256_store_ps(tile[p], v[p]);
    for (int64_t i = 0; i < valid; ++i) {
      float* yi = a.y + (b * 8 + i) * a.y_plane;
      #pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) yi[p] = tile[p][i];
    }
  }
}

template <int NB, int... P>
constexpr TileRow Row512(std::integer_sequence<int, P...>) {
  constexpr int kMax = kMaxPositions512[NB];
  return {nullptr, (P + 1 <= kMax ? &Tile512<NB, std::min(P + 1, kMax)> : nullptr)...};
}

template <int NB, int... P>
constexpr TileRow RowAvx2(std::integer_sequence<int, P...>) {
  constexpr int kMax = kMaxPositionsAvx2[NB];
  return {nullptr, (P + 1 <= kMax ? &TileAvx2<NB, std::min(P + 1, kMax)> : nullptr)...};
}

constexpr auto kAll = std::make_integer_sequence<int, kMaxPositions>{};
constexpr TileRow kTiles512[kMaxBlocks512 + 1] = {TileRow{}, Row512<1>(kAll), Row512<2>(kAll),
                                                  Row512<3>(kAll)};
constexpr TileRow kTilesAvx2[kMaxBlocksAvx2 + 1] = {TileRow{}, RowAvx2<1>(kAll),
                                                    RowAvx2<2>(kAll)};
}  // namespace

const TileRow* Tiles512() { return kTiles512; }
const TileRow* TilesAvx2() { return kTilesAvx2; }

}  // namespace slimpack::runtime::kernels::blocked_tiles
#endif  // defined(__x86_64__)
