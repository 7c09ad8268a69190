// Output-channel-blocked direct convolution (see conv_blocked.h).
#include "runtime/kernels/conv_blocked.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/kernels/conv_activation_simd.h"
#include "runtime/kernels/conv_depthwise.h"
#include "runtime/kernels/conv_layout.h"
#include "support/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace slimpack::runtime::kernels {
namespace {

using conv_layout::CeilDiv;
using conv_layout::InPlace;
using conv_layout::Layout;
using conv_layout::MakeLayout;
using conv_layout::PackChannel;
using conv_layout::TermOffsets;

// Blocks per tile at most, and positions per tile at most for each block
// count: the accumulators (blocks x positions), the blocks' weight vectors
// and one broadcast fit the register file (32 zmm / 16 ymm). Three blocks
// of at most eight positions rather than four of six: a 7-wide row then
// fits one tile of 21 chains instead of two of 16 and 12, and the
// 3 x 3 layers of 7 to 28-wide maps ran 10-20 % faster that way
// (bench/conv_blocked_bench.cc, Zen 5).
constexpr int kMaxBlocks512 = 3;
constexpr int kMaxPositions512[kMaxBlocks512 + 1] = {0, 16, 12, 8};
constexpr int kMaxBlocksAvx2 = 2;
constexpr int kMaxPositionsAvx2[kMaxBlocksAvx2 + 1] = {0, 12, 6};
constexpr int kMaxPositions = 16;

// Output positions (in whole rows) per parallel task, at least: from the
// shape alone, so the split (not that it changes any sum) never depends on
// the thread count.
constexpr int64_t kTaskPositions = 128;

// Bytes of weights a slice of terms takes at most (see BlockedConv2D): a
// good part of a 48 KB L1 data cache, the rest for the input rows.
constexpr int64_t kSliceBytes = 24 * 1024;

// One tile: y[(b * lanes + lane) * y_plane + p] = sum_k w[b][k][lane] *
// x[off[k] + p] (+ bias[b * lanes + lane]) for blocks b < NB, positions
// p < NP, and lanes below `rows` - b * lanes (the rest of the last block
// are padding). w: the tile's blocks' weights, term-major (BlockedConvWeights).
struct TileArgs {
  const float* w;
  int64_t k_count;
  const int32_t* off;
  const float* x;
  const float* bias;
  int64_t rows;
  float* y;
  int64_t y_plane;
  // Floats of each output channel's row from y on that this task writes
  // (this tile's positions and those of its later tiles in the row): at
  // least 8 per position group lets a tile store whole transposed vectors,
  // whose positions past NP a later tile of the same task then overwrites.
  int64_t room;
  ConvActivation act;  // applied at the store
};

// Runs terms [k0, k1) of a tile. A tile whose terms are split (so that a
// block of weights stays in L1 while every tile of a task uses it) keeps
// its sums in `partial` (NB x NP vectors) between the calls: stored and
// reloaded exactly, so the chain of fused multiply-adds is the same. Only
// the call that ends at k_count adds the bias and stores the outputs.
using TileFn = void (*)(const TileArgs& a, int64_t k0, int64_t k1, float* partial);

#if defined(__x86_64__)
#define SLP_AVX512 __attribute__((target("avx512f")))
#define SLP_AVX2 __attribute__((target("avx2,fma")))

// r[i] = lane i of the eight input vectors (positions in, channels out):
// pairs of vectors interleaved, 4-float groups within 128-bit lanes, then
// the 128-bit lanes. Only moves values. Plain AVX2 so that both tiles'
// targets can inline it.
__attribute__((target("avx2"))) inline void Transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  #pragma GCC unroll 8
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  #pragma GCC unroll 8
  for (int g = 0; g < 8; g += 4) {
    u[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
    u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
    u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
  }
  #pragma GCC unroll 8
  for (int q = 0; q < 4; ++q) {
    r[q] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x20);
    r[4 + q] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x31);
  }
}

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

// The tile table of one block count: entry np for np <= its maximum.
using TileRow = std::array<TileFn, kMaxPositions + 1>;

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

