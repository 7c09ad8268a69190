// Reductions (ReduceMean/Sum/Max/Min/Prod with axes as attribute or input),
// ArgMax/ArgMin, CumSum and TopK.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/wrap.h"
#include "support/status_macros.h"
#include "support/portable_math.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

enum class Red { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSum, kLogSumExp };

// Reduced-axis mask from the `axes` attribute (older opsets) or input 1.
// Empty axes reduce everything unless noop_with_empty_axes is set.
absl::StatusOr<std::vector<bool>> ReducedAxes(KernelContext& ctx, int64_t rank,
                                              bool* noop) {
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.IntsAttr("axes"));
  if (const RtTensor* t = ctx.input(1)) {
    ASSIGN_OR_RETURN(axes, ReadInts(*t, "axes"));
  }
  ASSIGN_OR_RETURN(int64_t noop_empty, ctx.IntAttr("noop_with_empty_axes", 0));
  *noop = axes.empty() && noop_empty != 0;
  std::vector<bool> mask(rank, axes.empty());
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank));
    mask[n] = true;
  }
  return mask;
}

template <typename T>
absl::StatusOr<RtTensor> ReduceTyped(KernelContext& ctx, const RtTensor& x,
                                     const std::vector<bool>& mask,
                                     bool keepdims, Red op) {
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> kept(rank);  // output dims with reduced axes as 1
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i) {
    kept[i] = mask[i] ? 1 : x.dim(i);
    if (mask[i]) count *= x.dim(i);
  }
  if (count == 0 && (op == Red::kMax || op == Red::kMin)) {
    return absl::InvalidArgumentError("cannot take max/min over an empty axis of " +
                                      x.DebugString());
  }
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!mask[i] || keepdims) out_dims.push_back(kept[i]);
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x.dtype(), out_dims));
  const int64_t n_out = out.num_elements();
  // Accumulate floats in double so long sums are not order-sensitive.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  std::vector<Acc> acc(n_out);
  const Acc init = op == Red::kProd ? Acc(1)
                   : op == Red::kMax ? std::numeric_limits<Acc>::lowest()
                   : op == Red::kMin ? std::numeric_limits<Acc>::max()
                                     : Acc(0);
  if constexpr (std::is_floating_point_v<Acc>) {
    if (op == Red::kMax) std::fill(acc.begin(), acc.end(), -INFINITY);
    else if (op == Red::kMin) std::fill(acc.begin(), acc.end(), INFINITY);
    else std::fill(acc.begin(), acc.end(), init);
  } else {
    std::fill(acc.begin(), acc.end(), init);
  }
  const T* px = x.data<T>();
  // LogSumExp is max + log(sum(exp(v - max))): exp of a large logit
  // overflows otherwise. A non-finite max shifts by 0.
  std::vector<double> shift;
  if (op == Red::kLogSumExp) {
    shift.assign(n_out, -INFINITY);
    ForEachBroadcast<1>(x.dims(), {BroadcastStrides(kept, x.dims())},
                        [&](int64_t i, const std::array<int64_t, 1>& o) {
                          shift[o[0]] = std::max(shift[o[0]], static_cast<double>(px[i]));
                        });
    for (double& m : shift) m = std::isfinite(m) ? m : 0.0;
  }
  // Sums over trailing axes (RMSNorm's and LayerNorm's means): each output
  // adds one contiguous run, in the order the walk below would, but in a
  // register instead of through acc[] (whose store-to-load chain was most of
  // this kernel's time in a decoder's calibration runs). Same bits.
  bool trailing = count > 0, summed = false;
  for (int64_t i = 0, seen = 0; i < rank; ++i) {
    if (mask[i]) seen = 1;
    else if (seen) trailing = false;
  }
  if constexpr (std::is_floating_point_v<T>) {
    const bool square = op == Red::kSumSquare || op == Red::kL2;
    if (trailing && (square || op == Red::kSum || op == Red::kMean)) {
      for (int64_t o = 0; o < n_out; ++o) {
        const T* row = px + o * count;
        double a = acc[o];
        if (square) {
          for (int64_t j = 0; j < count; ++j) {
            const double v = static_cast<double>(row[j]);
            a = a + v * v;
          }
        } else {
          for (int64_t j = 0; j < count; ++j) a = a + static_cast<double>(row[j]);
        }
        acc[o] = a;
      }
      summed = true;
    }
  }
  // Walk the input in order; operand 0's offset is the output element.
  if (!summed) {
    ForEachBroadcast<1>(x.dims(), {BroadcastStrides(kept, x.dims())},
                        [&](int64_t i, const std::array<int64_t, 1>& o) {
                          Acc& a = acc[o[0]];
                          const Acc v = static_cast<Acc>(px[i]);
                          switch (op) {
                            case Red::kSum:
                            case Red::kMean: a = WrapAdd(a, v); break;
                            case Red::kProd: a = WrapMul(a, v); break;
                            case Red::kMax: a = (v > a || v != v) ? v : a; break;
                            case Red::kMin: a = (v < a || v != v) ? v : a; break;
                            case Red::kSumSquare:
                            case Red::kL2: a = WrapAdd(a, WrapMul(v, v)); break;
                            case Red::kL1: a = WrapAdd(a, v < 0 ? WrapSub(Acc(0), v) : v); break;
                            case Red::kLogSum: a += v; break;
                            case Red::kLogSumExp:
                              a += pmath::Exp(static_cast<double>(v) - shift[o[0]]);
                              break;
                          }
                        });
  }
  T* po = out.mutable_data<T>();
  for (int64_t i = 0; i < n_out; ++i) {
    double v = static_cast<double>(acc[i]);
    switch (op) {
      case Red::kMean: po[i] = static_cast<T>(acc[i] / static_cast<Acc>(count)); continue;
      case Red::kL2: v = std::sqrt(v); break;
      case Red::kLogSum: v = pmath::Log(v); break;
      case Red::kLogSumExp: v = pmath::Log(v) + shift[i]; break;
      default: po[i] = static_cast<T>(acc[i]); continue;
    }
    po[i] = static_cast<T>(v);
  }
  return out;
}

