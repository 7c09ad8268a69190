// Conv (N-d, groups, dilations, pads/auto_pad, strides): 1-D and 2-D by the
// direct AVX-512/AVX2 kernels where the CPU has them (conv_direct.h; for
// constant weights on the shapes where it is faster, the channel-blocked
// one of conv_blocked.h on weights packed once), otherwise via
// im2col + GEMM in cache-sized chunks of output rows, with 1x1 stride-1
// unpadded convolutions done directly as one GEMM; and ConvTranspose via
// GEMM + col2im.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "runtime/gemm.h"
#include "runtime/kernels/conv_blocked.h"
#include "runtime/kernels/conv_direct.h"
#include "runtime/kernels/conv_f32.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/window.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

// Floats of im2col data per chunk: 1 MiB, half of a typical per-core L2.
constexpr int64_t kColChunkFloats = 256 * 1024;

int64_t Product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

// Unravels flat index `i` of `dims` into `idx`.
void Unravel(int64_t i, const std::vector<int64_t>& dims,
             std::vector<int64_t>& idx) {
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
}

// col[c*K + kk, o - o_begin*L] = x[c, o*stride - pad + kk*dilation] (0
// outside), for one image of `channels` planes, K = prod(kernel), L the last
// output axis, and o the output positions of the outer (all but the last
// axis) indices [o_begin, o_end): one row of `col` holds (o_end - o_begin)*L
// values.
void Im2Col(const float* x, int64_t channels, const std::vector<int64_t>& in,
            const WindowGeometry& g, int64_t o_begin, int64_t o_end, float* col) {
  const size_t r = in.size();
  const int64_t kprod = Product(g.kernel);
  const int64_t in_size = Product(in);
  const int64_t out_last = g.out[r - 1];
  const int64_t cols = (o_end - o_begin) * out_last;
  std::vector<int64_t> kk(r), oo(r > 1 ? r - 1 : 0);
  const std::vector<int64_t> outer_dims(g.out.begin(), g.out.end() - 1);
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * in_size;
    for (int64_t k = 0; k < kprod; ++k) {
      Unravel(k, g.kernel, kk);
      float* row = col + (c * kprod + k) * cols;
      for (int64_t o = o_begin; o < o_end; ++o) {
        Unravel(o, outer_dims, oo);
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

// Inverse of Im2Col: y[c, o*stride - pad + kk*dilation] += col[c*K + kk, o]
// where o runs over the *input* positions of a transposed convolution.
void Col2Im(const float* col, int64_t channels, const std::vector<int64_t>& in,
            const std::vector<int64_t>& out, const WindowGeometry& g, float* y,
            ThreadPool* pool) {
  const size_t r = in.size();
  const int64_t kprod = Product(g.kernel);
  const int64_t in_size = Product(in);
  const int64_t out_size = Product(out);
  ParallelFor(pool, channels, [&](int64_t c) {
    std::vector<int64_t> kk(r), ii(r);
    float* yc = y + c * out_size;
    for (int64_t k = 0; k < kprod; ++k) {
      Unravel(k, g.kernel, kk);
      const float* row = col + (c * kprod + k) * in_size;
      for (int64_t i = 0; i < in_size; ++i) {
        Unravel(i, in, ii);
        int64_t pos = 0;
        bool inside = true;
        for (size_t d = 0; d < r; ++d) {
          const int64_t p = ii[d] * g.strides[d] - g.pads_begin[d] + kk[d] * g.dilations[d];
          if (p < 0 || p >= out[d]) {
            inside = false;
            break;
          }
          pos = pos * out[d] + p;
        }
        if (inside) yc[pos] += row[i];
      }
    }
  });
}

struct ConvInputs {
  const RtTensor* x;
  const RtTensor* w;
  const RtTensor* b;
  int64_t group;
  std::vector<int64_t> kernel;
};

absl::StatusOr<ConvInputs> ReadConvInputs(KernelContext& ctx) {
  ConvInputs ci;
  ASSIGN_OR_RETURN(ci.x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(ci.w, ctx.RequiredInput(1));
  ci.b = ctx.input(2);
  if (ci.x->dtype() != DType::kF32) return UnsupportedDType(ctx, ci.x->dtype(), "f32");
  RETURN_IF_ERROR(ctx.ExpectDType(1, DType::kF32));
  RETURN_IF_ERROR(ctx.ExpectDType(2, DType::kF32));
  if (ci.x->rank() < 3 || ci.w->rank() != ci.x->rank()) {
    return absl::InvalidArgumentError("X " + ci.x->DebugString() + " and W " +
                                      ci.w->DebugString() +
                                      " must have the same rank >= 3");
  }
  ASSIGN_OR_RETURN(ci.group, ctx.IntAttr("group", 1));
  ci.kernel.assign(ci.w->dims().begin() + 2, ci.w->dims().end());
  ASSIGN_OR_RETURN(auto ks, ctx.IntsAttr("kernel_shape", ci.kernel));
  if (ks != ci.kernel) {
    return absl::InvalidArgumentError("kernel_shape " + DimsToString(ks) +
                                      " differs from W " + ci.w->DebugString());
  }
  if (ci.group <= 0) {
    return absl::InvalidArgumentError("group must be positive, got " +
                                      std::to_string(ci.group));
  }
  return ci;
}

absl::Status CheckBias(const RtTensor* b, int64_t channels) {
  if (b != nullptr && b->num_elements() != channels) {
    return absl::InvalidArgumentError("bias " + b->DebugString() + " needs " +
                                      std::to_string(channels) + " elements");
  }
  return absl::OkStatus();
}

// The direct kernel's description of a 1-D or 2-D convolution (1-D as
// height 1), or nullopt when it cannot run it here (other ranks, empty
// tensors, no AVX-512): those go through im2col + GEMM.
std::optional<Conv2DShape> DirectShape(const std::vector<int64_t>& xd, int64_t m,
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

absl::Status AddBias(const RtTensor* b, int64_t batch, int64_t channels,
                     int64_t plane, float* y) {
  if (b == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(CheckBias(b, channels));
  const float* pb = b->data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      float* p = y + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) p[i] += pb[c];
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ConvF32(KernelContext& ctx, const ConvF32Args& a, float* py) {
  const std::vector<int64_t>& xd = a.x_dims;
  const WindowGeometry& g = a.g;
  const int64_t batch = xd[0], channels = xd[1];
  const int64_t m = a.out_channels;
  const std::vector<int64_t> in(xd.begin() + 2, xd.end());
  const int64_t cg = channels / a.group, mg = m / a.group;
  const int64_t kprod = Product(g.kernel);
  const int64_t in_size = Product(in), out_size = Product(g.out);
  if (std::optional<Conv2DShape> s = DirectShape(xd, m, a.group, g); s.has_value()) {
    if (std::shared_ptr<const BlockedConvWeights> packed = ConstantBlockedWeights(ctx, a, *s)) {
      ASSIGN_OR_RETURN(RtTensor scratch, ctx.AllocateUninitialized(
                                             DType::kF32, {BlockedConv2DScratchFloats(*s)}));
      BlockedConv2D(*s, a.x, *packed, a.bias, py, scratch.mutable_data<float>(), ctx.pool());
      ctx.Recycle(std::move(scratch));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(RtTensor scratch, ctx.AllocateUninitialized(
                                           DType::kF32, {DirectConv2DScratchFloats(*s)}));
    DirectConv2D(*s, a.x, a.w, a.bias, py, scratch.mutable_data<float>(), ctx.pool());
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

absl::Status Conv(KernelContext& ctx) {
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
  RETURN_IF_ERROR(CheckBias(ci.b, m));
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, out_dims));
  const ConvF32Args a{ci.x->data<float>(), xd, ci.w->data<float>(), m, ci.group,
                      ci.b != nullptr ? ci.b->data<float>() : nullptr, g,
                      ctx.input_is_constant(1)};
  RETURN_IF_ERROR(ConvF32(ctx, a, y.mutable_data<float>()));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status ConvTranspose(KernelContext& ctx) {
  ASSIGN_OR_RETURN(ConvInputs ci, ReadConvInputs(ctx));
  const auto& xd = ci.x->dims();
  const int64_t batch = xd[0], channels = xd[1];
  const size_t r = xd.size() - 2;
  const std::vector<int64_t> in(xd.begin() + 2, xd.end());
  if (ci.w->dim(0) != channels || channels % ci.group != 0) {
    return absl::InvalidArgumentError(
        "W " + ci.w->DebugString() + " must have X's " + std::to_string(channels) +
        " channels first, divisible by group " + std::to_string(ci.group));
  }
  const int64_t mg = ci.w->dim(1), m = mg * ci.group, cg = channels / ci.group;
  WindowGeometry g;
  g.kernel = ci.kernel;
  ASSIGN_OR_RETURN(g.strides, ctx.IntsAttr("strides", std::vector<int64_t>(r, 1)));
  ASSIGN_OR_RETURN(g.dilations, ctx.IntsAttr("dilations", std::vector<int64_t>(r, 1)));
  ASSIGN_OR_RETURN(auto pads, ctx.IntsAttr("pads", std::vector<int64_t>(2 * r, 0)));
  ASSIGN_OR_RETURN(auto out_pad, ctx.IntsAttr("output_padding", std::vector<int64_t>(r, 0)));
  ASSIGN_OR_RETURN(auto out_shape, ctx.IntsAttr("output_shape"));
  ASSIGN_OR_RETURN(std::string auto_pad, ctx.StringAttr("auto_pad", "NOTSET"));
  if (g.strides.size() != r || g.dilations.size() != r || pads.size() != 2 * r ||
      out_pad.size() != r || (!out_shape.empty() && out_shape.size() < r)) {
    return absl::InvalidArgumentError(
        "strides/dilations/output_padding need " + std::to_string(r) +
        " values, pads " + std::to_string(2 * r));
  }
  // Col2Im multiplies by strides and dilations and the sizes below are
  // sums of products of attribute values, so ranges and overflow are
  // checked here rather than trusted from the file.
  RETURN_IF_ERROR(CheckAtLeast(g.kernel, 1, "kernel_shape"));
  RETURN_IF_ERROR(CheckAtLeast(g.strides, 1, "strides"));
  RETURN_IF_ERROR(CheckAtLeast(g.dilations, 1, "dilations"));
  RETURN_IF_ERROR(CheckAtLeast(pads, 0, "pads"));
  RETURN_IF_ERROR(CheckAtLeast(out_pad, 0, "output_padding"));
  g.pads_begin.assign(pads.begin(), pads.begin() + r);
  g.pads_end.assign(pads.begin() + r, pads.end());
  std::vector<int64_t> out(r);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < r; ++i) {
    auto overflow = [&] {
      return absl::InvalidArgumentError(
          "axis " + std::to_string(i) + ": output size from input " +
          std::to_string(in[i]) + ", strides " + std::to_string(g.strides[i]) +
          ", kernel_shape " + std::to_string(g.kernel[i]) + ", dilations " +
          std::to_string(g.dilations[i]) + ", output_padding " +
          std::to_string(out_pad[i]) + " and pads " + std::to_string(g.pads_begin[i]) +
          " + " + std::to_string(g.pads_end[i]) + " overflows int64");
    };
    // full = strides * (in - 1) + output_padding + (kernel - 1) * dilations + 1
    std::optional<int64_t> full = CheckedMulInt64(g.kernel[i] - 1, g.dilations[i]);
    if (full) full = CheckedAddInt64(*full, 1);
    if (full) full = CheckedAddInt64(*full, out_pad[i]);
    std::optional<int64_t> strided = CheckedMulInt64(g.strides[i], in[i] - 1);
    full = full && strided ? CheckedAddInt64(*full, *strided) : std::nullopt;
    if (!full) return overflow();
    if (!out_shape.empty() || same) {
      std::optional<int64_t> wanted = !out_shape.empty()
                                          ? out_shape[out_shape.size() - r + i]
                                          : CheckedMulInt64(in[i], g.strides[i]);
      std::optional<int64_t> diff =
          wanted ? CheckedSubInt64(*full, *wanted) : std::nullopt;
      if (!diff) return overflow();
      out[i] = *wanted;
      const int64_t total = std::max<int64_t>(0, *diff);
      // SAME_LOWER puts the odd pad first; SAME_UPPER and an explicit
      // output_shape put it last (what ONNX's test data expects).
      const int64_t big = total - total / 2;
      g.pads_begin[i] = auto_pad == "SAME_LOWER" ? big : total / 2;
      g.pads_end[i] = total - g.pads_begin[i];
    } else {
      if (auto_pad == "VALID") g.pads_begin[i] = g.pads_end[i] = 0;
      std::optional<int64_t> o = CheckedSubInt64(*full, g.pads_begin[i]);
      if (o) o = CheckedSubInt64(*o, g.pads_end[i]);
      if (!o) return overflow();
      out[i] = *o;
    }
    if (out[i] <= 0) {
      return absl::InvalidArgumentError("axis " + std::to_string(i) +
                                        ": output size " + std::to_string(out[i]) +
                                        " is not positive");
    }
  }
  std::vector<int64_t> out_dims = {batch, m};
  out_dims.insert(out_dims.end(), out.begin(), out.end());
  ASSIGN_OR_RETURN(RtTensor y, ctx.Allocate(DType::kF32, out_dims));
  const int64_t kprod = Product(g.kernel);
  const int64_t in_size = Product(in), out_size = Product(out);
  ASSIGN_OR_RETURN(RtTensor col, ctx.AllocateUninitialized(DType::kF32, {mg * kprod, in_size}));
  const float* px = ci.x->data<float>();
  const float* pw = ci.w->data<float>();
  float* py = y.mutable_data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < ci.group; ++gi) {
      // col = W_g^T x X_g, W_g stored [cg, mg*kprod].
      RETURN_IF_ERROR(Sgemm(true, false, mg * kprod, in_size, cg, 1.0f,
                            pw + gi * cg * mg * kprod, mg * kprod,
                            px + (n * channels + gi * cg) * in_size, in_size, 0.0f,
                            col.mutable_data<float>(), in_size, ctx.pool()));
      Col2Im(col.data<float>(), mg, in, out, g,
             py + (n * m + gi * mg) * out_size, ctx.pool());
    }
  }
  ctx.Recycle(std::move(col));
  RETURN_IF_ERROR(AddBias(ci.b, batch, m, out_size, py));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
