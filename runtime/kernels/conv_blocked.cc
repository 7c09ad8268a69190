// Output-channel-blocked direct convolution (see conv_blocked.h).
#include "runtime/kernels/conv_blocked.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/kernels/conv_blocked_tiles.h"
#include "runtime/kernels/conv_depthwise.h"
#include "runtime/kernels/conv_layout.h"
#include "support/cpu_features.h"

namespace slimpack::runtime::kernels {
namespace {

using conv_layout::CeilDiv;
using conv_layout::InPlace;
using conv_layout::Layout;
using conv_layout::MakeLayout;
using conv_layout::PackChannel;
using conv_layout::TermOffsets;

using blocked_tiles::kMaxBlocks512;
using blocked_tiles::kMaxBlocksAvx2;
using blocked_tiles::kMaxPositions512;
using blocked_tiles::kMaxPositionsAvx2;
using blocked_tiles::TileArgs;
using blocked_tiles::TileRow;

// Output positions (in whole rows) per parallel task, at least: from the
// shape alone, so the split (not that it changes any sum) never depends on
// the thread count.
constexpr int64_t kTaskPositions = 128;

// Bytes of weights a slice of terms takes at most (see BlockedConv2D): a
// good part of a 48 KB L1 data cache, the rest for the input rows.
constexpr int64_t kSliceBytes = 24 * 1024;

#if defined(__x86_64__)
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
      i = {16, kMaxBlocks512, kMaxPositions512, blocked_tiles::Tiles512(), 8.0, 0.85};
    } else if (support::CpuAllows(support::CpuFeature::kAvx2Fma)) {
      i = {8, kMaxBlocksAvx2, kMaxPositionsAvx2, blocked_tiles::TilesAvx2(), 3.0, 0.85};
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
