// Kernels that select or rearrange elements: Concat, Split, Slice, Gather,
// Pad. They copy elements by byte size, so they work for every dtype.
#include <algorithm>
#include <cstring>
#include <set>

#include "ir/float_convert.h"
#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/convert.h"
#include "runtime/kernels/element_size.h"
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

size_t ElementBytes(DType t) { return static_cast<size_t>(ir::DTypeBits(t) / 8); }

absl::Status CheckByteSized(const KernelContext& ctx, DType t) {
  if (ir::DTypeBits(t) >= 8) return absl::OkStatus();
  return UnsupportedDType(ctx, t, "dtypes of 1, 2, 4 or 8 bytes");
}

// Writes `v` converted to `dtype` at `dst`.
absl::Status StoreScalar(const KernelContext& ctx, DType dtype, double v,
                         uint8_t* dst) {
  switch (dtype) {
    case DType::kF32: { float f = static_cast<float>(v); std::memcpy(dst, &f, 4); break; }
    case DType::kF64: std::memcpy(dst, &v, 8); break;
    case DType::kF16: { uint16_t h = ir::F32ToF16(static_cast<float>(v)); std::memcpy(dst, &h, 2); break; }
    case DType::kI64: { int64_t i = ConvertNumber<int64_t>(v); std::memcpy(dst, &i, 8); break; }
    case DType::kI32: { int32_t i = ConvertNumber<int32_t>(v); std::memcpy(dst, &i, 4); break; }
    case DType::kI16: { int16_t i = ConvertNumber<int16_t>(v); std::memcpy(dst, &i, 2); break; }
    case DType::kI8: { int8_t i = ConvertNumber<int8_t>(v); std::memcpy(dst, &i, 1); break; }
    case DType::kU8: { uint8_t i = ConvertNumber<uint8_t>(v); std::memcpy(dst, &i, 1); break; }
    case DType::kBool: *dst = v != 0; break;
    default:
      return UnsupportedDType(ctx, dtype, "f32, f64, f16, i64, i32, i16, i8, u8, bool");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Concat(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* first, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 0));
  RETURN_IF_ERROR(CheckByteSized(ctx, first->dtype()));
  const int64_t rank = static_cast<int64_t>(first->rank());
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank));
  std::vector<const RtTensor*> ins;
  std::vector<int64_t> dims = first->dims();
  dims[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(const RtTensor* t, ctx.RequiredInput(i));
    bool match = t->dtype() == first->dtype() && t->rank() == first->rank();
    for (int64_t d = 0; match && d < rank; ++d) {
      match = d == axis || t->dim(d) == first->dim(d);
    }
    if (!match) {
      return absl::InvalidArgumentError("input " + std::to_string(i) + " " +
                                        t->DebugString() + " does not match input 0 " +
                                        first->DebugString() + " outside axis " +
                                        std::to_string(axis));
    }
    dims[axis] += t->dim(axis);
    ins.push_back(t);
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(first->dtype(), dims));
  const size_t es = ElementBytes(first->dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  uint8_t* po = out.mutable_raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (const RtTensor* t : ins) {
      const size_t block = static_cast<size_t>(t->dim(axis) * inner) * es;
      if (block == 0) continue;
      std::memcpy(po, t->raw() + o * block, block);
      po += block;
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Split(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  RETURN_IF_ERROR(CheckByteSized(ctx, x->dtype()));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 0));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, static_cast<int64_t>(x->rank())));
  ASSIGN_OR_RETURN(std::vector<int64_t> split, ctx.IntsAttr("split"));
  if (const RtTensor* s = ctx.input(1)) {
    ASSIGN_OR_RETURN(split, ReadInts(*s, "split"));
  }
  const int64_t n_out = static_cast<int64_t>(ctx.num_outputs());
  const int64_t dim = x->dim(axis);
  if (split.empty()) {
    ASSIGN_OR_RETURN(int64_t num_outputs, ctx.IntAttr("num_outputs", 0));
    if (num_outputs > 0) {
      // Opset 18: equal chunks of ceil(dim / n), the last one smaller.
      const int64_t chunk = (dim + num_outputs - 1) / num_outputs;
      for (int64_t i = 0; i < num_outputs; ++i) {
        split.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
      }
    } else {
      if (n_out == 0 || dim % n_out != 0) {
        return absl::InvalidArgumentError(
            "axis size " + std::to_string(dim) + " does not split evenly into " +
            std::to_string(n_out) + " outputs");
      }
      split.assign(n_out, dim / n_out);
    }
  }
  int64_t total = 0;
  for (int64_t s : split) {
    if (s < 0) return absl::InvalidArgumentError("split " + DimsToString(split) + " is negative");
    total += s;
  }
  if (static_cast<int64_t>(split.size()) != n_out || total != dim) {
    return absl::InvalidArgumentError(
        "split " + DimsToString(split) + " must have one size per output (" +
        std::to_string(n_out) + ") summing to axis size " + std::to_string(dim));
  }
  const size_t es = ElementBytes(x->dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
  for (size_t d = axis + 1; d < x->rank(); ++d) inner *= x->dim(d);
  int64_t offset = 0;
  for (int64_t i = 0; i < n_out; ++i) {
    std::vector<int64_t> dims = x->dims();
    dims[axis] = split[i];
    ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), dims));
    const size_t block = static_cast<size_t>(split[i] * inner) * es;
    for (int64_t o = 0; o < outer && block > 0; ++o) {
      std::memcpy(out.mutable_raw() + o * block,
                  x->raw() + (o * dim + offset) * inner * es, block);
    }
    offset += split[i];
    ctx.SetOutput(i, std::move(out));
  }
  return absl::OkStatus();
}

