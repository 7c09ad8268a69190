// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12/13): the
// losses training graphs end in, which exported evaluation graphs keep.
//
// Both read class scores as [N, C, d1..dk] and targets as [N, d1..dk]:
//   loss[n, d] = -w[t] * x[n, t, d]   with t = target[n, d], w = 1 without
//                                     weights; 0 (and weight 0) where t is
//                                     ignore_index
// reduced by `reduction`: none (that shape), sum, or mean = sum(loss) /
// sum of the weights taken (the count of targets not ignored when there
// are no weights; NaN when every target is ignored, as ONNX's reference).
// SoftmaxCrossEntropyLoss takes x = LogSoftmax(scores, axis 1) and can also
// output it (`log_prob`). Sums are in double.
#include <cmath>
#include <optional>
#include <vector>

#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"
#include "support/portable_math.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

enum class Reduction { kNone, kSum, kMean };

struct LossArgs {
  Reduction reduction = Reduction::kMean;
  std::optional<int64_t> ignore_index;
  int64_t n = 0, c = 0, d = 0;  // scores viewed as [N, C, D]
};

absl::StatusOr<LossArgs> ReadArgs(const KernelContext& ctx, const RtTensor& x,
                                  const RtTensor& target, const RtTensor* weight) {
  LossArgs args;
  ASSIGN_OR_RETURN(std::string reduction, ctx.StringAttr("reduction", "mean"));
  if (reduction == "none") {
    args.reduction = Reduction::kNone;
  } else if (reduction == "sum") {
    args.reduction = Reduction::kSum;
  } else if (reduction != "mean") {
    return absl::InvalidArgumentError("reduction '" + reduction +
                                      "' is not one of none, sum, mean");
  }
  if (ctx.HasAttr("ignore_index")) {
    ASSIGN_OR_RETURN(int64_t ii, ctx.IntAttr("ignore_index", 0));
    args.ignore_index = ii;
  }
  if (x.rank() < 2) {
    return absl::InvalidArgumentError("scores " + x.DebugString() +
                                      " must be [N, C] or [N, C, d1, ...]");
  }
  // The target is the scores' shape without the class axis.
  std::vector<int64_t> want = x.dims();
  want.erase(want.begin() + 1);
  if (target.dims() != want) {
    return absl::InvalidArgumentError("target " + target.DebugString() + " does not match scores " +
                                      x.DebugString() + " (expected dims " +
                                      DimsToString(want) + ")");
  }
  if (target.dtype() != DType::kI64 && target.dtype() != DType::kI32) {
    return absl::InvalidArgumentError("target " + target.DebugString() + " must be i64 or i32");
  }
  args.n = x.dim(0);
  args.c = x.dim(1);
  args.d = args.n * args.c == 0 ? 0 : x.num_elements() / (args.n * args.c);
  if (weight != nullptr &&
      (weight->dtype() != x.dtype() || weight->dims() != std::vector<int64_t>{args.c})) {
    return absl::InvalidArgumentError("weight " + weight->DebugString() + " must be [" +
                                      std::to_string(args.c) + "] of the scores' dtype");
  }
  return args;
}

int64_t TargetAt(const RtTensor& target, int64_t i) {
  return target.dtype() == DType::kI64 ? target.data<int64_t>()[i] : target.data<int32_t>()[i];
}

