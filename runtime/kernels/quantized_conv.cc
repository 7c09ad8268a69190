// ONNX integer convolutions: ConvInteger and QLinearConv, through the float
// convolution where that is exact (FloatExactConv below), otherwise im2col and an
// integer product with 32-bit wrap-around accumulation. Rounding and requantisation follow the rules at
// the top of quantize_linear.cc; split from that file to keep each under
// the 500-line limit, with the shared helpers in quantize_util.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/kernels/conv_f32.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/int8_dot_ops.h"
#include "runtime/kernels/quantize_util.h"
#include "runtime/kernels/quantized_depthwise.h"
#include "runtime/kernels/window.h"
#include "runtime/thread_pool.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

using quantize_internal::ConstantOrAbsent;
using quantize_internal::ExpectQuantInput;
using quantize_internal::ExpectZeroPointType;
using quantize_internal::IntsOf;
using quantize_internal::QParams;
using quantize_internal::ReadQParams;

struct ConvPlan {
  int64_t batch = 0, channels = 0, m = 0, group = 1;
  std::vector<int64_t> in;
  WindowGeometry g;
  std::vector<int64_t> out_dims;
};

absl::StatusOr<ConvPlan> PlanConv(const KernelContext& ctx, const RtTensor& x,
                                  const RtTensor& w) {
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return absl::InvalidArgumentError("X " + x.DebugString() + " and W " + w.DebugString() +
                                      " must have the same rank >= 3");
  }
  ConvPlan p;
  p.batch = x.dim(0);
  p.channels = x.dim(1);
  p.m = w.dim(0);
  ASSIGN_OR_RETURN(p.group, ctx.IntAttr("group", 1));
  if (p.group <= 0 || p.channels % p.group != 0 || p.m % p.group != 0 ||
      w.dim(1) * p.group != p.channels) {
    return absl::InvalidArgumentError("X " + x.DebugString() + ", W " + w.DebugString() +
                                      " and group " + std::to_string(p.group) +
                                      " disagree: need C = W.dim(1) * group");
  }
  std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
  ASSIGN_OR_RETURN(auto ks, ctx.IntsAttr("kernel_shape", kernel));
  if (ks != kernel) {
    return absl::InvalidArgumentError("kernel_shape " + DimsToString(ks) +
                                      " differs from W " + w.DebugString());
  }
  p.in.assign(x.dims().begin() + 2, x.dims().end());
  ASSIGN_OR_RETURN(p.g, ComputeWindow(ctx, p.in, kernel, false));
  p.out_dims = {p.batch, p.m};
  p.out_dims.insert(p.out_dims.end(), p.g.out.begin(), p.g.out.end());
  return p;
}

// Output positions per im2col chunk: the chunk's columns (K x kChunk
// int32, K = channels per group x kernel taps) stay in L2 while every
// output channel of the group runs over them.
constexpr int64_t kChunk = 256;

