// Direct 2-D convolution as an implicit GEMM with AVX-512 or AVX2 + FMA (see
// conv_direct.h).
// The input is copied once per image into a zero-padded buffer split into
// stride phases, after which every (c, kh, kw) term of the convolution reads
// a contiguous run of that buffer: no im2col matrix is built, and the weights
// are read in place (one broadcast per row and term), so nothing is packed.
#include "runtime/kernels/conv_direct.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <vector>

#include "runtime/kernels/conv_activation_simd.h"
#include "runtime/kernels/conv_depthwise.h"
#include "runtime/kernels/conv_layout.h"
#include "support/checked_math.h"
#include "support/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace slimpack::runtime::kernels {
namespace {

using conv_layout::BufferFloats;
using conv_layout::CeilDiv;
using conv_layout::InPlace;
using conv_layout::kNr;
using conv_layout::Layout;
using conv_layout::MakeLayout;
using conv_layout::PackChannel;
using conv_layout::TermOffsets;

// A register tile is kMr output channels x kNr flattened output positions:
// 2 x kMr accumulators of 16 floats, two input loads and kMr weight
// broadcasts per term.
constexpr int kMr = 8;
// Parallel tasks are blocks of kTaskMBlocks x kTaskNBlocks tiles: sizes from
// the shape alone, so the split (not that it changes any sum) never depends
// on the thread count; the input run a task reads stays in L2.
constexpr int64_t kTaskMBlocks = 8;
constexpr int64_t kTaskNBlocks = 4;

#if defined(__x86_64__)
#define SLP_AVX512 __attribute__((target("avx512f")))

// out[r * ldo + 0..kNr) = (sum_k w[r * ldw + k] * b[r * ldb + off[k] + 0..kNr))
// + bias[r], for rows r < MR, terms in order k = 0..k_count-1. ldb is 0
// when every row reads the same input (one group), a channel's stride when
// each row is a depthwise channel of its own.
template <int MR>
SLP_AVX512 void Tile(const float* w, int64_t ldw, int64_t k_count,
                     const int32_t* off, const float* b, int64_t ldb, const float* bias,
                     float* out, int64_t ldo, ConvActivation act) {
  __m512 a0[MR], a1[MR];
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    a0[r] = _mm512_setzero_ps();
    a1[r] = a0[r];
  }
  if (ldb == 0) {
    for (int64_t k = 0; k < k_count; ++k) {
      const float* bk = b + off[k];
      const __m512 b0 = _mm512_loadu_ps(bk);
      const __m512 b1 = _mm512_loadu_ps(bk + 16);
      #pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const __m512 wv = _mm512_set1_ps(w[r * ldw + k]);
        a0[r] = _mm512_fmadd_ps(wv, b0, a0[r]);
        a1[r] = _mm512_fmadd_ps(wv, b1, a1[r]);
      }
    }
  } else {
    for (int64_t k = 0; k < k_count; ++k) {
      #pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const float* bk = b + r * ldb + off[k];
        const __m512 wv = _mm512_set1_ps(w[r * ldw + k]);
        a0[r] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(bk), a0[r]);
        a1[r] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(bk + 16), a1[r]);
      }
    }
  }
  // The bias is added last, as BLAS-based convolutions do: a large folded
  // BatchNorm bias would otherwise absorb the low bits of every term.
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    if (bias != nullptr) {
      const __m512 bv = _mm512_set1_ps(bias[r]);
      a0[r] = _mm512_add_ps(a0[r], bv);
      a1[r] = _mm512_add_ps(a1[r], bv);
    }
    _mm512_storeu_ps(out + r * ldo, Activate16(a0[r], act));
    _mm512_storeu_ps(out + r * ldo + 16, Activate16(a1[r], act));
  }
}

using TileFn = void (*)(const float*, int64_t, int64_t, const int32_t*, const float*,
                        int64_t, const float*, float*, int64_t, ConvActivation);
constexpr TileFn kTiles[kMr + 1] = {nullptr,  Tile<1>, Tile<2>, Tile<3>, Tile<4>,
                                    Tile<5>, Tile<6>, Tile<7>, Tile<8>};

#define SLP_AVX2 __attribute__((target("avx2,fma")))