absl::Status Reduce(KernelContext& ctx, Red op) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t keepdims, ctx.IntAttr("keepdims", 1));
  bool noop = false;
  ASSIGN_OR_RETURN(auto mask, ReducedAxes(ctx, static_cast<int64_t>(x->rank()), &noop));
  if (noop) {
    ctx.SetOutput(0, *x);
    return absl::OkStatus();
  }
  const bool float_only = op == Red::kL2 || op == Red::kLogSum || op == Red::kLogSumExp;
  if (float_only && x->dtype() != DType::kF32 && x->dtype() != DType::kF64) {
    return UnsupportedDType(ctx, x->dtype(), "f32, f64");
  }
  absl::StatusOr<RtTensor> out;
  switch (x->dtype()) {
    case DType::kF32: out = ReduceTyped<float>(ctx, *x, mask, keepdims != 0, op); break;
    case DType::kF64: out = ReduceTyped<double>(ctx, *x, mask, keepdims != 0, op); break;
    case DType::kI64: out = ReduceTyped<int64_t>(ctx, *x, mask, keepdims != 0, op); break;
    case DType::kI32: out = ReduceTyped<int32_t>(ctx, *x, mask, keepdims != 0, op); break;
    default: return UnsupportedDType(ctx, x->dtype(), "f32, f64, i64, i32");
  }
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

// outer x axis x inner decomposition of `dims` around `axis`.
void SplitAround(const std::vector<int64_t>& dims, int64_t axis, int64_t* outer,
                 int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t i = 0; i < axis; ++i) *outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i) *inner *= dims[i];
}