// Integer convolution: acc[n, m, o] = sum (x - xzp) * (w - wzp[m]) over the
// group's channels and kernel taps, padded positions contributing zero
// (ONNX pads with the zero point), summed mod 2^32. Modular sums do not
// depend on their order, so the kernel is free to block and thread: per
// (image, group, chunk of output positions) the shifted inputs are laid out
// as a K x chunk matrix (im2col) and each output channel is one
// multiply-add sweep over its rows (pmaddwd on x86-64).
std::vector<int32_t> IntegerConv(const std::vector<int32_t>& x,
                                 const std::vector<int32_t>& w, const ConvPlan& p,
                                 const Im2colTable& t, int32_t xzp, const QParams& wzp,
                                 ThreadPool* pool) {
  const int64_t in_size = t.in_size, out_size = t.out_size, kprod = t.kprod;
  const int64_t cg = p.channels / p.group, mg = p.m / p.group;
  const int64_t kdim = cg * kprod;
  std::vector<int32_t> acc(p.batch * p.m * out_size);
  const std::vector<int64_t>& offset = t.offset;
  // Inputs and weights minus their zero points fit int16 ([-255, 255]);
  // taps are paired so one pmaddwd (SSE2, every x86-64) multiplies two taps
  // of four positions and adds each pair: the col buffer is laid out
  // [tap pair][position][2], the weights as one int32 per tap pair.
  const int64_t kpairs = (kdim + 1) / 2;
  std::vector<int32_t> wpair(p.m * kpairs);
  for (int64_t mi = 0; mi < p.m; ++mi) {
    for (int64_t kp = 0; kp < kpairs; ++kp) {
      const int64_t k = 2 * kp;
      const auto lo = static_cast<uint16_t>(static_cast<int16_t>(w[mi * kdim + k] - wzp.z(mi)));
      const auto hi = k + 1 < kdim ? static_cast<uint16_t>(static_cast<int16_t>(
                                         w[mi * kdim + k + 1] - wzp.z(mi)))
                                   : uint16_t{0};
      wpair[mi * kpairs + kp] = static_cast<int32_t>(static_cast<uint32_t>(lo) |
                                                     (static_cast<uint32_t>(hi) << 16));
    }
  }
  const int64_t chunks = t.chunks;
  const std::vector<uint8_t>& run = t.run;
  ParallelFor(pool, p.batch * p.group * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, grp = (t / chunks) % p.group, n = t / (chunks * p.group);
    const int64_t o0 = chunk * kChunk, len = std::min(kChunk, out_size - o0);
    const int64_t padded = (len + 3) / 4 * 4;  // whole vectors of four positions
    std::vector<int16_t> col(kpairs * padded * 2, 0);
    for (int64_t c = 0; c < cg; ++c) {
      const int32_t* xc = x.data() + (n * p.channels + grp * cg + c) * in_size;
      for (int64_t k = 0; k < kprod; ++k) {
        const int64_t tap = c * kprod + k;
        const int64_t* off = offset.data() + k * out_size + o0;
        int16_t* dst = col.data() + (tap / 2) * padded * 2 + (tap % 2);
        if (run[k * chunks + chunk]) {
          const int32_t* src = xc + off[0];
          for (int64_t o = 0; o < len; ++o) dst[2 * o] = static_cast<int16_t>(src[o] - xzp);
          continue;
        }
        for (int64_t o = 0; o < len; ++o) {
          dst[2 * o] = off[o] < 0 ? int16_t{0} : static_cast<int16_t>(xc[off[o]] - xzp);
        }
      }
    }
    std::vector<int32_t> sum(padded);
    for (int64_t mi = grp * mg; mi < (grp + 1) * mg; ++mi) {
      const int32_t* wrow = wpair.data() + mi * kpairs;
#if defined(__SSE2__)
      // Sixteen positions at a time in four registers over every tap pair,
      // stored once (adding into `sum` in memory per tap pair made the
      // loop load/store bound). Wrap-around adds: the mod-2^32 sum ONNX's
      // int32 output holds, in any order.
      const auto at = [&](int64_t kp, int64_t o) {
        const int16_t* c = col.data() + kp * padded * 2 + 2 * o;
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
      };
      int64_t o = 0;
      for (; o + 16 <= padded; o += 16) {
        __m128i s0 = _mm_setzero_si128(), s1 = s0, s2 = s0, s3 = s0;
        for (int64_t kp = 0; kp < kpairs; ++kp) {
          const __m128i wv = _mm_set1_epi32(wrow[kp]);
          s0 = _mm_add_epi32(s0, _mm_madd_epi16(at(kp, o), wv));
          s1 = _mm_add_epi32(s1, _mm_madd_epi16(at(kp, o + 4), wv));
          s2 = _mm_add_epi32(s2, _mm_madd_epi16(at(kp, o + 8), wv));
          s3 = _mm_add_epi32(s3, _mm_madd_epi16(at(kp, o + 12), wv));
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(sum.data() + o), s0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(sum.data() + o + 4), s1);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(sum.data() + o + 8), s2);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(sum.data() + o + 12), s3);
      }
      for (; o < padded; o += 4) {
        __m128i s0 = _mm_setzero_si128();
        for (int64_t kp = 0; kp < kpairs; ++kp) {
          s0 = _mm_add_epi32(s0, _mm_madd_epi16(at(kp, o), _mm_set1_epi32(wrow[kp])));
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(sum.data() + o), s0);
      }
#else
      std::fill(sum.begin(), sum.end(), 0);
      for (int64_t kp = 0; kp < kpairs; ++kp) {
        const int16_t* crow = col.data() + kp * padded * 2;
        const auto w0 = static_cast<int32_t>(static_cast<int16_t>(wrow[kp] & 0xffff));
        const auto w1 = static_cast<int32_t>(static_cast<int16_t>(
            static_cast<uint32_t>(wrow[kp]) >> 16));
        for (int64_t o = 0; o < padded; ++o) {
          const int32_t prod = w0 * crow[2 * o] + w1 * crow[2 * o + 1];
          sum[o] = static_cast<int32_t>(static_cast<uint32_t>(sum[o]) +
                                        static_cast<uint32_t>(prod));
        }
      }
#endif
      std::copy_n(sum.data(), len, acc.data() + (n * p.m + mi) * out_size + o0);
    }
  });
  return acc;
}