// The AVX2 + FMA tile: the same kNr = 32 positions as four 8-float vectors,
// two rows at a time (8 accumulators, 4 input vectors and a broadcast fit
// the 16 ymm registers). Same terms, same order, same fused multiply-adds:
// the same bits as Tile above and as im2col + GEMM (runtime/gemm.h).
template <int MR>
SLP_AVX2 void RowsAvx2(const float* w, int64_t ldw, int64_t k_count,
                       const int32_t* off, const float* b, int64_t ldb, const float* bias,
                       float* out, int64_t ldo, ConvActivation act) {
  __m256 acc[MR][4];
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    #pragma GCC unroll 16
    for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_setzero_ps();
  }
  if (ldb == 0) {  // both rows read the same four vectors
    for (int64_t k = 0; k < k_count; ++k) {
      const float* bk = b + off[k];
      const __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8);
      const __m256 b2 = _mm256_loadu_ps(bk + 16), b3 = _mm256_loadu_ps(bk + 24);
      #pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const __m256 wv = _mm256_broadcast_ss(w + r * ldw + k);
        acc[r][0] = _mm256_fmadd_ps(wv, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(wv, b1, acc[r][1]);
        acc[r][2] = _mm256_fmadd_ps(wv, b2, acc[r][2]);
        acc[r][3] = _mm256_fmadd_ps(wv, b3, acc[r][3]);
      }
    }
  } else {  // each row a depthwise channel of its own
    for (int64_t k = 0; k < k_count; ++k) {
      #pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const float* bk = b + r * ldb + off[k];
        const __m256 wv = _mm256_broadcast_ss(w + r * ldw + k);
        acc[r][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(bk), acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(bk + 8), acc[r][1]);
        acc[r][2] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(bk + 16), acc[r][2]);
        acc[r][3] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(bk + 24), acc[r][3]);
      }
    }
  }
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    #pragma GCC unroll 16
    for (int q = 0; q < 4; ++q) {
      if (bias != nullptr) acc[r][q] = _mm256_add_ps(acc[r][q], _mm256_set1_ps(bias[r]));
      _mm256_storeu_ps(out + r * ldo + q * 8, Activate8(acc[r][q], act));
    }
  }
}

template <int ROWS>
SLP_AVX2 void TileAvx2(const float* w, int64_t ldw, int64_t k_count,
                       const int32_t* off, const float* b, int64_t ldb, const float* bias,
                       float* out, int64_t ldo, ConvActivation act) {
  for (int r0 = 0; r0 < ROWS; r0 += 2) {
    const float* br = bias != nullptr ? bias + r0 : nullptr;
    if (ROWS - r0 >= 2) {
      RowsAvx2<2>(w + r0 * ldw, ldw, k_count, off, b + r0 * ldb, ldb, br, out + r0 * ldo, ldo,
                  act);
    } else {
      RowsAvx2<1>(w + r0 * ldw, ldw, k_count, off, b + r0 * ldb, ldb, br, out + r0 * ldo, ldo,
                  act);
    }
  }
}

constexpr TileFn kTilesAvx2[kMr + 1] = {nullptr, TileAvx2<1>, TileAvx2<2>, TileAvx2<3>,
                                        TileAvx2<4>, TileAvx2<5>, TileAvx2<6>,
                                        TileAvx2<7>, TileAvx2<8>};

// The tile set this CPU runs, or null.
const TileFn* CpuTiles() {
  static const TileFn* tiles = support::CpuAllows(support::CpuFeature::kAvx512f) ? kTiles
                               : support::CpuAllows(support::CpuFeature::kAvx2Fma)
                                   ? kTilesAvx2
                                   : nullptr;
  return tiles;
}
#endif

// Copies the valid outputs of a tile (flattened positions n0.. of rows
// y_rows[r], r < rows) out of `tile`, dropping the columns ow >= out_w.
void StoreTile(const Conv2DShape& s, const Layout& l, const float* tile, int rows,
               int64_t n0, float* y_first_row, int64_t y_row_stride) {
  const int64_t n1 = std::min(l.positions, n0 + kNr);
  int64_t oh = n0 / l.wq, ow = n0 % l.wq;
  for (int64_t n = n0; n < n1;) {
    // A run of positions within one output row.
    const int64_t run = std::min(n1 - n, l.wq - ow);
    const int64_t valid = std::max<int64_t>(0, std::min(run, s.out_w - ow));
    for (int r = 0; r < rows; ++r) {
      const float* __restrict src = tile + r * kNr + (n - n0);
      float* __restrict dst = y_first_row + r * y_row_stride + oh * s.out_w + ow;
      // At most kNr floats: an inline loop, not a memmove call per run
      // (a 7-wide output row made the calls cost more than the copying).
      for (int64_t i = 0; i < valid; ++i) dst[i] = src[i];
    }
    n += run;
    ow = 0;
    ++oh;
  }
}

