// Direct 2-D convolution with output channels in the vector lanes, for
// constant weights packed once per plan (runtime/node_cache.h): each
// register tile is up to three blocks of 16 (AVX-512) or two of 8 (AVX2) output
// channels x a few positions of one output row (of a whole plane for a
// 1 x 1 stride-1 layer), every term is one weight vector load and one
// broadcast of an input value per position, and the tile goes back into
// the channels' planes through in-register transposes.
//
// Why beside DirectConv2D (conv_direct.h), whose tiles put 32 flattened
// positions in the lanes: those positions run over the padded layout's
// columns, so a 7 x 7 output with a 3 x 3 kernel computes 64 positions for
// 49 (a 14 x 14 one 224 for 196), and every term's two input loads are
// unaligned. Here only valid outputs are computed and the weights are
// read aligned, in order. Same summation order, so the same bits: per
// output, one fused multiply-add per (c, kh, kw) in that order from +0,
// then + bias.
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_BLOCKED_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_BLOCKED_H_

#include <cstdint>
#include <memory>

#include "runtime/kernels/conv_direct.h"
#include "runtime/thread_pool.h"

namespace slimpack::runtime::kernels {

// W [out_channels, channels / group, kh, kw] re-laid-out for this CPU's
// tiles: per group, blocks of `lanes` output channels in chunks of as many
// blocks as a tile takes, each chunk term-major (for k = (c, kh, kw) in
// order, its blocks' lanes side by side), so a tile reads its weights as
// one aligned stream; rows past a group's last output channel are zero.
class BlockedConvWeights {
 public:
  int64_t lanes() const { return lanes_; }
  int64_t blocks_per_group() const { return blocks_per_group_; }
  int64_t terms() const { return terms_; }
  const float* data() const { return data_; }
  int64_t bytes() const;  // what the plan's cache budget counts

 private:
  friend std::shared_ptr<const BlockedConvWeights> PackBlockedConvWeights(
      const Conv2DShape& s, const float* w);
  int64_t lanes_ = 0, blocks_per_group_ = 0, terms_ = 0, groups_ = 0;
  std::unique_ptr<float[]> storage_;
  const float* data_ = nullptr;
};

// True when BlockedConv2D can run `s` here: DirectConv2DSupported(s), not
// depthwise (DepthwiseConv2D's own kernel is better there) and at least
// one full vector of output channels per group.
bool BlockedConv2DSupported(const Conv2DShape& s);

// True when BlockedConv2D is supported and expected faster than
// DirectConv2D for `s`, by a model of the work each wastes (padded columns
// and ragged tiles there, unfilled lanes and the store here) fitted to
// bench/conv_blocked_bench.cc.
bool BlockedConv2DPreferred(const Conv2DShape& s);

// Bytes PackBlockedConvWeights(s, ...) holds: what a cache asks its budget
// for before packing (BlockedConv2DSupported(s) must hold).
int64_t BlockedConvWeightsBytes(const Conv2DShape& s);

// Packs w for `s` (BlockedConv2DSupported(s) must hold).
std::shared_ptr<const BlockedConvWeights> PackBlockedConvWeights(const Conv2DShape& s,
                                                                 const float* w);

// How many times this process has called PackBlockedConvWeights: tests
// check a plan packs a constant W once and then runs on the kept copy (the
// outputs alone cannot tell, being DirectConv2D's bits).
int64_t BlockedConvWeightsPackCount();

// Floats of scratch BlockedConv2D needs (the padded input layout of
// conv_layout.h; 0 when the kernel reads the input in place).
int64_t BlockedConv2DScratchFloats(const Conv2DShape& s);

// y = act(conv(x, w) + bias), bit for bit DirectConv2D's result, whatever
// `pool`'s thread count; the activation is applied as each tile is stored.
void BlockedConv2D(const Conv2DShape& s, const float* x, const BlockedConvWeights& w,
                   const float* bias, float* y, float* scratch, ThreadPool* pool,
                   ConvActivation act = ConvActivation::kNone);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_BLOCKED_H_