// W minus its per-channel zero points, [m, kdim] floats, and the largest
// channel sum of |w - wzp|.
std::shared_ptr<const quantize_internal::CentredWeights> CentreConvWeights(const RtTensor& w,
                                                                          int64_t m,
                                                                          const QParams& wzp) {
  auto out = std::make_shared<quantize_internal::CentredWeights>();
  const int64_t kdim = w.num_elements() / std::max<int64_t>(1, m);
  out->values.resize(w.num_elements());
  quantize_internal::CenteredFloats(w, 0, w.num_elements(), 0, out->values.data());
  for (int64_t mi = 0; mi < m; ++mi) {
    const auto z = static_cast<float>(wzp.z(mi));
    float* row = out->values.data() + mi * kdim;
    float sum = 0;
    for (int64_t k = 0; k < kdim; ++k) {
      row[k] -= z;
      sum += std::fabs(row[k]);
    }
    out->worst_abs_sum = std::max(out->worst_abs_sum, sum);
  }
  return out;
}

// CentreConvWeights' result (kept in the node's cache when `constant_w`), or
// nullptr when a float convolution of x by it would not be exact: every
// channel's partial sums are bounded by sum_k |w_k - wzp| times the largest
// |x - xzp| x's type allows.
std::shared_ptr<const quantize_internal::CentredWeights> ExactCentredWeights(
    KernelContext& ctx, const RtTensor& x, const RtTensor& w, const ConvPlan& p, int32_t xzp,
    const QParams& wzp, bool constant_w) {
  const int64_t xmax = std::max(xzp - quantize_internal::QMin(x.dtype()),
                                quantize_internal::QMax(x.dtype()) - xzp);
  std::shared_ptr<const quantize_internal::CentredWeights> cw = quantize_internal::Prepared(
      ctx, constant_w, [&] { return CentreConvWeights(w, p.m, wzp); });
  if (static_cast<double>(cw->worst_abs_sum) * static_cast<double>(xmax) >=
      static_cast<double>(quantize_internal::kFloatExactBound)) {
    return nullptr;
  }
  return cw;
}

