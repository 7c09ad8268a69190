// Kernels that make tensors: Constant, ConstantOfShape, Range, EyeLike,
// OneHot, and the dtype conversions Cast and CastLike.
#include <cmath>
#include <cstring>
#include <vector>

#include "ir/float_convert.h"
#include "runtime/kernels/convert.h"
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

// ONNX TensorProto.DataType numbers, as the `to` attribute of Cast holds.
absl::StatusOr<DType> FromOnnxType(int64_t t) {
  switch (t) {
    case 1: return DType::kF32;
    case 2: return DType::kU8;
    case 3: return DType::kI8;
    case 4: return DType::kU16;
    case 5: return DType::kI16;
    case 6: return DType::kI32;
    case 7: return DType::kI64;
    case 9: return DType::kBool;
    case 10: return DType::kF16;
    case 11: return DType::kF64;
    case 12: return DType::kU32;
    case 13: return DType::kU64;
    case 16: return DType::kBF16;
    default:
      return absl::UnimplementedError(
          "Cast to ONNX type " + std::to_string(t) +
          " is not supported; supported: float, uint8, int8, uint16, int16, "
          "int32, int64, bool, float16, double, uint32, uint64, bfloat16");
  }
}

// Reads element i of `t` as a C++ value of type V (float for f16/bf16).
template <typename F>
absl::Status VisitSource(const KernelContext& ctx, const RtTensor& t, F&& f) {
  switch (t.dtype()) {
    case DType::kF32: return f(t.data<float>());
    case DType::kF64: return f(t.data<double>());
    case DType::kI64: return f(t.data<int64_t>());
    case DType::kI32: return f(t.data<int32_t>());
    case DType::kI16: return f(t.data<int16_t>());
    case DType::kI8: return f(t.data<int8_t>());
    case DType::kU64: return f(t.data<uint64_t>());
    case DType::kU32: return f(t.data<uint32_t>());
    case DType::kU16: return f(t.data<uint16_t>());
    case DType::kU8: return f(t.data<uint8_t>());
    case DType::kBool: {
      // Bytes other than 0/1 are not valid C++ bools: normalize first.
      std::vector<uint8_t> b(t.num_elements());
      for (size_t i = 0; i < b.size(); ++i) b[i] = t.raw()[i] != 0;
      return f(b.data());
    }
    default:
      return UnsupportedDType(ctx, t.dtype(),
                              "f32, f64, f16, bf16, i64, i32, i16, i8, u64, u32, u16, u8, bool");
  }
}

template <typename To, typename From>
void ConvertAll(const From* src, int64_t n, To* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = ConvertNumber<To>(src[i]);
}

absl::StatusOr<RtTensor> CastTensor(KernelContext& ctx, const RtTensor& x, DType to) {
  if (x.dtype() == to) return x;
  RtTensor src = x;
  // Half types go through f32 first.
  if (x.dtype() == DType::kF16 || x.dtype() == DType::kBF16) {
    ASSIGN_OR_RETURN(src, ctx.AllocateUninitialized(DType::kF32, x.dims()));
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const uint16_t h = x.data<uint16_t>()[i];
      src.mutable_data<float>()[i] =
          x.dtype() == DType::kF16 ? ir::F16ToF32(h) : ir::Bf16ToF32(h);
    }
    if (to == DType::kF32) return src;
  }
  const DType mid = (to == DType::kF16 || to == DType::kBF16) ? DType::kF32 : to;
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(mid, x.dims()));
  const int64_t n = x.num_elements();
  RETURN_IF_ERROR(VisitSource(ctx, src, [&](const auto* p) -> absl::Status {
    switch (mid) {
      case DType::kF32: ConvertAll(p, n, out.mutable_data<float>()); break;
      case DType::kF64: ConvertAll(p, n, out.mutable_data<double>()); break;
      case DType::kI64: ConvertAll(p, n, out.mutable_data<int64_t>()); break;
      case DType::kI32: ConvertAll(p, n, out.mutable_data<int32_t>()); break;
      case DType::kI16: ConvertAll(p, n, out.mutable_data<int16_t>()); break;
      case DType::kI8: ConvertAll(p, n, out.mutable_data<int8_t>()); break;
      case DType::kU64: ConvertAll(p, n, out.mutable_data<uint64_t>()); break;
      case DType::kU32: ConvertAll(p, n, out.mutable_data<uint32_t>()); break;
      case DType::kU16: ConvertAll(p, n, out.mutable_data<uint16_t>()); break;
      case DType::kU8: ConvertAll(p, n, out.mutable_data<uint8_t>()); break;
      case DType::kBool: ConvertAll(p, n, reinterpret_cast<bool*>(out.mutable_raw())); break;
      default: return UnsupportedDType(ctx, mid, "numeric dtypes");
    }
    return absl::OkStatus();
  }));
  if (mid == to) return out;
  ASSIGN_OR_RETURN(RtTensor half, ctx.AllocateUninitialized(to, x.dims()));
  for (int64_t i = 0; i < n; ++i) {
    const float f = out.data<float>()[i];
    half.mutable_data<uint16_t>()[i] = to == DType::kF16 ? ir::F32ToF16(f) : ir::F32ToBf16(f);
  }
  ctx.Recycle(std::move(out));
  return half;
}

