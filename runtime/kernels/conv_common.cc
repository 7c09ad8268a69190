#include "runtime/kernels/conv_common.h"

#include <string>

#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {

using ir::DType;

int64_t DimsProduct(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

void UnravelIndex(int64_t i, const std::vector<int64_t>& dims, std::vector<int64_t>& idx) {
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
}

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

absl::Status CheckConvBias(const RtTensor* b, int64_t channels) {
  if (b != nullptr && b->num_elements() != channels) {
    return absl::InvalidArgumentError("bias " + b->DebugString() + " needs " +
                                      std::to_string(channels) + " elements");
  }
  return absl::OkStatus();
}

absl::Status AddConvBias(const RtTensor* b, int64_t batch, int64_t channels,
                     int64_t plane, float* y) {
  if (b == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(CheckConvBias(b, channels));
  const float* pb = b->data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      float* p = y + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) p[i] += pb[c];
    }
  }
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
