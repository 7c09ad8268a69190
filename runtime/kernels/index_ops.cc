// Kernels that move elements by computed indices: GatherElements, Trilu,
// DepthToSpace and SpaceToDepth.
#include <array>
#include <cstring>

#include "runtime/kernels/element_size.h"
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

// DepthToSpace / SpaceToDepth as a 6-d transpose: output element `o` of
// `out6` (row-major) reads input offset sum(idx[d] * in_strides6[d]).
absl::Status Permute6(KernelContext& ctx, const RtTensor& x, std::vector<int64_t> out_dims,
                      const std::array<int64_t, 6>& out6,
                      const std::array<int64_t, 6>& in_strides6) {
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x.dtype(), out_dims));
  RETURN_IF_ERROR(ForElementSize(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.mutable_data<T>();
    std::array<int64_t, 6> idx{};
    for (int64_t o = 0; o < out.num_elements(); ++o) {
      int64_t src = 0;
      for (int d = 0; d < 6; ++d) src += idx[d] * in_strides6[d];
      po[o] = px[src];
      for (int d = 5; d >= 0; --d) {
        if (++idx[d] < out6[d]) break;
        idx[d] = 0;
      }
    }
    return absl::OkStatus();
  }));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> BlockSize(const KernelContext& ctx, const RtTensor& x) {
  ASSIGN_OR_RETURN(int64_t b, ctx.IntAttr("blocksize", 0));
  if (b <= 0 || x.rank() != 4) {
    return absl::InvalidArgumentError("needs a 4-d input and blocksize > 0, got " +
                                      x.DebugString() + " and " + std::to_string(b));
  }
  return b;
}

}  // namespace

absl::Status DepthToSpace(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx, *x));
  ASSIGN_OR_RETURN(std::string mode, ctx.StringAttr("mode", "DCR"));
  const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3);
  if (c % (b * b) != 0) {
    return absl::InvalidArgumentError("channels " + std::to_string(c) +
                                      " are not divisible by blocksize^2");
  }
  const int64_t oc = c / (b * b);
  // Output viewed as [n, oc, h, b, w, b]; the input channel of (c', bh, bw)
  // is bh*b*oc + bw*oc + c' (DCR) or c'*b*b + bh*b + bw (CRD).
  const int64_t hw = h * w;
  const std::array<int64_t, 6> out6 = {n, oc, h, b, w, b};
  std::array<int64_t, 6> strides;
  if (mode == "DCR") {
    strides = {c * hw, hw, w, b * oc * hw, 1, oc * hw};
  } else if (mode == "CRD") {
    strides = {c * hw, b * b * hw, w, b * hw, 1, hw};
  } else {
    return absl::InvalidArgumentError("mode '" + mode + "' is not DCR or CRD");
  }
  return Permute6(ctx, *x, {n, oc, h * b, w * b}, out6, strides);
}

absl::Status SpaceToDepth(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx, *x));
  const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3);
  if (h % b != 0 || w % b != 0) {
    return absl::InvalidArgumentError("spatial dims of " + x->DebugString() +
                                      " are not divisible by blocksize " + std::to_string(b));
  }
  // Output channel (bh*b + bw)*c + c' at (i, j) reads x[c', i*b+bh, j*b+bw]:
  // output viewed as [n, b, b, c, h/b, w/b].
  const std::array<int64_t, 6> out6 = {n, b, b, c, h / b, w / b};
  const std::array<int64_t, 6> strides = {c * h * w, w, 1, h * w, b * w, b};
  return Permute6(ctx, *x, {n, c * b * b, h / b, w / b}, out6, strides);
}

absl::Status Trilu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t upper, ctx.IntAttr("upper", 1));
  int64_t k = 0;
  if (const RtTensor* kt = ctx.input(1)) {
    ASSIGN_OR_RETURN(auto kv, ReadInts(*kt, "k"));
    if (kv.size() != 1) return absl::InvalidArgumentError("k must have one element");
    k = kv[0];
  }
  if (x->rank() < 2) return absl::InvalidArgumentError("input must have rank >= 2");
  const int64_t rows = x->dim(x->rank() - 2), cols = x->dim(x->rank() - 1);
  const int64_t mats = rows * cols == 0 ? 0 : x->num_elements() / (rows * cols);
  ASSIGN_OR_RETURN(RtTensor out, ctx.Allocate(x->dtype(), x->dims()));  // zeros
  const int64_t es = ir::DTypeBits(x->dtype()) / 8;
  if (es == 0) return UnsupportedDType(ctx, x->dtype(), "byte-sized dtypes");
  for (int64_t m = 0; m < mats; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) continue;
        const int64_t at = (m * rows + i) * cols + j;
        std::memcpy(out.mutable_raw() + at * es, x->raw() + at * es, es);
      }
    }
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status GatherElements(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* data, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* ind, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 0));
  const int64_t rank = static_cast<int64_t>(data->rank());
  ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank));
  if (ind->rank() != data->rank() ||
      (ind->dtype() != DType::kI64 && ind->dtype() != DType::kI32)) {
    return absl::InvalidArgumentError("indices " + ind->DebugString() +
                                      " must be i64/i32 of the same rank as data " +
                                      data->DebugString());
  }
  const std::vector<int64_t> ds = Strides(data->dims());
  const int64_t dim = data->dim(axis);
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(data->dtype(), ind->dims()));
  RETURN_IF_ERROR(ForElementSize(ctx, data->dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = 0; o < out.num_elements(); ++o) {
      int64_t i = ind->dtype() == DType::kI64 ? ind->data<int64_t>()[o] : ind->data<int32_t>()[o];
      if (i < -dim || i >= dim) {
        return absl::InvalidArgumentError("index " + std::to_string(i) + " (element " +
                                          std::to_string(o) + ") is out of range for axis size " +
                                          std::to_string(dim));
      }
      if (i < 0) i += dim;
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d) {
        if (d != axis && idx[d] >= data->dim(d)) {
          return absl::InvalidArgumentError("indices " + ind->DebugString() +
                                            " exceed data " + data->DebugString());
        }
        src += (d == axis ? i : idx[d]) * ds[d];
      }
      out.mutable_data<T>()[o] = data->data<T>()[src];
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

}  // namespace slimpack::runtime::kernels