// IntegerConv's sums as exact floats in a [batch, m, out...] tensor from
// ctx's allocator (the caller recycles it), or an undefined tensor when the
// float convolution would not be faster (FloatProductsAreFast) or not exact
// (quantize_util.h, kFloatExactBound): every channel's partial sums are
// bounded by sum_k |w_k - wzp| times the largest |x - xzp| x's type allows.
// Depthwise and most pointwise layers of an int8 CNN are far inside the
// bound, and their products then run at the float kernels' speed instead of
// the im2col + pmaddwd loop above. `constant_w`: W and its zero point are
// initializers, so the centred weights are kept in the node's cache.
absl::StatusOr<RtTensor> FloatExactConv(KernelContext& ctx, const RtTensor& x,
                                        const RtTensor& w, const ConvPlan& p, int32_t xzp,
                                        const QParams& wzp, bool constant_w) {
  if (!quantize_internal::FloatProductsAreFast()) return RtTensor();
  const std::shared_ptr<const quantize_internal::CentredWeights> cw =
      ExactCentredWeights(ctx, x, w, p, xzp, wzp, constant_w);
  if (cw == nullptr) return RtTensor();
  ASSIGN_OR_RETURN(RtTensor xf, ctx.AllocateUninitialized(DType::kF32, x.dims()));
  quantize_internal::CenteredFloats(x, 0, x.num_elements(), xzp, xf.mutable_data<float>());
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kF32, p.out_dims));
  ConvF32Args a{xf.data<float>(), x.dims(), cw->values.data(), p.m, p.group, nullptr, p.g};
  // Centred constant weights are constant too: the channel-blocked kernel
  // may keep its packing of them (a W8A8 CNN's 3-channel stem).
  a.w_is_constant_input = constant_w;
  RETURN_IF_ERROR(ConvF32(ctx, a, y.mutable_data<float>()));
  ctx.Recycle(std::move(xf));
  return y;
}

// The integer sums of a convolution, from whichever path is fastest here:
// the byte dot products where the CPU has them, else the float convolution
// where it is exact, else IntegerConv. All give the same int32 values; the
// float path returns them as floats in `yf` (acc left undefined). Both
// come from ctx's allocator; the caller recycles them.
// With `requant` set, the byte path requantises its sums into requant->y
// instead (and leaves both undefined: `delivered`).
struct ConvSums {
  RtTensor acc;  // i32 [batch, m, out...]
  RtTensor yf;
  bool delivered = false;
};
absl::StatusOr<ConvSums> ConvProducts(KernelContext& ctx, const RtTensor& x, const RtTensor& w,
                                      const ConvPlan& p, int32_t xzp, const QParams& wzp,
                                      bool constant_w,
                                      const DotConvRequant* requant = nullptr) {
  ConvSums s;
  // The im2col table costs as much as a small layer's float products: it is
  // built only for the paths that read it.
  Im2colTable t;
  const auto table = [&](bool planar_ok) -> const Im2colTable& {
    if (t.chunk == 0) t = BuildIm2colTable(p.in, p.g, kChunk, planar_ok);
    return t;
  };
  int64_t positions = 1, kprod = 1;
  for (size_t d = 0; d < p.in.size(); ++d) {
    positions *= p.g.out[d];
    kprod *= p.g.kernel[d];
  }
  const bool bytes = int8dot::Fast() && positions > 0 && w.num_elements() > 0;
  const auto dot = [&]() -> absl::Status {
    const Im2colTable& tt = table(true);
    const std::shared_ptr<const DotConvWeights> dw = quantize_internal::Prepared(
        ctx, constant_w,
        [&] { return PrepareDotConvWeights(w, p.m, wzp, tt.planar ? kprod : 1); });
    if (requant != nullptr) {
      DotConv(x, xzp, *dw, p.group, tt, ctx.pool(), nullptr, requant);
      s.delivered = true;
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(s.acc, ctx.AllocateUninitialized(DType::kI32, p.out_dims));
    DotConv(x, xzp, *dw, p.group, tt, ctx.pool(), s.acc.mutable_data<int32_t>());
    return absl::OkStatus();
  };
  // Layers with four or more channels per group take the byte path: their
  // columns are four channels interleaved (2-D windows with SSE2 at strides
  // 1 and 2; other 1-D and 3-D windows through the offset table, a byte at
  // a time; pointwise ones of any rank as runs). Depthwise and
  // 3-channel stem layers would be laid out a byte at a time, 2-5x slower
  // than the float kernels, which read their input planes in place; they
  // take the byte path only where the float one is not exact.
  // 2-D layers of two or three channels per group (a CNN's stem) take it
  // too: their taps' channels are padded to four (DotConvWeights::
  // lane_channels), which keeps the rows' layout four bytes at a time. With
  // a byte dot instruction always; with AVX2's 16-bit multiply-adds, whose
  // products cost an FMA's, only for kernels of up to 9 taps, where the
  // float kernels' per-position work is not yet amortised (on the AVX2
  // path a MobileNet's 3 x 3 stem took 0.19 ms instead of 0.22, a ResNet's
  // 7 x 7 one 1.83 instead of 1.65).
  const int64_t cg = p.channels / p.group;
  const bool padded_stem = p.in.size() == 2 && (cg == 2 || cg == 3) && kprod > 1 &&
                           (int8dot::HaveByteDot() || kprod <= 9);
  if (bytes && (cg >= 4 || padded_stem)) {
    RETURN_IF_ERROR(dot());
    return s;
  }
  ASSIGN_OR_RETURN(s.yf, FloatExactConv(ctx, x, w, p, xzp, wzp, constant_w));
  if (!s.yf.defined() && bytes) {
    RETURN_IF_ERROR(dot());
    return s;
  }
  if (!s.yf.defined()) {
    const std::vector<int32_t> acc =
        IntegerConv(IntsOf(x), IntsOf(w), p, table(false), xzp, wzp, ctx.pool());
    ASSIGN_OR_RETURN(s.acc, ctx.AllocateUninitialized(DType::kI32, p.out_dims));
    std::copy(acc.begin(), acc.end(), s.acc.mutable_data<int32_t>());
  }
  return s;
}

}  // namespace