template <typename T>
absl::StatusOr<RtTensor> RangeTyped(KernelContext& ctx, T start, T limit, T delta) {
  if (delta == T(0)) return absl::InvalidArgumentError("Range delta is 0");
  const double count_d = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                                   static_cast<double>(delta));
  if (!(count_d < 9.0e15)) {
    return absl::InvalidArgumentError("Range would produce " + std::to_string(count_d) +
                                      " elements");
  }
  const int64_t count = count_d > 0 ? static_cast<int64_t>(count_d) : 0;
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DTypeOf<T>(), {count}));
  T* po = out.mutable_data<T>();
  for (int64_t i = 0; i < count; ++i) po[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  return out;
}

}  // namespace

absl::Status Cast(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (!ctx.HasAttr("to")) return absl::InvalidArgumentError("attribute 'to' is required");
  ASSIGN_OR_RETURN(int64_t to, ctx.IntAttr("to", 0));
  ASSIGN_OR_RETURN(DType dt, FromOnnxType(to));
  ASSIGN_OR_RETURN(RtTensor out, CastTensor(ctx, *x, dt));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status CastLike(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* like, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(RtTensor out, CastTensor(ctx, *x, like->dtype()));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Constant(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  if (const ir::Attribute* a = node.FindAttribute("value")) {
    if (a->kind != ir::Attribute::Kind::kTensor || a->t == nullptr) {
      return absl::InvalidArgumentError("attribute 'value' is not a tensor");
    }
    ASSIGN_OR_RETURN(RtTensor t, RtTensor::FromIr(*a->t));
    ctx.SetOutput(0, std::move(t));
    return absl::OkStatus();
  }
  if (ctx.HasAttr("value_float")) {
    ASSIGN_OR_RETURN(float v, ctx.FloatAttr("value_float", 0));
    ctx.SetOutput(0, RtTensor::FromVector<float>({}, {v}));
  } else if (ctx.HasAttr("value_floats")) {
    ASSIGN_OR_RETURN(auto v, ctx.FloatsAttr("value_floats"));
    ctx.SetOutput(0, RtTensor::FromVector<float>({static_cast<int64_t>(v.size())}, v));
  } else if (ctx.HasAttr("value_int")) {
    ASSIGN_OR_RETURN(int64_t v, ctx.IntAttr("value_int", 0));
    ctx.SetOutput(0, RtTensor::FromVector<int64_t>({}, {v}));
  } else if (ctx.HasAttr("value_ints")) {
    ASSIGN_OR_RETURN(auto v, ctx.IntsAttr("value_ints"));
    ctx.SetOutput(0, RtTensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v));
  } else {
    return absl::UnimplementedError(
        "Constant needs one of value, value_float(s), value_int(s); "
        "sparse_value and value_string(s) are not supported");
  }
  return absl::OkStatus();
}

absl::Status ConstantOfShape(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* s, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(auto dims, ReadInts(*s, "shape"));
  for (int64_t d : dims) {
    if (d < 0) return absl::InvalidArgumentError("shape " + DimsToString(dims) + " is negative");
  }
  RtTensor value = RtTensor::FromVector<float>({1}, {0.0f});
  if (const ir::Attribute* a = ctx.node().FindAttribute("value")) {
    if (a->kind != ir::Attribute::Kind::kTensor || a->t == nullptr) {
      return absl::InvalidArgumentError("attribute 'value' is not a tensor");
    }
    ASSIGN_OR_RETURN(value, RtTensor::FromIr(*a->t));
    if (value.num_elements() != 1) {
      return absl::InvalidArgumentError("attribute 'value' must have one element, got " +
                                        value.DebugString());
    }
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(value.dtype(), dims));
  const uint64_t es = value.byte_size();
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::memcpy(out.mutable_raw() + i * es, value.raw(), es);
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Range(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* s, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* l, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* d, ctx.RequiredInput(2));
  if (s->dtype() != l->dtype() || s->dtype() != d->dtype() || s->num_elements() != 1 ||
      l->num_elements() != 1 || d->num_elements() != 1) {
    return absl::InvalidArgumentError("start, limit and delta must be scalars of one dtype, got " +
                                      s->DebugString() + ", " + l->DebugString() + ", " +
                                      d->DebugString());
  }
  absl::StatusOr<RtTensor> out;
  switch (s->dtype()) {
    case DType::kF32:
      out = RangeTyped<float>(ctx, s->data<float>()[0], l->data<float>()[0], d->data<float>()[0]);
      break;
    case DType::kF64:
      out = RangeTyped<double>(ctx, s->data<double>()[0], l->data<double>()[0], d->data<double>()[0]);
      break;
    case DType::kI64:
      out = RangeTyped<int64_t>(ctx, s->data<int64_t>()[0], l->data<int64_t>()[0],
                                d->data<int64_t>()[0]);
      break;
    case DType::kI32:
      out = RangeTyped<int32_t>(ctx, s->data<int32_t>()[0], l->data<int32_t>()[0],
                                d->data<int32_t>()[0]);
      break;
    default: return UnsupportedDType(ctx, s->dtype(), "f32, f64, i64, i32");
  }
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

absl::Status EyeLike(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (x->rank() != 2) {
    return absl::InvalidArgumentError("input " + x->DebugString() + " must be 2-d");
  }
  DType dt = x->dtype();
  if (ctx.HasAttr("dtype")) {
    ASSIGN_OR_RETURN(int64_t t, ctx.IntAttr("dtype", 0));
    ASSIGN_OR_RETURN(dt, FromOnnxType(t));
  }
  ASSIGN_OR_RETURN(int64_t k, ctx.IntAttr("k", 0));
  // Ones on the k-th diagonal in f64, then Cast's conversion to the dtype.
  const int64_t rows = x->dim(0), cols = x->dim(1);
  ASSIGN_OR_RETURN(RtTensor eye, ctx.Allocate(DType::kF64, {rows, cols}));  // zeros
  for (int64_t r = 0; r < rows; ++r) {
    if (r + k >= 0 && r + k < cols) eye.mutable_data<double>()[r * cols + r + k] = 1.0;
  }
  ASSIGN_OR_RETURN(RtTensor out, CastTensor(ctx, eye, dt));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// Output: the indices' shape with a `depth` axis inserted at `axis`, the
// `values` [off, on] pair's dtype. Indices in [-depth, depth) select (a
// negative one counts from the end); others give an all-off line.
absl::Status OneHot(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* indices, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* depth_t, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* values, ctx.RequiredInput(2));
  ASSIGN_OR_RETURN(double depth_d, ReadScalar(*depth_t, "depth"));
  if (!(depth_d >= 1 && depth_d < 9.0e15)) {
    return absl::InvalidArgumentError("depth " + std::to_string(depth_d) + " must be >= 1");
  }
  const int64_t depth = static_cast<int64_t>(depth_d);
  if (values->num_elements() != 2) {
    return absl::InvalidArgumentError("values " + values->DebugString() +
                                      " must hold two elements [off, on]");
  }
  const int bits = ir::DTypeBits(values->dtype());
  if (bits < 8) return UnsupportedDType(ctx, values->dtype(), "byte-sized dtypes");
  const int64_t rank = static_cast<int64_t>(indices->rank());
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", -1));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank + 1));
  ASSIGN_OR_RETURN(RtTensor idx, CastTensor(ctx, *indices, DType::kI64));
  std::vector<int64_t> dims = indices->dims();
  dims.insert(dims.begin() + axis, depth);
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(values->dtype(), dims));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= indices->dim(i);
  for (int64_t i = axis; i < rank; ++i) inner *= indices->dim(i);
  const size_t es = static_cast<size_t>(bits / 8);
  const uint8_t* off = values->raw();
  const uint8_t* on = values->raw() + es;
  uint8_t* po = out.mutable_raw();
  const int64_t* pi = idx.data<int64_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = pi[o * inner + i];
        if (v < 0) v += depth;
        std::memcpy(po + ((o * depth + d) * inner + i) * es, v == d ? on : off, es);
      }
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