// What this CPU runs: lanes per block, the tile tables and their limits.
// store_terms and direct_efficiency are BlockedConv2DPreferred's model.
struct Isa {
  int lanes = 0;
  int max_blocks = 0;
  const int* max_positions = nullptr;
  const TileRow* tiles = nullptr;
  double store_terms = 0;  // what a tile's transposing store costs, in terms per output
  double direct_efficiency = 0;  // DirectConv2D's speed per useful term relative to ours
};

const Isa& CpuIsa() {
  static const Isa isa = []() {
    Isa i;
    if (support::CpuAllows(support::CpuFeature::kAvx512f)) {
      i = {16, kMaxBlocks512, kMaxPositions512, kTiles512, 8.0, 0.85};
    } else if (support::CpuAllows(support::CpuFeature::kAvx2Fma)) {
      i = {8, kMaxBlocksAvx2, kMaxPositionsAvx2, kTilesAvx2, 3.0, 0.85};
    }
    return i;
  }();
  return isa;
}
#endif

// Splits n into CeilDiv(n, most) parts as equal as can be (the first ones
// one larger): part i's start. Every part has at least n / parts items,
// so a 7-wide row takes tiles of 4 and 3 positions, not 6 and 1.
int64_t PartStart(int64_t n, int64_t parts, int64_t i) {
  const int64_t base = n / parts, extra = n % parts;
  return i * base + std::min(i, extra);
}

// A 1 x 1, stride-1, unpadded convolution reads and writes each plane as one
// run of positions, so its tiles need not stop at the end of an output row:
// run as a single row of height x width positions. A 7-wide row otherwise
// took AVX2 tiles of 4 and 3 positions (8 and 6 accumulator chains for the
// two fused multiply-add pipes) instead of 6 (12 chains). Each output's
// terms are the same, so are its bits.
Conv2DShape FlattenPointwise(const Conv2DShape& s) {
  const bool pointwise = s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 &&
                         s.stride_w == 1 && s.pad_top == 0 && s.pad_left == 0 &&
                         s.out_h == s.height && s.out_w == s.width;
  if (!pointwise) return s;
  Conv2DShape f = s;
  f.width = f.out_w = s.height * s.width;
  f.height = f.out_h = 1;
  return f;
}

}  // namespace

int64_t BlockedConvWeights::bytes() const {
  return groups_ * blocks_per_group_ * terms_ * lanes_ * static_cast<int64_t>(sizeof(float));
}

bool BlockedConv2DSupported(const Conv2DShape& s) {
#if defined(__x86_64__)
  const Isa& isa = CpuIsa();
  if (isa.lanes == 0 || !DirectConv2DSupported(s) || DepthwiseConv2DApplies(s)) return false;
  // Fewer output channels than lanes would leave most lanes idle.
  return s.out_channels / s.group >= isa.lanes;
#else
  (void)s;
  return false;
#endif
}

// Each kernel's share of useful work: DirectConv2D computes whole tiles of
// 32 flattened positions, the padded layout's columns included, for blocks
// of 8 output channels, at direct_efficiency of our speed per term (its
// unaligned input loads; on AVX2, tiles of 8 accumulator chains);
// BlockedConv2D computes only valid positions but whole vectors of output
// channels, and pays for its store about as much as store_terms more
// terms. Fitted to bench/conv_blocked_bench.cc on Zen 5 (AVX-512 and the
// AVX2 path) after the stores became in-register transposes: it picks
// within 7 % of the faster kernel on every layer there (most layers now go
// blocked; the MobileNet's 56-wide 1 x 1 layer with 16 terms and the
// ResNet's strided 1 x 1 stay direct on AVX-512).
bool BlockedConv2DPreferred(const Conv2DShape& s) {
#if defined(__x86_64__)
  if (!BlockedConv2DSupported(s)) return false;
  const double mg = static_cast<double>(s.out_channels / s.group);
  const double terms = static_cast<double>(s.channels / s.group * s.kernel_h * s.kernel_w);
  const Isa& isa = CpuIsa();
  const double lanes = static_cast<double>(isa.lanes);
  const Layout l = MakeLayout(s);
  const double outputs = static_cast<double>(s.out_h * s.out_w);
  const double direct = isa.direct_efficiency * outputs /
                        static_cast<double>(l.padded_positions) * mg / (std::ceil(mg / 8.0) * 8.0);
  const double blocked =
      mg / (std::ceil(mg / lanes) * lanes) * terms / (terms + isa.store_terms);
  return blocked > direct;
#else
  (void)s;
  return false;
#endif
}

