// Conv (N-d, groups, dilations, pads/auto_pad, strides): 1-D and 2-D by the
// direct AVX-512/AVX2 kernels where the CPU has them (conv_direct.h; for
// constant weights on the shapes where it is faster, the channel-blocked
// one of conv_blocked.h on weights packed once), otherwise via
// im2col + GEMM in cache-sized chunks of output rows, with 1x1 stride-1
// unpadded convolutions done directly as one GEMM. ConvTranspose is in
// conv_transpose.cc.
#include <algorithm>
#include <mutex>
#include <optional>

#include "runtime/gemm.h"
#include "runtime/kernels/conv_blocked.h"
#include "runtime/kernels/conv_common.h"
#include "runtime/kernels/conv_direct.h"
#include "runtime/kernels/conv_f32.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/window.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

// Floats of im2col data per chunk: 1 MiB, half of a typical per-core L2.
constexpr int64_t kColChunkFloats = 256 * 1024;

// col[c*K + kk, o - o_begin*L] = x[c, o*stride - pad + kk*dilation] (0
// outside), for one image of `channels` planes, K = prod(kernel), L the last
// output axis, and o the output positions of the outer (all but the last
// axis) indices [o_begin, o_end): one row of `col` holds (o_end - o_begin)*L
// values.
void Im2Col(const float* x, int64_t channels, const std::vector<int64_t>& in,
            const WindowGeometry& g, int64_t o_begin, int64_t o_end, float* col) {
  const size_t r = in.size();
  const int64_t kprod = DimsProduct(g.kernel);
  const int64_t in_size = DimsProduct(in);
  const int64_t out_last = g.out[r - 1];
  const int64_t cols = (o_end - o_begin) * out_last;
  std::vector<int64_t> kk(r), oo(r > 1 ? r - 1 : 0);
  const std::vector<int64_t> outer_dims(g.out.begin(), g.out.end() - 1);
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * in_size;
    for (int64_t k = 0; k < kprod; ++k) {
      UnravelIndex(k, g.kernel, kk);
      float* row = col + (c * kprod + k) * cols;
      for (int64_t o = o_begin; o < o_end; ++o) {
        UnravelIndex(o, outer_dims, oo);
        // Offset of the outer axes, or -1 if any is in the padding.
        int64_t base = 0;
        bool inside = true;
        for (size_t d = 0; d + 1 < r; ++d) {
          const int64_t p = oo[d] * g.strides[d] - g.pads_begin[d] + kk[d] * g.dilations[d];
          if (p < 0 || p >= in[d]) {
            inside = false;
            break;
          }
          base = base * in[d] + p;
        }
        float* dst = row + (o - o_begin) * out_last;
        if (!inside) {
          std::fill(dst, dst + out_last, 0.0f);
          continue;
        }
        const size_t d = r - 1;
        const float* src = xc + base * in[d];
        const int64_t s = g.strides[d];
        const int64_t off = kk[d] * g.dilations[d] - g.pads_begin[d];
        // Output columns [lo, hi) read inside the row (p = j*s + off in
        // [0, in)); the rest are padding. Splitting the row this way keeps
        // the bounds test out of the copy loop, which is most of im2col.
        // Ceilings as (n - 1) / s + 1: n + s - 1 can overflow when pads and
        // strides from the file are both near 2^62.
        const int64_t lo = std::min(out_last, off >= 0 ? 0 : (-off - 1) / s + 1);
        const int64_t end = in[d] - off <= 0 ? 0 : (in[d] - off - 1) / s + 1;
        const int64_t hi = std::max(lo, std::min(out_last, end));
        std::fill(dst, dst + lo, 0.0f);
        if (s == 1) {
          std::copy(src + lo + off, src + hi + off, dst + lo);
        } else {
          for (int64_t j = lo; j < hi; ++j) dst[j] = src[j * s + off];
        }
        std::fill(dst + hi, dst + out_last, 0.0f);
      }
    }
  }
}

// The node-cache key of a constant W packed for BlockedConv2D (the only
// value Conv keeps). Keys are per node, but GetOrBuild casts without a type
// check, so it differs from every other kernel's key (quantize_util.h's
// centred weights 0, int8_dot_ops.h's 1 and 2, Gemm's panels 0 in
// matmul.cc): a QLinearConv passing its constant W on would not be handed
// another kernel's value.
constexpr int kBlockedWeightsKey = 3;

// A constant W packed for the channel-blocked kernel, built on the plan's
// first run and kept in the node's cache; nullptr (the caller runs
// DirectConv2D) where that kernel is not the faster one for `s`, W can
// change between runs, or the cache cannot keep the copy (packing it on
// every call would cost more than the kernel saves).
std::shared_ptr<const BlockedConvWeights> ConstantBlockedWeights(KernelContext& ctx,
                                                                const ConvF32Args& a,
                                                                const Conv2DShape& s) {
  if (!a.w_is_constant_input || ctx.node_cache() == nullptr || !BlockedConv2DPreferred(s)) {
    return nullptr;
  }
  if (!ctx.node_cache()->WouldKeep(kBlockedWeightsKey, BlockedConvWeightsBytes(s))) {
    return nullptr;
  }
  absl::StatusOr<std::shared_ptr<const BlockedConvWeights>> packed =
      ctx.node_cache()->GetOrBuild<BlockedConvWeights>(
          kBlockedWeightsKey, [&]() -> absl::StatusOr<std::shared_ptr<const BlockedConvWeights>> {
            return PackBlockedConvWeights(s, a.w);
          });
  return packed.ok() ? *packed : nullptr;
}

