// Index-driven reads and writes: GatherND, ScatterND, ScatterElements (and
// its deprecated alias Scatter) and Compress. Every index read from a
// tensor is range-checked (negative ones count from the end) and an
// out-of-range one names its position.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/kernels/element_size.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/wrap.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

absl::Status ExpectIndexDType(const RtTensor& t) {
  if (t.dtype() == DType::kI64 || t.dtype() == DType::kI32) return absl::OkStatus();
  return absl::InvalidArgumentError("indices " + t.DebugString() + " must be i64 or i32");
}

int64_t IndexAt(const RtTensor& t, int64_t i) {
  return t.dtype() == DType::kI64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
}

// `i` wrapped into [0, dim); OutOfRange-style InvalidArgument otherwise.
absl::StatusOr<int64_t> Wrap(int64_t i, int64_t dim, int64_t at) {
  if (i < -dim || i >= dim) {
    return absl::InvalidArgumentError("index " + std::to_string(i) + " (indices element " +
                                      std::to_string(at) + ") is out of range for axis size " +
                                      std::to_string(dim));
  }
  return i < 0 ? i + dim : i;
}

enum class Reduce { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<Reduce> ReadReduction(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(std::string r, ctx.StringAttr("reduction", "none"));
  if (r == "none") return Reduce::kNone;
  if (r == "add") return Reduce::kAdd;
  if (r == "mul") return Reduce::kMul;
  if (r == "max") return Reduce::kMax;
  if (r == "min") return Reduce::kMin;
  return absl::InvalidArgumentError("reduction '" + r + "' is not one of none, add, mul, max, min");
}

template <typename T>
T Combine(Reduce r, T old, T v) {
  switch (r) {
    case Reduce::kNone: return v;
    case Reduce::kAdd: return WrapAdd(old, v);
    case Reduce::kMul: return WrapMul(old, v);
    case Reduce::kMax: return std::max(old, v);
    case Reduce::kMin: return std::min(old, v);
  }
  return v;
}

// Calls f(T{}) with the element type of `dtype`: plain copies for any
// byte-sized dtype; a reduction needs arithmetic, so f32/f64/i64/i32 only.
template <typename F>
absl::Status ForScatterType(const KernelContext& ctx, DType dtype, Reduce r, F&& f) {
  if (r == Reduce::kNone) return ForElementSize(ctx, dtype, f);
  switch (dtype) {
    case DType::kF32: return f(float{});
    case DType::kF64: return f(double{});
    case DType::kI64: return f(int64_t{});
    case DType::kI32: return f(int32_t{});
    default: return UnsupportedDType(ctx, dtype, "f32, f64, i64, i32 with a reduction");
  }
}

}  // namespace

// Output: indices.shape[:-1] + data.shape[batch_dims + k:], k the last dim
// of indices; the first batch_dims dims of data and indices are shared.
absl::Status GatherND(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* data, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* ind, ctx.RequiredInput(1));
  RETURN_IF_ERROR(ExpectIndexDType(*ind));
  ASSIGN_OR_RETURN(int64_t b, ctx.IntAttr("batch_dims", 0));
  const int64_t r = static_cast<int64_t>(data->rank()), q = static_cast<int64_t>(ind->rank());
  if (q < 1 || b < 0 || b >= std::min(r, q)) {
    return absl::InvalidArgumentError("batch_dims " + std::to_string(b) + " does not fit data " +
                                      data->DebugString() + " and indices " + ind->DebugString());
  }
  const int64_t k = ind->dim(q - 1);
  if (k < 1 || k > r - b) {
    return absl::InvalidArgumentError("indices " + ind->DebugString() + " address " +
                                      std::to_string(k) + " dims of data " + data->DebugString() +
                                      " past batch_dims " + std::to_string(b));
  }
  for (int64_t d = 0; d < b; ++d) {
    if (data->dim(d) != ind->dim(d)) {
      return absl::InvalidArgumentError("batch dim " + std::to_string(d) + " differs: data " +
                                        data->DebugString() + ", indices " + ind->DebugString());
    }
  }
  std::vector<int64_t> out_dims(ind->dims().begin(), ind->dims().end() - 1);
  out_dims.insert(out_dims.end(), data->dims().begin() + b + k, data->dims().end());
  const int64_t batches = Product(data->dims(), 0, b);
  const int64_t per_batch = Product(ind->dims(), b, q - 1);  // index tuples per batch
  const int64_t slice = Product(data->dims(), b + k, r);
  const int64_t data_batch = Product(data->dims(), b, r);
  const std::vector<int64_t> ds = Strides(data->dims());
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(data->dtype(), out_dims));
  const int64_t es = ir::DTypeBits(data->dtype()) / 8;
  if (es == 0) return UnsupportedDType(ctx, data->dtype(), "byte-sized dtypes");
  for (int64_t bt = 0; bt < batches; ++bt) {
    for (int64_t t = 0; t < per_batch; ++t) {
      const int64_t tuple = bt * per_batch + t;
      int64_t src = bt * data_batch;
      for (int64_t j = 0; j < k; ++j) {
        ASSIGN_OR_RETURN(int64_t i, Wrap(IndexAt(*ind, tuple * k + j), data->dim(b + j),
                                         tuple * k + j));
        src += i * ds[b + j];
      }
      std::memcpy(out.mutable_raw() + tuple * slice * es, data->raw() + src * es, slice * es);
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// A copy of data whose slices data[indices[t]] take updates[t] (combined by
// `reduction`), in order; updates is indices.shape[:-1] + data.shape[k:].
absl::Status ScatterND(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* data, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* ind, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* upd, ctx.RequiredInput(2));
  RETURN_IF_ERROR(ExpectIndexDType(*ind));
  ASSIGN_OR_RETURN(Reduce red, ReadReduction(ctx));
  const int64_t r = static_cast<int64_t>(data->rank()), q = static_cast<int64_t>(ind->rank());
  const int64_t k = q >= 1 ? ind->dim(q - 1) : 0;
  if (q < 1 || k < 1 || k > r) {
    return absl::InvalidArgumentError("indices " + ind->DebugString() +
                                      " do not address data " + data->DebugString());
  }
  std::vector<int64_t> want(ind->dims().begin(), ind->dims().end() - 1);
  want.insert(want.end(), data->dims().begin() + k, data->dims().end());
  if (upd->dims() != want || upd->dtype() != data->dtype()) {
    return absl::InvalidArgumentError("updates " + upd->DebugString() + " must be " +
                                      DimsToString(want) + " of the data's dtype");
  }
  const int64_t tuples = Product(ind->dims(), 0, q - 1), slice = Product(data->dims(), k, r);
  const std::vector<int64_t> ds = Strides(data->dims());
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(data->dtype(), data->dims()));
  if (data->byte_size() > 0) std::memcpy(out.mutable_raw(), data->raw(), data->byte_size());
  RETURN_IF_ERROR(ForScatterType(ctx, data->dtype(), red, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    T* po = out.mutable_data<T>();
    const T* pu = upd->data<T>();
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t dst = 0;
      for (int64_t j = 0; j < k; ++j) {
        ASSIGN_OR_RETURN(int64_t i, Wrap(IndexAt(*ind, t * k + j), data->dim(j), t * k + j));
        dst += i * ds[j];
      }
      for (int64_t e = 0; e < slice; ++e) po[dst + e] = Combine(red, po[dst + e], pu[t * slice + e]);
    }
    return absl::OkStatus();
  }));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// A copy of data where, for every position p of indices (same rank as