template <typename T>
void ArgTyped(const RtTensor& x, int64_t axis, bool is_max, bool last,
              int64_t* out) {
  int64_t outer, inner;
  SplitAround(x.dims(), axis, &outer, &inner);
  const int64_t n = x.dim(axis);
  const T* px = x.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* line = px + o * n * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k) {
        const T v = line[k * inner], b = line[best * inner];
        const bool better = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
        if (better) best = k;
      }
      out[o * inner + i] = best;
    }
  }
}

absl::Status ArgReduce(KernelContext& ctx, bool is_max) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 0));
  ASSIGN_OR_RETURN(int64_t keepdims, ctx.IntAttr("keepdims", 1));
  ASSIGN_OR_RETURN(int64_t last, ctx.IntAttr("select_last_index", 0));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, static_cast<int64_t>(x->rank())));
  if (x->dim(axis) == 0) {
    return absl::InvalidArgumentError("cannot take arg max/min over empty axis of " +
                                      x->DebugString());
  }
  std::vector<int64_t> out_dims = x->dims();
  if (keepdims) {
    out_dims[axis] = 1;
  } else {
    out_dims.erase(out_dims.begin() + axis);
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kI64, out_dims));
  int64_t* po = out.mutable_data<int64_t>();
  switch (x->dtype()) {
    case DType::kF32: ArgTyped<float>(*x, axis, is_max, last != 0, po); break;
    case DType::kI64: ArgTyped<int64_t>(*x, axis, is_max, last != 0, po); break;
    case DType::kI32: ArgTyped<int32_t>(*x, axis, is_max, last != 0, po); break;
    case DType::kU8: ArgTyped<uint8_t>(*x, axis, is_max, last != 0, po); break;
    case DType::kI8: ArgTyped<int8_t>(*x, axis, is_max, last != 0, po); break;
    default: return UnsupportedDType(ctx, x->dtype(), "f32, i64, i32, u8, i8");
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

template <typename T>
absl::Status CumSumTyped(KernelContext& ctx, const RtTensor& x, int64_t axis,
                         bool exclusive, bool reverse) {
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x.dtype(), x.dims()));
  int64_t outer, inner;
  SplitAround(x.dims(), axis, &outer, &inner);
  const int64_t n = x.dim(axis);
  const T* px = x.data<T>();
  T* po = out.mutable_data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      T acc = 0;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t k = reverse ? n - 1 - s : s;
        const int64_t at = (o * n + k) * inner + i;
        if (exclusive) {
          po[at] = acc;
          acc = WrapAdd(acc, px[at]);
        } else {
          acc = WrapAdd(acc, px[at]);
          po[at] = acc;
        }
      }
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

template <typename T>
absl::Status TopKTyped(KernelContext& ctx, const RtTensor& x, int64_t axis,
                       int64_t k, bool largest) {
  std::vector<int64_t> out_dims = x.dims();
  out_dims[axis] = k;
  ASSIGN_OR_RETURN(RtTensor values, ctx.AllocateUninitialized(x.dtype(), out_dims));
  ASSIGN_OR_RETURN(RtTensor indices, ctx.AllocateUninitialized(DType::kI64, out_dims));
  int64_t outer, inner;
  SplitAround(x.dims(), axis, &outer, &inner);
  const int64_t n = x.dim(axis);
  const T* px = x.data<T>();
  std::vector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* line = px + o * n * inner + i;
      std::iota(order.begin(), order.end(), 0);
      // Ties keep the lower index first, as the ONNX spec requires.
      auto cmp = [&](int64_t a, int64_t b) {
        const T va = line[a * inner], vb = line[b * inner];
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * inner + i;
        values.mutable_data<T>()[at] = line[order[j] * inner];
        indices.mutable_data<int64_t>()[at] = order[j];
      }
    }
  }
  ctx.SetOutput(0, std::move(values));
  ctx.SetOutput(1, std::move(indices));
  return absl::OkStatus();
}

}  // namespace

