// The register tiles of the channel-blocked convolution (conv_blocked.h):
// what one tile computes and stores, and the tables of its instantiations
// per instruction set. Internal to conv_blocked.cc, which drives them.
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_BLOCKED_TILES_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_BLOCKED_TILES_H_

#include <array>
#include <cstdint>

#include "runtime/kernels/conv_direct.h"

namespace slimpack::runtime::kernels::blocked_tiles {

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

// The tile table of one block count: entry np for np <= its maximum.
using TileRow = std::array<TileFn, kMaxPositions + 1>;

// Per block count nb (1 .. kMaxBlocks*), entry np (1 .. kMaxPositions*[nb]):
// the AVX-512F and AVX2 + FMA tiles (x86-64 only).
const TileRow* Tiles512();
const TileRow* TilesAvx2();

}  // namespace slimpack::runtime::kernels::blocked_tiles

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_BLOCKED_TILES_H_