// data), out[p with p[axis] = indices[p]] takes updates[p].
absl::Status ScatterElements(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* data, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* ind, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* upd, ctx.RequiredInput(2));
  RETURN_IF_ERROR(ExpectIndexDType(*ind));
  ASSIGN_OR_RETURN(Reduce red, ReadReduction(ctx));
  const int64_t rank = static_cast<int64_t>(data->rank());
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 0));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank));
  if (ind->rank() != data->rank() || upd->dims() != ind->dims() ||
      upd->dtype() != data->dtype()) {
    return absl::InvalidArgumentError("indices " + ind->DebugString() + " and updates " +
                                      upd->DebugString() + " must have one shape of data " +
                                      data->DebugString() + "'s rank (updates of its dtype)");
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && ind->dim(d) > data->dim(d)) {
      return absl::InvalidArgumentError("indices " + ind->DebugString() + " exceed data " +
                                        data->DebugString() + " on axis " + std::to_string(d));
    }
  }
  const std::vector<int64_t> ds = Strides(data->dims());
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(data->dtype(), data->dims()));
  if (data->byte_size() > 0) std::memcpy(out.mutable_raw(), data->raw(), data->byte_size());
  RETURN_IF_ERROR(ForScatterType(ctx, data->dtype(), red, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    T* po = out.mutable_data<T>();
    const T* pu = upd->data<T>();
    std::vector<int64_t> idx(rank, 0);
    for (int64_t p = 0; p < ind->num_elements(); ++p) {
      ASSIGN_OR_RETURN(int64_t i, Wrap(IndexAt(*ind, p), data->dim(axis), p));
      int64_t dst = 0;
      for (int64_t d = 0; d < rank; ++d) dst += (d == axis ? i : idx[d]) * ds[d];
      po[dst] = Combine(red, po[dst], pu[p]);
      for (int64_t d = rank; d-- > 0;) {
        if (++idx[d] < ind->dim(d)) break;
        idx[d] = 0;
      }
    }
    return absl::OkStatus();
  }));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// Scatter (opsets 9-10) is ScatterElements without a reduction.
absl::Status Scatter(KernelContext& ctx) { return ScatterElements(ctx); }

// The slices along `axis` (of the flattened input without one) whose
// condition entry is true, in order. The condition may be shorter than the
// axis; a true entry past its end is an error.
absl::Status Compress(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* cond, ctx.RequiredInput(1));
  if (cond->rank() != 1 || cond->dtype() != DType::kBool) {
    return absl::InvalidArgumentError("condition " + cond->DebugString() + " must be 1-d bool");
  }
  std::vector<int64_t> dims = x->dims();
  int64_t axis = 0;
  if (ctx.HasAttr("axis")) {
    ASSIGN_OR_RETURN(axis, ctx.IntAttr("axis", 0));
    ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, static_cast<int64_t>(dims.size())));
  } else {
    dims = {x->num_elements()};
  }
  const int64_t n = dims[axis];
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond->num_elements(); ++i) {
    if (cond->raw()[i] == 0) continue;
    if (i >= n) {
      return absl::InvalidArgumentError("condition " + cond->DebugString() + " selects entry " +
                                        std::to_string(i) + " of an axis of size " +
                                        std::to_string(n));
    }
    keep.push_back(i);
  }
  const int64_t outer = Product(dims, 0, axis), inner = Product(dims, axis + 1, dims.size());
  std::vector<int64_t> out_dims = dims;
  out_dims[axis] = static_cast<int64_t>(keep.size());
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), out_dims));
  const int64_t es = ir::DTypeBits(x->dtype()) / 8;
  if (es == 0) return UnsupportedDType(ctx, x->dtype(), "byte-sized dtypes");
  uint8_t* po = out.mutable_raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : keep) {
      std::memcpy(po, x->raw() + (o * n + i) * inner * es, inner * es);
      po += inner * es;
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