int64_t BlockedConvWeightsBytes(const Conv2DShape& s) {
#if defined(__x86_64__)
  const int64_t lanes = CpuIsa().lanes;
  const int64_t mg = s.out_channels / s.group;
  return s.group * CeilDiv(mg, lanes) * lanes * (s.channels / s.group) * s.kernel_h *
         s.kernel_w * static_cast<int64_t>(sizeof(float));
#else
  (void)s;
  return 0;
#endif
}

namespace {
std::atomic<int64_t> pack_count{0};
}  // namespace

int64_t BlockedConvWeightsPackCount() { return pack_count.load(); }

std::shared_ptr<const BlockedConvWeights> PackBlockedConvWeights(const Conv2DShape& s,
                                                                 const float* w) {
  pack_count.fetch_add(1);
  auto p = std::make_shared<BlockedConvWeights>();
#if defined(__x86_64__)
  const int64_t lanes = CpuIsa().lanes;
  const int64_t mg = s.out_channels / s.group;
  const int64_t k_count = s.channels / s.group * s.kernel_h * s.kernel_w;
  p->lanes_ = lanes;
  p->blocks_per_group_ = CeilDiv(mg, lanes);
  p->terms_ = k_count;
  p->groups_ = s.group;
  const int64_t n = s.group * p->blocks_per_group_ * k_count * lanes;
  p->storage_.reset(new float[n + 16]());  // zeros: the rows past mg
  float* base = p->storage_.get();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64 / sizeof(float);
  const int64_t blocks = p->blocks_per_group_;
  const int64_t chunks = CeilDiv(blocks, CpuIsa().max_blocks);
  for (int64_t g = 0; g < s.group; ++g) {
    for (int64_t ci = 0; ci < chunks; ++ci) {
      const int64_t b0 = PartStart(blocks, chunks, ci);
      const int64_t nb = PartStart(blocks, chunks, ci + 1) - b0;
      float* chunk = base + (g * blocks + b0) * k_count * lanes;
      for (int64_t row = b0 * lanes; row < std::min(mg, (b0 + nb) * lanes); ++row) {
        const float* src = w + (g * mg + row) * k_count;
        float* dst = chunk + (row / lanes - b0) * lanes + row % lanes;
        for (int64_t k = 0; k < k_count; ++k) dst[k * nb * lanes] = src[k];
      }
    }
  }
  p->data_ = base;
#else
  (void)s, (void)w;
#endif
  return p;
}

int64_t BlockedConv2DScratchFloats(const Conv2DShape& s) {
  const Layout l = MakeLayout(s);
  return InPlace(s, l) ? 0 : s.channels * l.channel_stride;
}