// MakeLayout and BufferFloats use plain int64 arithmetic, but strides,
// dilations and pads come from model files: with strides and dilations of
// 2^32 the channel stride wraps to 0, the buffer looks tiny, passes the
// INT32_MAX test and PackChannel writes far past it. Each size bounded here
// is at most the buffer size, so this only refuses layouts the INT32_MAX
// test would refuse, and once it passes the plain arithmetic cannot
// overflow (every factor < 2^31, the channel stride < 2^31).
[[maybe_unused]] bool LayoutArithmeticFits(const Conv2DShape& s) {
  constexpr int64_t kLimit = INT32_MAX;
  // Padded rows (columns) one channel keeps, in whole stride phases:
  // stride * CeilDiv(extent, stride).
  auto phased_extent = [](int64_t out, int64_t stride, int64_t kernel,
                          int64_t dilation) -> std::optional<int64_t> {
    std::optional<int64_t> a = CheckedMulInt64(out - 1, stride);
    std::optional<int64_t> b = CheckedMulInt64(kernel - 1, dilation);
    std::optional<int64_t> e = a && b ? CheckedAddInt64(*a, *b) : std::nullopt;
    if (e) e = CheckedAddInt64(*e, 1);
    if (!e || *e >= kLimit || stride >= kLimit) return std::nullopt;
    return CeilDiv(*e, stride) * stride;  // < 2^32
  };
  const std::optional<int64_t> rows =
      phased_extent(s.out_h, s.stride_h, s.kernel_h, s.dilation_h);
  const std::optional<int64_t> cols =
      phased_extent(s.out_w, s.stride_w, s.kernel_w, s.dilation_w);
  if (!rows || !cols) return false;
  const std::optional<int64_t> channel_stride = CheckedMulInt64(*rows, *cols);
  return channel_stride && *channel_stride < kLimit && s.channels < kLimit &&
         s.out_h < kLimit && s.out_w < kLimit;
}

}  // namespace

bool DirectConv2DSupported(const Conv2DShape& s) {
#if defined(__x86_64__)
  if (CpuTiles() == nullptr) return false;
  if (!LayoutArithmeticFits(s)) return false;
  // The local copy of a tile's terms (DirectConv2D) is indexed in 32 bits too.
  std::optional<int64_t> terms = CheckedMulInt64(s.channels / s.group, s.kernel_h);
  if (terms) terms = CheckedMulInt64(*terms, s.kernel_w);
  if (terms) terms = CheckedMulInt64(*terms, kNr);
  if (!terms || *terms >= INT32_MAX) return false;
  const Layout l = MakeLayout(s);
  return BufferFloats(s, l) < INT32_MAX;
#else
  (void)s;
  return false;
#endif
}

int64_t DirectConv2DScratchFloats(const Conv2DShape& s) {
  if (DepthwiseConv2DApplies(s)) return 0;
  const Layout l = MakeLayout(s);
  return InPlace(s, l) ? 0 : BufferFloats(s, l);
}