// The loss over log-probabilities `logp` ([N, C, D] row-major).
template <typename T>
absl::Status NllTyped(KernelContext& ctx, const LossArgs& a, const T* logp,
                      const RtTensor& target, const RtTensor* weight,
                      const std::vector<int64_t>& target_dims) {
  const T* w = weight != nullptr ? weight->data<T>() : nullptr;
  const int64_t count = a.n * a.d;
  std::vector<double> loss(count);
  double total = 0, total_weight = 0;
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t d = 0; d < a.d; ++d) {
      const int64_t i = n * a.d + d;
      const int64_t t = TargetAt(target, i);
      if (a.ignore_index && t == *a.ignore_index) {
        loss[i] = 0;
        continue;
      }
      if (t < 0 || t >= a.c) {
        return absl::InvalidArgumentError(
            "target " + std::to_string(t) + " (element " + std::to_string(i) +
            ") is not a class in [0, " + std::to_string(a.c) + ")" +
            (a.ignore_index ? " nor ignore_index " + std::to_string(*a.ignore_index) : ""));
      }
      const double wt = w != nullptr ? static_cast<double>(w[t]) : 1.0;
      loss[i] = -wt * static_cast<double>(logp[(n * a.c + t) * a.d + d]);
      total += loss[i];
      total_weight += wt;
    }
  }
  if (a.reduction == Reduction::kNone) {
    ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DTypeOf<T>(), target_dims));
    for (int64_t i = 0; i < count; ++i) out.mutable_data<T>()[i] = static_cast<T>(loss[i]);
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DTypeOf<T>(), {}));
  out.mutable_data<T>()[0] =
      static_cast<T>(a.reduction == Reduction::kSum ? total : total / total_weight);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// log_softmax over axis 1 of [N, C, D].
template <typename T>
void LogSoftmaxAxis1(const LossArgs& a, const T* x, T* out) {
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t d = 0; d < a.d; ++d) {
      const T* px = x + n * a.c * a.d + d;
      T* po = out + n * a.c * a.d + d;
      double mx = -INFINITY;
      for (int64_t c = 0; c < a.c; ++c) mx = std::max(mx, static_cast<double>(px[c * a.d]));
      double sum = 0;
      for (int64_t c = 0; c < a.c; ++c) sum += pmath::Exp(static_cast<double>(px[c * a.d]) - mx);
      const double lse = mx + pmath::Log(sum);
      for (int64_t c = 0; c < a.c; ++c) {
        po[c * a.d] = static_cast<T>(static_cast<double>(px[c * a.d]) - lse);
      }
    }
  }
}

template <typename T>
absl::Status SceTyped(KernelContext& ctx, const LossArgs& a, const RtTensor& x,
                      const RtTensor& target, const RtTensor* weight) {
  ASSIGN_OR_RETURN(RtTensor logp, ctx.AllocateUninitialized(x.dtype(), x.dims()));
  LogSoftmaxAxis1(a, x.data<T>(), logp.mutable_data<T>());
  RETURN_IF_ERROR(NllTyped<T>(ctx, a, logp.data<T>(), target, weight, target.dims()));
  if (ctx.wants_output(1)) {
    ctx.SetOutput(1, std::move(logp));
  } else {
    ctx.Recycle(std::move(logp));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status NegativeLogLikelihoodLoss(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* target, ctx.RequiredInput(1));
  const RtTensor* weight = ctx.input(2);
  ASSIGN_OR_RETURN(LossArgs a, ReadArgs(ctx, *x, *target, weight));
  switch (x->dtype()) {
    case DType::kF32:
      return NllTyped<float>(ctx, a, x->data<float>(), *target, weight, target->dims());
    case DType::kF64:
      return NllTyped<double>(ctx, a, x->data<double>(), *target, weight, target->dims());
    default: return UnsupportedDType(ctx, x->dtype(), "f32, f64");
  }
}

absl::Status SoftmaxCrossEntropyLoss(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* target, ctx.RequiredInput(1));
  const RtTensor* weight = ctx.input(2);
  ASSIGN_OR_RETURN(LossArgs a, ReadArgs(ctx, *x, *target, weight));
  switch (x->dtype()) {
    case DType::kF32: return SceTyped<float>(ctx, a, *x, *target, weight);
    case DType::kF64: return SceTyped<double>(ctx, a, *x, *target, weight);
    default: return UnsupportedDType(ctx, x->dtype(), "f32, f64");
  }
}

}  // namespace slimpack::runtime::kernels