absl::Status ConvInteger(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* w, ctx.RequiredInput(1));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *x));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *w));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, x->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 3, w->dtype()));
  ASSIGN_OR_RETURN(ConvPlan p, PlanConv(ctx, *x, *w));
  ASSIGN_OR_RETURN(QParams xzp, ReadQParams(ctx, -1, 2, 1, "x_zero_point"));
  ASSIGN_OR_RETURN(QParams wzp, ReadQParams(ctx, -1, 3, p.m, "w_zero_point"));
  ASSIGN_OR_RETURN(ConvSums sums,
                   ConvProducts(ctx, *x, *w, p, xzp.z(0), wzp,
                                ctx.input_is_constant(1) && ConstantOrAbsent(ctx, 3)));
  if (sums.yf.defined()) {
    ASSIGN_OR_RETURN(sums.acc, ctx.AllocateUninitialized(DType::kI32, p.out_dims));
    const float* f = sums.yf.data<float>();
    int32_t* out = sums.acc.mutable_data<int32_t>();
    for (int64_t i = 0; i < sums.acc.num_elements(); ++i) out[i] = static_cast<int32_t>(f[i]);
    ctx.Recycle(std::move(sums.yf));
  }
  ctx.SetOutput(0, std::move(sums.acc));
  return absl::OkStatus();
}