void DirectConv2D(const Conv2DShape& s, const float* x, const float* w,
                  const float* bias, float* y, float* scratch, ThreadPool* pool,
                  ConvActivation act) {
#if defined(__x86_64__)
  if (DepthwiseConv2DApplies(s)) {
    DepthwiseConv2D(s, x, w, bias, y, pool, act);
    return;
  }
  const TileFn* tiles = CpuTiles();
  const Layout l = MakeLayout(s);
  const int64_t cg = s.channels / s.group, mg = s.out_channels / s.group;
  const int64_t kk = s.kernel_h * s.kernel_w, k_count = cg * kk;
  const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
  const std::vector<int32_t> off = TermOffsets(s, l);
  const int64_t max_off = *std::max_element(off.begin(), off.end());
  // Term k of a tile's local copy (below) sits at k * kNr.
  std::vector<int32_t> local_off(k_count);
  for (int64_t k = 0; k < k_count; ++k) local_off[k] = static_cast<int32_t>(k * kNr);
  // A depthwise convolution (one input and one output channel per group)
  // runs as one group whose tile rows are channels, each reading its own
  // plane (ldb): eight independent chains per tile instead of one.
  const bool depthwise = cg == 1 && mg == 1;
  const int64_t groups = depthwise ? 1 : s.group;
  const int64_t rows_per_group = depthwise ? s.out_channels : mg;
  const int64_t ldb = depthwise ? l.channel_stride : 0;
  const bool in_place = InPlace(s, l);
  const int64_t total = in_place ? s.channels * in_plane : BufferFloats(s, l);
  // Tiles of whole output rows go straight to y when the flattened
  // positions are the output positions (no discarded columns).
  const bool direct_store = l.wq == s.out_w;
  const int64_t m_blocks = CeilDiv(rows_per_group, kMr);
  const int64_t m_tasks = CeilDiv(m_blocks, kTaskMBlocks);
  const int64_t n_blocks = l.padded_positions / kNr;
  const int64_t n_tasks = CeilDiv(n_blocks, kTaskNBlocks);
  for (int64_t n = 0; n < s.batch; ++n) {
    const float* xn = x + n * s.channels * in_plane;
    float* yn = y + n * s.out_channels * out_plane;
    const float* buffer = xn;
    if (!in_place) {
      ParallelFor(pool, s.channels, [&](int64_t c) {
        PackChannel(s, l, xn + c * in_plane, scratch + c * l.channel_stride);
      });
      std::fill(scratch + s.channels * l.channel_stride, scratch + total, 0.0f);
      buffer = scratch;
    }
    ParallelFor(pool, groups * m_tasks * n_tasks, [&](int64_t t) {
      const int64_t gi = t / (m_tasks * n_tasks);
      const int64_t mt = t / n_tasks % m_tasks, nt = t % n_tasks;
      alignas(64) float tile[kMr * kNr];
      thread_local std::vector<float> local;
      // The (start, n0) whose terms `local` holds in this task: a 1 x 1
      // layer's last tile reads the same input columns for every block of
      // output channels, and copying its channels x 32 floats once per
      // block of eight channels cost more than the products on a 7 x 7 map.
      int64_t local_start = -1, local_n0 = -1;
      const int64_t mb_end = std::min(m_blocks, (mt + 1) * kTaskMBlocks);
      const int64_t nb_end = std::min(n_blocks, (nt + 1) * kTaskNBlocks);
      for (int64_t mb = mt * kTaskMBlocks; mb < mb_end; ++mb) {
        const int64_t m0 = gi * rows_per_group + mb * kMr;
        const int rows = static_cast<int>(std::min<int64_t>(kMr, rows_per_group - mb * kMr));
        const float* wm = w + m0 * k_count;
        const float* bm = bias != nullptr ? bias + m0 : nullptr;
        // Offset of row 0's input in the buffer.
        const int64_t start = depthwise ? m0 * ldb : gi * cg * l.channel_stride;
        for (int64_t nb = nt * kTaskNBlocks; nb < nb_end; ++nb) {
          const int64_t n0 = nb * kNr;
          const bool store = direct_store && n0 + kNr <= out_plane;
          float* out = store ? yn + m0 * out_plane + n0 : tile;
          const int64_t ldo = store ? out_plane : kNr;
          if (start + (rows - 1) * ldb + n0 + max_off + kNr <= total) {
            tiles[rows](wm, k_count, k_count, off.data(), buffer + start + n0, ldb, bm, out, ldo,
                        act);
          } else {
            // Terms that would read past the buffer (an in-place image's
            // last tiles) come from a copy, row r's term k at
            // (r * k_count + k) * kNr: the same values in the same order,
            // so the same bits.
            const int copies = ldb == 0 ? 1 : rows;
            if (ldb != 0 || start != local_start || n0 != local_n0) {
              if (static_cast<int64_t>(local.size()) < copies * k_count * kNr) {
                local.resize(copies * k_count * kNr);
              }
              for (int r = 0; r < copies; ++r) {
                for (int64_t k = 0; k < k_count; ++k) {
                  const int64_t from = start + r * ldb + n0 + off[k];
                  const int64_t valid = std::clamp<int64_t>(total - from, 0, kNr);
                  float* to = local.data() + (r * k_count + k) * kNr;
                  std::copy(buffer + from, buffer + from + valid, to);
                  std::fill(to + valid, to + kNr, 0.0f);
                }
              }
              local_start = ldb == 0 ? start : -1;
              local_n0 = n0;
            }
            tiles[rows](wm, k_count, k_count, local_off.data(), local.data(),
                        ldb == 0 ? 0 : k_count * kNr, bm, out, ldo, act);
          }
          if (!store) StoreTile(s, l, tile, rows, n0, yn + m0 * out_plane, out_plane);
        }
      }
    });
  }
#else
  (void)s, (void)x, (void)w, (void)bias, (void)y, (void)scratch, (void)pool, (void)act;
#endif
}

}  // namespace slimpack::runtime::kernels