// ConvF32's products; sets *activation_done when the kernel applied
// a.activation.
absl::Status ConvProducts(KernelContext& ctx, const ConvF32Args& a, float* py,
                          bool* activation_done) {
  const std::vector<int64_t>& xd = a.x_dims;
  const WindowGeometry& g = a.g;
  const int64_t batch = xd[0], channels = xd[1];
  const int64_t m = a.out_channels;
  const std::vector<int64_t> in(xd.begin() + 2, xd.end());
  const int64_t cg = channels / a.group, mg = m / a.group;
  const int64_t kprod = DimsProduct(g.kernel);
  const int64_t in_size = DimsProduct(in), out_size = DimsProduct(g.out);
  if (std::optional<Conv2DShape> s = DirectConvShape(xd, m, a.group, g); s.has_value()) {
    if (std::shared_ptr<const BlockedConvWeights> packed = ConstantBlockedWeights(ctx, a, *s)) {
      ASSIGN_OR_RETURN(RtTensor scratch, ctx.AllocateUninitialized(
                                             DType::kF32, {BlockedConv2DScratchFloats(*s)}));
      BlockedConv2D(*s, a.x, *packed, a.bias, py, scratch.mutable_data<float>(), ctx.pool(),
                    a.activation);
      *activation_done = true;
      ctx.Recycle(std::move(scratch));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(RtTensor scratch, ctx.AllocateUninitialized(
                                           DType::kF32, {DirectConv2DScratchFloats(*s)}));
    DirectConv2D(*s, a.x, a.w, a.bias, py, scratch.mutable_data<float>(), ctx.pool(),
                 a.activation);
    *activation_done = true;
    ctx.Recycle(std::move(scratch));
    return absl::OkStatus();
  }
  bool pointwise = kprod == 1;
  for (size_t i = 0; i < in.size(); ++i) {
    pointwise = pointwise && g.strides[i] == 1 && g.pads_begin[i] == 0 &&
                g.pads_end[i] == 0;
  }
  // im2col runs in chunks of whole output rows, each followed at once by
  // its GEMM while the chunk is still in cache (a full im2col matrix is
  // megabytes for early layers, so a separate GEMM pass would read it back
  // from memory). Chunks are the parallel tasks; their size depends only on
  // the shapes, so results do not depend on the thread count.
  const int64_t kdim = cg * kprod;
  const int64_t out_last = g.out.back();
  // out_last is 0 when SAME padding meets an empty input axis.
  const int64_t outer = out_last == 0 ? 0 : out_size / out_last;
  const int64_t rows_per_chunk =
      std::clamp<int64_t>(kColChunkFloats / std::max<int64_t>(1, kdim * out_last), 1,
                          std::max<int64_t>(1, outer));
  const int64_t chunks = (outer + rows_per_chunk - 1) / rows_per_chunk;
  // One chunk buffer per task that can run at once (not per chunk): tasks
  // take a free buffer and give it back, so memory is threads x chunk.
  const int64_t slots = std::min<int64_t>(
      chunks, ctx.pool() != nullptr ? ctx.pool()->num_threads() : 1);
  const int64_t chunk_floats = kdim * rows_per_chunk * out_last;
  RtTensor col;
  if (!pointwise) {
    ASSIGN_OR_RETURN(col, ctx.AllocateUninitialized(DType::kF32, {slots, chunk_floats}));
  }
  std::mutex slots_mu;
  std::vector<int64_t> free_slots;
  std::vector<absl::Status> statuses(chunks);
  const float* px = a.x;
  const float* pw = a.w;
  const float* pb = a.bias;
  for (int64_t n = 0; n < batch; ++n) {
    // The bias is written first and the GEMM adds it to each finished
    // chain (beta 1: acc + bias, as the direct kernel does), which saves a
    // pass over the output compared with adding it afterwards.
    float* yn = py + n * m * out_size;
    if (pb != nullptr) {
      for (int64_t c = 0; c < m; ++c) {
        std::fill(yn + c * out_size, yn + (c + 1) * out_size, pb[c]);
      }
    }
    const float beta = pb != nullptr ? 1.0f : 0.0f;
    for (int64_t gi = 0; gi < a.group; ++gi) {
      const float* xg = px + (n * channels + gi * cg) * in_size;
      const float* wg = pw + gi * mg * kdim;
      float* yg = yn + gi * mg * out_size;
      if (pointwise) {
        RETURN_IF_ERROR(Sgemm(false, false, mg, out_size, kdim, 1.0f, wg, kdim, xg,
                              out_size, beta, yg, out_size, ctx.pool()));
        continue;
      }
      float* pc = col.mutable_data<float>();
      free_slots.resize(slots);
      for (int64_t i = 0; i < slots; ++i) free_slots[i] = slots - 1 - i;
      ParallelFor(ctx.pool(), chunks, [&](int64_t t) {
        int64_t slot;
        {
          std::lock_guard<std::mutex> lock(slots_mu);
          if (free_slots.empty()) {  // more concurrent tasks than threads
            statuses[t] = absl::InternalError("Conv: no free im2col buffer");
            return;
          }
          slot = free_slots.back();
          free_slots.pop_back();
        }
        const int64_t o0 = t * rows_per_chunk;
        const int64_t o1 = std::min(outer, o0 + rows_per_chunk);
        const int64_t c0 = o0 * out_last, cols = (o1 - o0) * out_last;
        float* chunk = pc + slot * chunk_floats;
        Im2Col(xg, cg, in, g, o0, o1, chunk);
        statuses[t] = SgemmSingleCall(false, false, mg, cols, kdim, 1.0f, wg, kdim,
                                      chunk, cols, beta, yg + c0, out_size);
        std::lock_guard<std::mutex> lock(slots_mu);
        free_slots.push_back(slot);
      });
      for (const absl::Status& st : statuses) RETURN_IF_ERROR(st);
    }
  }
  if (col.defined()) ctx.Recycle(std::move(col));
  return absl::OkStatus();
}

}  // namespace