absl::Status QLinearConv(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* w, ctx.RequiredInput(3));
  ASSIGN_OR_RETURN(const RtTensor* yz, ctx.RequiredInput(7));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *x));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *w));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *yz));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, x->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 5, w->dtype()));
  ASSIGN_OR_RETURN(ConvPlan p, PlanConv(ctx, *x, *w));
  ASSIGN_OR_RETURN(QParams qx, ReadQParams(ctx, 1, 2, 1, "x"));
  ASSIGN_OR_RETURN(QParams qw, ReadQParams(ctx, 4, 5, p.m, "w"));
  ASSIGN_OR_RETURN(QParams qy, ReadQParams(ctx, 6, 7, 1, "y"));
  std::vector<int32_t> bias(p.m, 0);
  if (const RtTensor* b = ctx.input(8)) {
    if (b->dtype() != DType::kI32) return UnsupportedDType(ctx, b->dtype(), "i32 bias");
    if (b->num_elements() != p.m) {
      return absl::InvalidArgumentError("bias " + b->DebugString() + " needs " +
                                        std::to_string(p.m) + " elements");
    }
    bias = b->ToVector<int32_t>();
  }
  const DType out_type = yz->dtype();
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(out_type, p.out_dims));
  // One multiplier per output channel, computed as before per element.
  std::vector<float> mult(p.m);
  for (int64_t mi = 0; mi < p.m; ++mi) mult[mi] = qx.s(0) * qw.s(mi) / qy.s(0);
  const bool constant_w = ctx.input_is_constant(3) && ConstantOrAbsent(ctx, 5);
  // Depthwise layers: packed, convolved and requantised a channel at a time.
  if (p.group == p.channels && p.m == p.channels) {
    const std::optional<Conv2DShape> s = DirectConvShape(x->dims(), p.m, p.group, p.g);
    if (s.has_value() && QuantizedDepthwiseApplies(*s)) {
      if (const auto cw = ExactCentredWeights(ctx, *x, *w, p, qx.z(0), qw, constant_w)) {
        const QuantizedDepthwiseArgs a{x->raw(), x->dtype(), qx.z(0),   cw->values.data(),
                                       bias.data(),   mult.data(), qy.z(0),  out_type,
                                       y.mutable_data<uint8_t>()};
        QuantizedDepthwiseConv2D(*s, a, ctx.pool());
        ctx.SetOutput(0, std::move(y));
        return absl::OkStatus();
      }
    }
  }
  int64_t plane = 1;
  for (int64_t d : p.g.out) plane *= d;
  uint8_t* out = y.mutable_data<uint8_t>();
  // The sums: requantised by the byte path as it makes them, else as exact
  // floats (yf) or int32 (acc) to requantise below. ConvProducts picks the path.
  const DotConvRequant requant{bias.data(),
                               mult.data(),
                               static_cast<int32_t>(quantize_internal::QMin(out_type)),
                               static_cast<int32_t>(quantize_internal::QMax(out_type)),
                               qy.z(0),
                               out};
  ASSIGN_OR_RETURN(ConvSums sums,
                   ConvProducts(ctx, *x, *w, p, qx.z(0), qw, constant_w, &requant));
  if (sums.delivered) {
    ctx.SetOutput(0, std::move(y));
    return absl::OkStatus();
  }
  RtTensor& yf = sums.yf;
  // Each plane shares its multiplier and bias (y is u8 or i8:
  // ExpectQuantInput above). Planes are requantised on the pool's threads,
  // at least kRequantizeTask values per task (a plane is 49 values late in
  // a MobileNet): each byte depends on its own sum alone.
  constexpr int64_t kRequantizeTask = 8192;
  const int64_t planes = p.batch * p.m;
  const int64_t per_task = std::max<int64_t>(1, kRequantizeTask / std::max<int64_t>(1, plane));
  ParallelFor(ctx.pool(), (planes + per_task - 1) / per_task, [&](int64_t t) {
    thread_local std::vector<int32_t> ints;
    if (yf.defined() && static_cast<int64_t>(ints.size()) < plane) ints.resize(plane);
    for (int64_t nm = t * per_task; nm < std::min(planes, (t + 1) * per_task); ++nm) {
      const int64_t mi = nm % p.m;
      const int32_t* a = nullptr;
      if (yf.defined()) {
        quantize_internal::ExactSumsToInts(yf.data<float>() + nm * plane, plane, ints.data());
        a = ints.data();
      } else {
        a = sums.acc.data<int32_t>() + nm * plane;
      }
      RequantizeSums(a, plane, bias[mi], mult[mi], qy.z(0), out_type, out + nm * plane);
    }
  });
  if (yf.defined()) ctx.Recycle(std::move(yf));
  if (sums.acc.defined()) ctx.Recycle(std::move(sums.acc));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