absl::Status ReduceSum(KernelContext& ctx) { return Reduce(ctx, Red::kSum); }
absl::Status ReduceMean(KernelContext& ctx) { return Reduce(ctx, Red::kMean); }
absl::Status ReduceMax(KernelContext& ctx) { return Reduce(ctx, Red::kMax); }
absl::Status ReduceMin(KernelContext& ctx) { return Reduce(ctx, Red::kMin); }
absl::Status ReduceProd(KernelContext& ctx) { return Reduce(ctx, Red::kProd); }
absl::Status ReduceSumSquare(KernelContext& ctx) { return Reduce(ctx, Red::kSumSquare); }
absl::Status ReduceL1(KernelContext& ctx) { return Reduce(ctx, Red::kL1); }
absl::Status ReduceL2(KernelContext& ctx) { return Reduce(ctx, Red::kL2); }
absl::Status ReduceLogSum(KernelContext& ctx) { return Reduce(ctx, Red::kLogSum); }
absl::Status ReduceLogSumExp(KernelContext& ctx) { return Reduce(ctx, Red::kLogSumExp); }
absl::Status ArgMax(KernelContext& ctx) { return ArgReduce(ctx, true); }
absl::Status ArgMin(KernelContext& ctx) { return ArgReduce(ctx, false); }

absl::Status CumSum(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* axis_t, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(int64_t exclusive, ctx.IntAttr("exclusive", 0));
  ASSIGN_OR_RETURN(int64_t reverse, ctx.IntAttr("reverse", 0));
  ASSIGN_OR_RETURN(auto axis_v, ReadInts(*axis_t, "axis"));
  if (axis_v.size() != 1) {
    return absl::InvalidArgumentError("axis must have one element, got " +
                                      axis_t->DebugString());
  }
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_v[0], static_cast<int64_t>(x->rank())));
  switch (x->dtype()) {
    case DType::kF32: return CumSumTyped<float>(ctx, *x, axis, exclusive, reverse);
    case DType::kF64: return CumSumTyped<double>(ctx, *x, axis, exclusive, reverse);
    case DType::kI64: return CumSumTyped<int64_t>(ctx, *x, axis, exclusive, reverse);
    case DType::kI32: return CumSumTyped<int32_t>(ctx, *x, axis, exclusive, reverse);
    default: return UnsupportedDType(ctx, x->dtype(), "f32, f64, i64, i32");
  }
}

absl::Status TopK(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", -1));
  ASSIGN_OR_RETURN(int64_t largest, ctx.IntAttr("largest", 1));
  ASSIGN_OR_RETURN(int64_t k, ctx.IntAttr("k", -1));  // opset 1
  if (const RtTensor* kt = ctx.input(1)) {
    ASSIGN_OR_RETURN(auto kv, ReadInts(*kt, "K"));
    if (kv.size() != 1) {
      return absl::InvalidArgumentError("K must have one element, got " + kt->DebugString());
    }
    k = kv[0];
  }
  if (x->rank() == 0) return absl::InvalidArgumentError("input must have rank >= 1");
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, static_cast<int64_t>(x->rank())));
  if (k < 0 || k > x->dim(axis)) {
    return absl::InvalidArgumentError("K=" + std::to_string(k) + " is outside [0, " +
                                      std::to_string(x->dim(axis)) + "]");
  }
  switch (x->dtype()) {
    case DType::kF32: return TopKTyped<float>(ctx, *x, axis, k, largest != 0);
    case DType::kF64: return TopKTyped<double>(ctx, *x, axis, k, largest != 0);
    case DType::kI64: return TopKTyped<int64_t>(ctx, *x, axis, k, largest != 0);
    case DType::kI32: return TopKTyped<int32_t>(ctx, *x, axis, k, largest != 0);
    default: return UnsupportedDType(ctx, x->dtype(), "f32, f64, i64, i32");
  }
}

}  // namespace slimpack::runtime::kernels