absl::Status Slice(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  const int64_t rank = static_cast<int64_t>(x->rank());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.num_inputs() >= 3) {
    ASSIGN_OR_RETURN(const RtTensor* s, ctx.RequiredInput(1));
    ASSIGN_OR_RETURN(const RtTensor* e, ctx.RequiredInput(2));
    ASSIGN_OR_RETURN(starts, ReadInts(*s, "starts"));
    ASSIGN_OR_RETURN(ends, ReadInts(*e, "ends"));
    if (const RtTensor* a = ctx.input(3)) {
      ASSIGN_OR_RETURN(axes, ReadInts(*a, "axes"));
    }
    if (const RtTensor* st = ctx.input(4)) {
      ASSIGN_OR_RETURN(steps, ReadInts(*st, "steps"));
    }
  } else {  // opset 1: attributes
    ASSIGN_OR_RETURN(starts, ctx.IntsAttr("starts"));
    ASSIGN_OR_RETURN(ends, ctx.IntsAttr("ends"));
    ASSIGN_OR_RETURN(axes, ctx.IntsAttr("axes"));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return absl::InvalidArgumentError("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1), dims = x->dims();
  std::set<int64_t> seen;
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axes[i], rank));
    if (!seen.insert(a).second) {
      return absl::InvalidArgumentError("axis " + std::to_string(a) + " is sliced twice");
    }
    const int64_t dim = x->dim(a), st = steps[i];
    if (st == 0) return absl::InvalidArgumentError("step is 0 on axis " + std::to_string(a));
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t len;
    if (dim == 0) {
      s = 0;
      len = 0;
    } else if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    begin[a] = s;
    step[a] = st;
    dims[a] = len;
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), dims));
  std::vector<int64_t> strides(rank);
  int64_t base = 0, stride = 1;
  for (int64_t d = rank; d-- > 0;) {
    strides[d] = stride * step[d];
    base += begin[d] * stride;
    stride *= x->dim(d);
  }
  RETURN_IF_ERROR(ForElementSize(ctx, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x->data<T>() + base;
    T* po = out.mutable_data<T>();
    ForEachBroadcast<1>(dims, {strides},
                        [&](int64_t o, const std::array<int64_t, 1>& in) { po[o] = px[in[0]]; });
    return absl::OkStatus();
  }));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Gather(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* data, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* ind, ctx.RequiredInput(1));
  RETURN_IF_ERROR(CheckByteSized(ctx, data->dtype()));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 0));
  const int64_t rank = static_cast<int64_t>(data->rank());
  if (rank == 0) return absl::InvalidArgumentError("data must have rank >= 1");
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank));
  if (ind->dtype() != DType::kI64 && ind->dtype() != DType::kI32) {
    return absl::InvalidArgumentError("indices must be i64 or i32, got " + ind->DebugString());
  }
  std::vector<int64_t> dims(data->dims().begin(), data->dims().begin() + axis);
  dims.insert(dims.end(), ind->dims().begin(), ind->dims().end());
  dims.insert(dims.end(), data->dims().begin() + axis + 1, data->dims().end());
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(data->dtype(), dims));
  const int64_t dim = data->dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data->dim(d);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data->dim(d);
  const size_t block = static_cast<size_t>(inner) * ElementBytes(data->dtype());
  const int64_t n = ind->num_elements();
  uint8_t* po = out.mutable_raw();
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = ind->dtype() == DType::kI64 ? ind->data<int64_t>()[j]
                                            : ind->data<int32_t>()[j];
    if (i < -dim || i >= dim) {
      return absl::InvalidArgumentError("index " + std::to_string(i) + " (element " +
                                        std::to_string(j) + ") is out of range for axis size " +
                                        std::to_string(dim));
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = ind->dtype() == DType::kI64 ? ind->data<int64_t>()[j]
                                              : ind->data<int32_t>()[j];
      if (i < 0) i += dim;
      if (block > 0) {
        std::memcpy(po + (o * n + j) * block, data->raw() + (o * dim + i) * block, block);
      }
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Pad(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  const int64_t rank = static_cast<int64_t>(x->rank());
  ASSIGN_OR_RETURN(std::string mode, ctx.StringAttr("mode", "constant"));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, ctx.IntsAttr("pads"));  // opset < 11
  ASSIGN_OR_RETURN(float attr_value, ctx.FloatAttr("value", 0.0f));
  double value = attr_value;
  if (const RtTensor* p = ctx.input(1)) {
    ASSIGN_OR_RETURN(pads, ReadInts(*p, "pads"));
  }
  if (const RtTensor* v = ctx.input(2)) {
    if (v->num_elements() > 0) {
      ASSIGN_OR_RETURN(value, ReadScalar(*v, "constant_value"));
    }
  }
  std::vector<int64_t> axes;
  if (const RtTensor* a = ctx.input(3)) {
    ASSIGN_OR_RETURN(axes, ReadInts(*a, "axes"));
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const int64_t na = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * na) {
    return absl::InvalidArgumentError("pads has " + std::to_string(pads.size()) +
                                      " values, expected " + std::to_string(2 * na));
  }
  std::vector<int64_t> pb(rank, 0), dims = x->dims();
  for (int64_t i = 0; i < na; ++i) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axes[i], rank));
    pb[a] = pads[i];
    dims[a] = x->dim(a) + pads[i] + pads[i + na];
    if (dims[a] < 0) {
      return absl::InvalidArgumentError("pads " + DimsToString(pads) +
                                        " crop axis " + std::to_string(a) + " below zero");
    }
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return absl::UnimplementedError("Pad mode '" + mode +
                                    "' is not supported; supported: constant, reflect, edge, wrap");
  }
  RETURN_IF_ERROR(CheckByteSized(ctx, x->dtype()));
  const size_t es = ElementBytes(x->dtype());
  uint8_t fill[8] = {0};
  if (mode == "constant") RETURN_IF_ERROR(StoreScalar(ctx, x->dtype(), value, fill));
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), dims));
  if (out.num_elements() == 0) {
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }
  if (mode != "constant") {
    for (int64_t d = 0; d < rank; ++d) {
      if (x->dim(d) == 0 && dims[d] > 0) {
        return absl::InvalidArgumentError("Pad mode '" + mode + "' cannot pad empty axis " +
                                          std::to_string(d));
      }
    }
  }
  std::vector<int64_t> in_strides(rank, 1), idx(rank, 0);
  for (int64_t d = rank - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * x->dim(d);
  uint8_t* po = out.mutable_raw();
  for (int64_t o = 0; o < out.num_elements(); ++o) {
    int64_t src = 0;
    bool use_fill = false;
    for (int64_t d = 0; d < rank && !use_fill; ++d) {
      const int64_t n = x->dim(d);
      int64_t i = idx[d] - pb[d];
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          use_fill = true;
          break;
        } else if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, n - 1);
        } else if (mode == "wrap") {
          i = ((i % n) + n) % n;
        } else if (n == 1) {
          i = 0;
        } else {  // reflect, period 2(n-1), without repeating the edge
          const int64_t period = 2 * (n - 1);
          i = ((i % period) + period) % period;
          if (i >= n) i = period - i;
        }
      }
      src += i * in_strides[d];
    }
    std::memcpy(po + o * es, use_fill ? fill : x->raw() + src * es, es);
    for (int64_t d = rank; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