std::optional<Conv2DShape> DirectConvShape(const std::vector<int64_t>& xd, int64_t m,
                                           int64_t group, const WindowGeometry& g) {
  const size_t r = xd.size() - 2;
  if (r > 2 || xd[0] == 0 || xd[1] == 0 || m == 0) return std::nullopt;
  for (size_t i = 0; i < r; ++i) {
    if (xd[2 + i] <= 0 || g.out[i] <= 0 || g.kernel[i] <= 0) return std::nullopt;
  }
  Conv2DShape s;
  s.batch = xd[0];
  s.channels = xd[1];
  s.out_channels = m;
  s.group = group;
  const size_t h = r - 1;  // index of the last spatial axis
  if (r == 2) {
    s.height = xd[2];
    s.kernel_h = g.kernel[0];
    s.stride_h = g.strides[0];
    s.dilation_h = g.dilations[0];
    s.pad_top = g.pads_begin[0];
    s.out_h = g.out[0];
  }
  s.width = xd[2 + h];
  s.kernel_w = g.kernel[h];
  s.stride_w = g.strides[h];
  s.dilation_w = g.dilations[h];
  s.pad_left = g.pads_begin[h];
  s.out_w = g.out[h];
  if (!DirectConv2DSupported(s)) return std::nullopt;
  return s;
}

absl::Status ConvF32(KernelContext& ctx, const ConvF32Args& a, float* py) {
  bool activation_done = false;
  RETURN_IF_ERROR(ConvProducts(ctx, a, py, &activation_done));
  const int64_t n = a.x_dims[0] * a.out_channels * DimsProduct(a.g.out);
  if (a.activation == ConvActivation::kRelu && !activation_done) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = py[i];
      py[i] = v > 0.0f ? v : (v == v ? 0.0f : v);
    }
  }
  if (a.activation == ConvActivation::kHardSwish && !activation_done) {
    HardSwishArray(py, py, n);
  }
  return absl::OkStatus();
}

namespace {

absl::Status ConvImpl(KernelContext& ctx, ConvActivation activation) {
  ASSIGN_OR_RETURN(ConvInputs ci, ReadConvInputs(ctx));
  const auto& xd = ci.x->dims();
  const int64_t batch = xd[0], channels = xd[1];
  const int64_t m = ci.w->dim(0);
  const std::vector<int64_t> in(xd.begin() + 2, xd.end());
  if (channels % ci.group != 0 || m % ci.group != 0 ||
      ci.w->dim(1) * ci.group != channels) {
    return absl::InvalidArgumentError(
        "X " + ci.x->DebugString() + ", W " + ci.w->DebugString() +
        " and group " + std::to_string(ci.group) +
        " disagree: need C = W.dim(1) * group and M divisible by group");
  }
  ASSIGN_OR_RETURN(WindowGeometry g, ComputeWindow(ctx, in, ci.kernel, false));
  std::vector<int64_t> out_dims = {batch, m};
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  RETURN_IF_ERROR(CheckConvBias(ci.b, m));
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, out_dims));
  const ConvF32Args a{ci.x->data<float>(), xd, ci.w->data<float>(), m, ci.group,
                      ci.b != nullptr ? ci.b->data<float>() : nullptr, g,
                      ctx.input_is_constant(1), activation};
  RETURN_IF_ERROR(ConvF32(ctx, a, y.mutable_data<float>()));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace

absl::Status Conv(KernelContext& ctx) { return ConvImpl(ctx, ConvActivation::kNone); }

absl::Status ConvRelu(KernelContext& ctx) { return ConvImpl(ctx, ConvActivation::kRelu); }

absl::Status ConvHardSwish(KernelContext& ctx) {
  return ConvImpl(ctx, ConvActivation::kHardSwish);
}

}  // namespace slimpack::runtime::kernels