void BlockedConv2D(const Conv2DShape& shape, const float* x, const BlockedConvWeights& pw,
                   const float* bias, float* y, float* scratch, ThreadPool* pool,
                   ConvActivation act) {
#if defined(__x86_64__)
  const Isa& isa = CpuIsa();
  const Conv2DShape s = FlattenPointwise(shape);
  const Layout l = MakeLayout(s);
  const int64_t cg = s.channels / s.group, mg = s.out_channels / s.group;
  const int64_t k_count = cg * s.kernel_h * s.kernel_w;
  const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
  // Term k's offset from an output position's flattened index (conv_layout.h).
  // Only valid outputs are computed, and each reads inside its channels'
  // planes, so unlike DirectConv2D no tile reads past the buffer.
  const std::vector<int32_t> off = TermOffsets(s, l);
  const bool in_place = InPlace(s, l);
  const int64_t lanes = pw.lanes(), blocks = pw.blocks_per_group();
  const int64_t chunks = CeilDiv(blocks, isa.max_blocks);
  const int64_t rows_per_task = std::max<int64_t>(1, CeilDiv(kTaskPositions, s.out_w));
  const int64_t row_tasks = CeilDiv(s.out_h, rows_per_task);
  // Rows of many tasks' worth of positions (a flattened plane) are cut into
  // column ranges as well.
  const int64_t col_tasks = std::max<int64_t>(1, s.out_w / kTaskPositions);
  const int64_t tasks_per_chunk = row_tasks * col_tasks;
  for (int64_t n = 0; n < s.batch; ++n) {
    const float* xn = x + n * s.channels * in_plane;
    float* yn = y + n * s.out_channels * out_plane;
    const float* buffer = xn;
    if (!in_place) {
      ParallelFor(pool, s.channels, [&](int64_t c) {
        PackChannel(s, l, xn + c * in_plane, scratch + c * l.channel_stride);
      });
      buffer = scratch;
    }
    ParallelFor(pool, s.group * chunks * tasks_per_chunk, [&](int64_t t) {
      const int64_t gi = t / (chunks * tasks_per_chunk);
      const int64_t ci = t / tasks_per_chunk % chunks;
      const int64_t rt = t % tasks_per_chunk / col_tasks, ct = t % col_tasks;
      const int64_t b0 = PartStart(blocks, chunks, ci);
      const int64_t nb = PartStart(blocks, chunks, ci + 1) - b0;
      const int64_t m0 = gi * mg + b0 * lanes;
      TileArgs a;
      a.w = pw.data() + (gi * blocks + b0) * k_count * lanes;
      a.k_count = k_count;
      a.off = off.data();
      a.bias = bias != nullptr ? bias + m0 : nullptr;
      a.rows = std::min(mg - b0 * lanes, nb * lanes);
      a.y_plane = out_plane;
      a.act = act;
      const float* xg = buffer + gi * cg * l.channel_stride;
      const TileRow& tiles = isa.tiles[nb];
      const int64_t max_np = isa.max_positions[nb];
      const int64_t col0 = PartStart(s.out_w, col_tasks, ct);
      const int64_t cols = PartStart(s.out_w, col_tasks, ct + 1) - col0;
      const int64_t row_tiles = CeilDiv(cols, max_np);
      const int64_t oh0 = rt * rows_per_task;
      const int64_t oh_end = std::min(s.out_h, oh0 + rows_per_task);
      // Terms in slices whose weights (nb blocks of them) fill at most
      // kSliceBytes, every tile of the task taking a slice before the next:
      // a 256-channel 3 x 3 layer's 2,304 terms are 442 KB per three blocks,
      // which each tile would otherwise stream from L2 again.
      const int64_t slice = std::max<int64_t>(
          16, kSliceBytes / (nb * lanes * static_cast<int64_t>(sizeof(float))));
      const int64_t slices = CeilDiv(k_count, slice);
      thread_local std::vector<float> partials;
      const int64_t tile_floats = nb * max_np * lanes;
      float* partial0 = nullptr;
      if (slices > 1) {  // 64-byte aligned, for the tiles' aligned loads and stores
        const size_t need = (oh_end - oh0) * row_tiles * tile_floats + 16;
        if (partials.size() < need) partials.resize(need);
        partial0 = partials.data() +
                   (64 - reinterpret_cast<uintptr_t>(partials.data()) % 64) % 64 / sizeof(float);
      }
      for (int64_t sl = 0; sl < slices; ++sl) {
        const int64_t k0 = PartStart(k_count, slices, sl);
        const int64_t k1 = PartStart(k_count, slices, sl + 1);
        for (int64_t oh = oh0; oh < oh_end; ++oh) {
          for (int64_t ti = 0; ti < row_tiles; ++ti) {
            const int64_t ow0 = col0 + PartStart(cols, row_tiles, ti);
            const int64_t np = col0 + PartStart(cols, row_tiles, ti + 1) - ow0;
            a.x = xg + oh * l.wq + ow0;
            a.y = yn + m0 * out_plane + oh * s.out_w + ow0;
            a.room = col0 + cols - ow0;
            float* partial = slices > 1
                                 ? partial0 + ((oh - oh0) * row_tiles + ti) * tile_floats
                                 : nullptr;
            tiles[np](a, k0, k1, partial);
          }
        }
      }
    });
  }
#else
  (void)s, (void)x, (void)pw, (void)bias, (void)y, (void)scratch, (void)pool, (void)act;
#endif
}

}  // namespace slimpack::runtime::kernels
