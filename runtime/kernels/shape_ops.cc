// Kernels that change only the view of the data (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Dropout), read shapes (Shape, Size), or broadcast and
// permute it (Expand, Tile, Transpose).
#include <algorithm>
#include <set>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/element_size.h"
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

// `axes` from the attribute (older opsets) or input 1 (newer ones).
absl::StatusOr<std::vector<int64_t>> AxesAttrOrInput(KernelContext& ctx,
                                                      bool* given) {
  *given = ctx.HasAttr("axes");
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.IntsAttr("axes"));
  if (const RtTensor* t = ctx.input(1)) {
    *given = true;
    ASSIGN_OR_RETURN(axes, ReadInts(*t, "axes"));
  }
  return axes;
}

}  // namespace

absl::Status Identity(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ctx.SetOutput(0, *x);
  return absl::OkStatus();
}

absl::Status Dropout(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  if (const RtTensor* t = ctx.input(2)) {
    ASSIGN_OR_RETURN(double training, ReadScalar(*t, "training_mode"));
    if (training != 0) {
      return absl::UnimplementedError(
          "Dropout with training_mode=true is not supported; supported: inference");
    }
  }
  ctx.SetOutput(0, *x);
  if (ctx.wants_output(1)) {
    // Inference keeps every element: the mask is all true.
    ASSIGN_OR_RETURN(RtTensor mask, ctx.AllocateUninitialized(DType::kBool, x->dims()));
    std::fill(mask.mutable_raw(), mask.mutable_raw() + mask.num_elements(), 1);
    ctx.SetOutput(1, std::move(mask));
  }
  return absl::OkStatus();
}

absl::Status Reshape(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  std::vector<int64_t> shape;
  if (const RtTensor* s = ctx.input(1)) {
    ASSIGN_OR_RETURN(shape, ReadInts(*s, "shape"));
  } else {
    ASSIGN_OR_RETURN(shape, ctx.IntsAttr("shape"));  // opset 1
  }
  ASSIGN_OR_RETURN(int64_t allowzero, ctx.IntAttr("allowzero", 0));
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= x->rank()) {
        return absl::InvalidArgumentError(
            "shape " + DimsToString(shape) + " copies dim " + std::to_string(i) +
            " from input " + x->DebugString() + " which has no such dim");
      }
      shape[i] = x->dim(i);
    }
    if (shape[i] == -1) {
      if (infer_at >= 0) {
        return absl::InvalidArgumentError("shape " + DimsToString(shape) +
                                          " has more than one -1");
      }
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (shape[i] < 0) {
      return absl::InvalidArgumentError("shape " + DimsToString(shape) +
                                        " has a negative dim");
    }
    known *= shape[i];
  }
  if (infer_at >= 0) {
    if (known == 0 || x->num_elements() % known != 0) {
      return absl::InvalidArgumentError("cannot infer -1 in shape " + DimsToString(shape) +
                                        " for input " + x->DebugString());
    }
    shape[infer_at] = x->num_elements() / known;
  }
  if (NumElementsOf(shape) != x->num_elements()) {
    return absl::InvalidArgumentError("cannot reshape " + x->DebugString() + " to " +
                                      DimsToString(shape));
  }
  ctx.SetOutput(0, x->Reshaped(shape));
  return absl::OkStatus();
}

absl::Status Flatten(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 1));
  const int64_t rank = static_cast<int64_t>(x->rank());
  if (axis < -rank || axis > rank) {
    return absl::InvalidArgumentError("axis " + std::to_string(axis) +
                                      " is out of range for rank " + std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x->dim(i);
  for (int64_t i = axis; i < rank; ++i) inner *= x->dim(i);
  ctx.SetOutput(0, x->Reshaped({outer, inner}));
  return absl::OkStatus();
}

absl::Status Squeeze(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  bool given = false;
  ASSIGN_OR_RETURN(auto axes, AxesAttrOrInput(ctx, &given));
  const int64_t rank = static_cast<int64_t>(x->rank());
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) drop[i] = x->dim(i) == 1;
  }
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank));
    if (x->dim(n) != 1) {
      return absl::InvalidArgumentError("cannot squeeze axis " + std::to_string(a) +
                                        " of size " + std::to_string(x->dim(n)) +
                                        " in " + x->DebugString());
    }
    drop[n] = true;
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i]) out.push_back(x->dim(i));
  }
  ctx.SetOutput(0, x->Reshaped(out));
  return absl::OkStatus();
}

