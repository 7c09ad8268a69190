// Unique (opset 11): the distinct elements of the flattened input, or the
// distinct slices along `axis`, sorted (default) or in order of first
// occurrence, with the first-occurrence indices, the inverse indices and
// the counts. NaNs are equal to each other and sort last, as numpy's unique.
#include <cmath>
#include <map>
#include <vector>

#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

// Lexicographic order on slices, NaN after every number and equal to NaN.
template <typename T>
struct SliceLess {
  static bool Less(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return !std::isnan(a) && std::isnan(b);
    }
    return a < b;
  }
  bool operator()(const std::vector<T>& a, const std::vector<T>& b) const {
    for (size_t i = 0; i < a.size(); ++i) {
      if (Less(a[i], b[i])) return true;
      if (Less(b[i], a[i])) return false;
    }
    return false;
  }
};

template <typename T>
absl::Status UniqueTyped(KernelContext& ctx, const RtTensor& x, bool sorted, bool flat,
                         int64_t axis) {
  const std::vector<int64_t> dims = flat ? std::vector<int64_t>{x.num_elements()} : x.dims();
  const int64_t a = flat ? 0 : axis;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a; ++d) outer *= dims[d];
  for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t n = dims[a];
  const T* px = x.data<T>();
  auto slice = [&](int64_t j) {
    std::vector<T> s(outer * inner);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) s[o * inner + i] = px[(o * n + j) * inner + i];
    }
    return s;
  };
  // Ids in order of first occurrence.
  std::map<std::vector<T>, int64_t, SliceLess<T>> ids;
  std::vector<int64_t> first, counts, inverse(n);
  for (int64_t j = 0; j < n; ++j) {
    auto [it, fresh] = ids.emplace(slice(j), static_cast<int64_t>(first.size()));
    if (fresh) {
      first.push_back(j);
      counts.push_back(0);
    }
    ++counts[it->second];
    inverse[j] = it->second;
  }
  const int64_t u = static_cast<int64_t>(first.size());
  // Output position of each id: sorted order, or first occurrence.
  std::vector<int64_t> pos(u);
  int64_t rank = 0;
  for (const auto& [key, id] : ids) pos[id] = sorted ? rank++ : id;
  std::vector<int64_t> out_dims = dims;
  out_dims[a] = u;
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(x.dtype(), out_dims));
  ASSIGN_OR_RETURN(RtTensor indices, ctx.AllocateUninitialized(DType::kI64, {u}));
  ASSIGN_OR_RETURN(RtTensor inv, ctx.AllocateUninitialized(DType::kI64, {n}));
  ASSIGN_OR_RETURN(RtTensor cnt, ctx.AllocateUninitialized(DType::kI64, {u}));
  T* py = y.mutable_data<T>();
  for (int64_t id = 0; id < u; ++id) {
    const int64_t p = pos[id], j = first[id];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) py[(o * u + p) * inner + i] = px[(o * n + j) * inner + i];
    }
    indices.mutable_data<int64_t>()[p] = j;
    cnt.mutable_data<int64_t>()[p] = counts[id];
  }
  for (int64_t j = 0; j < n; ++j) inv.mutable_data<int64_t>()[j] = pos[inverse[j]];
  ctx.SetOutput(0, std::move(y));
  if (ctx.wants_output(1)) ctx.SetOutput(1, std::move(indices));
  if (ctx.wants_output(2)) ctx.SetOutput(2, std::move(inv));
  if (ctx.wants_output(3)) ctx.SetOutput(3, std::move(cnt));
  return absl::OkStatus();
}

}  // namespace

absl::Status Unique(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t sorted, ctx.IntAttr("sorted", 1));
  const bool flat = !ctx.HasAttr("axis");
  int64_t axis = 0;
  if (!flat) {
    ASSIGN_OR_RETURN(axis, ctx.IntAttr("axis", 0));
    ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, static_cast<int64_t>(x->rank())));
  }
  switch (x->dtype()) {
    case DType::kF32: return UniqueTyped<float>(ctx, *x, sorted != 0, flat, axis);
    case DType::kF64: return UniqueTyped<double>(ctx, *x, sorted != 0, flat, axis);
    case DType::kI64: return UniqueTyped<int64_t>(ctx, *x, sorted != 0, flat, axis);
    case DType::kI32: return UniqueTyped<int32_t>(ctx, *x, sorted != 0, flat, axis);
    case DType::kI8: return UniqueTyped<int8_t>(ctx, *x, sorted != 0, flat, axis);
    case DType::kU8: return UniqueTyped<uint8_t>(ctx, *x, sorted != 0, flat, axis);
    default: return UnsupportedDType(ctx, x->dtype(), "f32, f64, i64, i32, i8, u8");
  }
}

}  // namespace slimpack::runtime::kernels