absl::Status Unsqueeze(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  bool given = false;
  ASSIGN_OR_RETURN(auto axes, AxesAttrOrInput(ctx, &given));
  if (!given) return absl::InvalidArgumentError("axes are required");
  const int64_t out_rank = static_cast<int64_t>(x->rank() + axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, out_rank));
    if (inserted[n]) {
      return absl::InvalidArgumentError("axes " + DimsToString(axes) + " repeat axis " +
                                        std::to_string(n));
    }
    inserted[n] = true;
  }
  std::vector<int64_t> out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    out.push_back(inserted[i] ? 1 : x->dim(next++));
  }
  ctx.SetOutput(0, x->Reshaped(out));
  return absl::OkStatus();
}

absl::Status Shape(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  const int64_t rank = static_cast<int64_t>(x->rank());
  ASSIGN_OR_RETURN(int64_t start, ctx.IntAttr("start", 0));
  ASSIGN_OR_RETURN(int64_t end, ctx.IntAttr("end", rank));
  // Out-of-range start/end are clamped, as the spec says.
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  start = clamp(start);
  end = clamp(end);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x->dim(i));
  ctx.SetOutput(0, RtTensor::FromVector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
  return absl::OkStatus();
}

absl::Status Size(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ctx.SetOutput(0, RtTensor::FromVector<int64_t>({}, {x->num_elements()}));
  return absl::OkStatus();
}

absl::Status Expand(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* s, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(auto shape, ReadInts(*s, "shape"));
  ASSIGN_OR_RETURN(auto dims, BroadcastDims({x->dims(), shape}));
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), dims));
  RETURN_IF_ERROR(ForElementSize(ctx, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x->data<T>();
    T* po = out.mutable_data<T>();
    ForEachBroadcast<1>(dims, {BroadcastStrides(x->dims(), dims)},
                        [&](int64_t o, const std::array<int64_t, 1>& in) { po[o] = px[in[0]]; });
    return absl::OkStatus();
  }));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Tile(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* r, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(auto repeats, ReadInts(*r, "repeats"));
  if (repeats.size() != x->rank()) {
    return absl::InvalidArgumentError("repeats has " + std::to_string(repeats.size()) +
                                      " values for input " + x->DebugString());
  }
  std::vector<int64_t> dims(x->rank());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] < 0) {
      return absl::InvalidArgumentError("repeats " + DimsToString(repeats) +
                                        " has a negative value");
    }
    if (__builtin_mul_overflow(x->dim(i), repeats[i], &dims[i])) {
      return absl::InvalidArgumentError("tiled shape overflows");
    }
  }
  if (NumElementsOf(dims) < 0) {
    return absl::InvalidArgumentError("tiled shape overflows");
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), dims));
  const size_t rank = dims.size();
  std::vector<int64_t> idx(rank, 0), in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * x->dim(d);
  RETURN_IF_ERROR(ForElementSize(ctx, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x->data<T>();
    T* po = out.mutable_data<T>();
    for (int64_t o = 0; o < out.num_elements(); ++o) {
      int64_t src = 0;
      for (size_t d = 0; d < rank; ++d) src += (idx[d] % x->dim(d)) * in_strides[d];
      po[o] = px[src];
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
      }
    }
    return absl::OkStatus();
  }));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Transpose(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  const size_t rank = x->rank();
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  ASSIGN_OR_RETURN(perm, ctx.IntsAttr("perm", perm));
  if (perm.size() != rank) {
    return absl::InvalidArgumentError("perm " + DimsToString(perm) + " does not fit " +
                                      x->DebugString());
  }
  std::set<int64_t> seen;
  for (int64_t& p : perm) {
    ASSIGN_OR_RETURN(p, NormalizeAxis(p, static_cast<int64_t>(rank)));
    if (!seen.insert(p).second) {
      return absl::InvalidArgumentError("perm " + DimsToString(perm) +
                                        " is not a permutation");
    }
  }
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * x->dim(d);
  std::vector<int64_t> dims(rank), strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = x->dim(perm[i]);
    strides[i] = in_strides[perm[i]];
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(x->dtype(), dims));
  RETURN_IF_ERROR(ForElementSize(ctx, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x->data<T>();
    T* po = out.mutable_data<T>();
    ForEachBroadcast<1>(dims, {strides},
                        [&](int64_t o, const std::array<int64_t, 1>& in) { po[o] = px[in[0]]; });
    return absl::OkStatus();
  }));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
